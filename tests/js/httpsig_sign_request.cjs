#!/usr/bin/env node
// Signs one request for roostd with the npm http-message-signatures package (an independent
// RFC 9421 implementation), driven by tests/integration/test_signatures.c. One JSON request on
// stdin, one JSON answer on stdout:
//   {"alg","keyid","keyFile" (PEM private key) | "secretB64" (hmac-sha256),"fields":[…],
//    "created","expires","nonce","message":{"method","url","headers":{…}}}
//   -> {"signatureInput":"sig1=(…);…","signature":"sig1=:…:"}
'use strict';
const fs = require('fs');
const crypto = require('crypto');
const { httpbis, createSigner } = require('http-message-signatures');

(async () => {
  const j = JSON.parse(fs.readFileSync(0, 'utf8'));
  const key = j.alg === 'hmac-sha256'
    ? Buffer.from(j.secretB64, 'base64')
    : crypto.createPrivateKey(fs.readFileSync(j.keyFile));
  const out = await httpbis.signMessage({
    key: createSigner(key, j.alg, j.keyid),
    name: 'sig1',
    fields: j.fields,
    params: ['created', 'expires', 'nonce', 'keyid'],
    paramValues: { created: new Date(j.created * 1000), expires: new Date(j.expires * 1000),
      nonce: j.nonce, keyid: j.keyid },
  }, j.message);
  process.stdout.write(JSON.stringify({ signatureInput: out.headers['Signature-Input'],
    signature: out.headers.Signature }) + '\n');
})().catch((e) => { process.stderr.write(`${e.stack}\n`); process.exit(1); });
