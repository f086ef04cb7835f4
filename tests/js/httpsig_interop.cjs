#!/usr/bin/env node
// Independent RFC 9421 implementation (npm http-message-signatures) driven by
// tests/interop/test_httpsig_interop.c: one JSON request on stdin, one JSON answer on stdout.
//   {"op":"sign","alg":…,"keyid":…,"keysDir":…,"label":…,"fields":[…],"params":[…],
//    "created":…,"expires":…,"nonce":…,"message":{"method","url","headers":{…}}}
//     -> {"signatureInput":…,"signature":…,"base":…}
//   {"op":"verify", same keys, "message" with Signature and Signature-Input}
//     -> {"verified":true|false|null,"error":…}   (the package returns null when it cannot check)
// rsa-pss-sha512 uses a 64-byte salt both ways (RFC 9421 §3.3.1; the package would use the maximum).
'use strict';
const fs = require('fs');
const path = require('path');
const crypto = require('crypto');
const { httpbis, createSigner, createVerifier } = require('http-message-signatures');

const keyFile = (j, kind) => fs.readFileSync(path.join(j.keysDir, `${j.keyid}.${kind}.pem`));
const secret = (j) => Buffer.from(fs.readFileSync(path.join(j.keysDir, 'test-shared-secret.b64'), 'utf8').trim(), 'base64');

function signer(j) {
  if (j.alg === 'hmac-sha256') return createSigner(secret(j), j.alg, j.keyid);
  const key = crypto.createPrivateKey(keyFile(j, 'priv'));
  if (j.alg === 'rsa-pss-sha512') {
    return { id: j.keyid, alg: j.alg, sign: async (d) => crypto.sign('sha512', d,
      { key, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 64 }) };
  }
  return createSigner(key, j.alg, j.keyid);
}

function verifier(j) {
  if (j.alg === 'hmac-sha256') return createVerifier(secret(j), j.alg);
  const pem = keyFile(j, 'pub').toString();
  const key = pem.includes('BEGIN RSA PUBLIC KEY')
    ? crypto.createPublicKey({ key: pem, format: 'pem', type: 'pkcs1' }) : crypto.createPublicKey(pem);
  if (j.alg === 'rsa-pss-sha512') {
    return async (d, s) => crypto.verify('sha512', d,
      { key, padding: crypto.constants.RSA_PKCS1_PSS_PADDING, saltLength: 64 }, s);
  }
  return createVerifier(key, j.alg);
}

(async () => {
  const j = JSON.parse(fs.readFileSync(0, 'utf8'));
  if (j.op === 'sign') {
    let base = null;
    const k = signer(j);
    const inner = k.sign;
    k.sign = async (d) => { base = d.toString(); return inner(d); };
    const out = await httpbis.signMessage({
      key: k, name: j.label, fields: j.fields, params: j.params,
      paramValues: { created: new Date(j.created * 1000), expires: new Date(j.expires * 1000),
        nonce: j.nonce, keyid: j.keyid, alg: j.alg },
    }, j.message);
    process.stdout.write(JSON.stringify({ signature: out.headers.Signature,
      signatureInput: out.headers['Signature-Input'], base }) + '\n');
  } else if (j.op === 'verify') {
    try {
      const v = await httpbis.verifyMessage({
        keyLookup: async (p) => (p.keyid === j.keyid ? { id: j.keyid, algs: [j.alg], verify: verifier(j) } : null),
        requiredFields: j.fields || [], requiredParams: j.params || [],
      }, j.message);
      process.stdout.write(JSON.stringify({ verified: v }) + '\n');
    } catch (e) {
      process.stdout.write(JSON.stringify({ verified: false, error: `${e.constructor.name}: ${e.message}` }) + '\n');
    }
  } else {
    process.stderr.write('op must be sign or verify\n');
    process.exit(2);
  }
})().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
