// SPDX-License-Identifier: MIT
// A stand-in identity provider for tests/integration/test_jwt_idp.c, built on the npm `jose`
// package as an independent implementation: generates Ed25519, P-256 (x2) and RSA-2048 key pairs
// and an HS256 secret, writes two JWK Sets (before and after a key rotation) and the secret file,
// and mints tokens with tenant + scope, iss and aud. Usage: node jwt_idp.mjs OUTDIR
// Exit 0 on success; anything else (jose missing included) makes the C test fail.
import * as jose from 'jose';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';

const out = process.argv[2];
if (!out) {
  console.error('usage: node jwt_idp.mjs OUTDIR');
  process.exit(2);
}
const ISS = 'https://idp.example';
const AUD = 'roost-api';
const AUD2 = 'roost-api-2';
const SCOPE = 'agent:*:consume agent:*:publish agent:*:read';

async function pair(alg, kid, opts = {}) {
  const { publicKey, privateKey } = await jose.generateKeyPair(alg, { extractable: true, ...opts });
  const jwk = await jose.exportJWK(publicKey);
  return { alg, kid, privateKey, jwk: { ...jwk, kid, alg, use: 'sig' } };
}

const ed = await pair('EdDSA', 'ed-1', { crv: 'Ed25519' });
const es = await pair('ES256', 'es-1');
const rs = await pair('RS256', 'rs-1', { modulusLength: 2048 });
const es2 = await pair('ES256', 'es-2');
// 43 base64url characters = 32 random bytes of entropy, well over HS256's 32-byte minimum length.
const secretText = crypto.randomBytes(32).toString('base64url');
const secret = new TextEncoder().encode(secretText);

async function mint(key, { tenant = 't1', iss = ISS, aud = AUD, kid = true, exp = '10m' } = {}) {
  const header = { alg: key.alg, typ: 'JWT' };
  if (kid && key.kid) header.kid = key.kid;
  let jwt = new jose.SignJWT({ tenant, scope: SCOPE, sub: `idp-${key.alg}` })
    .setProtectedHeader(header)
    .setIssuedAt()
    .setExpirationTime(exp);
  if (iss) jwt = jwt.setIssuer(iss);
  if (aud) jwt = jwt.setAudience(aud);
  return jwt.sign(key.privateKey);
}
const hs = { alg: 'HS256', kid: null, privateKey: secret };
const otherHs = { alg: 'HS256', kid: null, privateKey: new TextEncoder().encode('x'.repeat(43)) };

const tokens = {
  ed_t1: await mint(ed),
  es_t1: await mint(es),
  rs_t1: await mint(rs),
  hs_t1: await mint(hs),
  es_t2: await mint(es, { tenant: 't2' }),
  rs_t2: await mint(rs, { tenant: 't2' }),
  es_nokid_t1: await mint(es, { kid: false }),
  es_wrong_iss: await mint(es, { iss: 'https://evil.example' }),
  rs_wrong_aud: await mint(rs, { aud: 'someone-else' }),
  hs_wrong_aud: await mint(hs, { aud: 'someone-else' }),
  ed_no_iss: await mint(ed, { iss: null }),
  hs_other_secret: await mint(otherHs),
  es_expired: await mint(es, { exp: Math.floor(Date.now() / 1000) - 3600 }),
  es2_t1: await mint(es2),
  es2_aud2: await mint(es2, { aud: AUD2 }),
  ed_aud2: await mint(ed, { aud: AUD2 }),
  aud_array: await mint(es, { aud: ['other', AUD] }),
};

// The same claims jose verifies: a self-check that the material is what the C test expects.
const set1 = { keys: [ed.jwk, es.jwk, rs.jwk] };
const set2 = { keys: [ed.jwk, es2.jwk] }; // es-1 and rs-1 removed, es-2 added
const jwks1 = jose.createLocalJWKSet(set1);
for (const name of ['ed_t1', 'es_t1', 'rs_t1', 'es_t2']) {
  await jose.jwtVerify(tokens[name], jwks1, { issuer: ISS, audience: AUD });
}
await jose.jwtVerify(tokens.hs_t1, secret, { issuer: ISS, audience: AUD });

fs.mkdirSync(out, { recursive: true });
fs.writeFileSync(path.join(out, 'jwks1.json'), JSON.stringify(set1));
fs.writeFileSync(path.join(out, 'jwks2.json'), JSON.stringify(set2));
fs.writeFileSync(path.join(out, 'hs256.secret'), secretText + '\n', { mode: 0o600 });
fs.writeFileSync(path.join(out, 'tokens.json'), JSON.stringify({ iss: ISS, aud: AUD, aud2: AUD2, ...tokens }));
console.log(`jwt_idp: ${Object.keys(tokens).length} tokens, keys ${set1.keys.length}+${set2.keys.length} in ${out}`);
