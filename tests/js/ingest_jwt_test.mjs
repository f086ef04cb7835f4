// SPDX-License-Identifier: MIT
// The jwt ingest scheme (A2A push notifications) against a real roostd (issue 31):
//   node ingest_jwt_test.mjs URL ADMIN_TOKEN CERT KEY
// Tokens are signed by the npm `jose` package; the sender's JWK Set is served over HTTPS (CERT and
// KEY, from the test CA roostd trusts through webhooks.ca_file) or given inline as the source's
// secret. A valid push is accepted once (its jti the delivery id, a retry a duplicate); a wrong
// key, expired, future iat, wrong aud or iss, alg none, HS256 keyed with the public key, missing
// jti and unknown kid are refused (401) with nothing written and a receipt saying why; a kid
// unknown to the cached set makes roostd fetch the set again (bounded: a flood of unknown kids is
// not a flood of fetches), which is how a sender's key rotation is picked up.
// Ends with "N passed, N failed".
import * as jose from 'jose';
import fs from 'node:fs';
import https from 'node:https';

const [url, token, certFile, keyFile] = process.argv.slice(2);
const patience = Number(process.env.ROOST_TEST_PATIENCE || 1);
let passed = 0;
let failed = 0;
function check(ok, what) {
  if (ok) {
    passed++;
  } else {
    failed++;
    console.error(`CHECK failed: ${what}`);
  }
}

async function api(method, path, body) {
  const res = await fetch(url + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

async function push(source, jwt, body) {
  const res = await fetch(`${url}/ingest/${source}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', ...(jwt ? { Authorization: `Bearer ${jwt}` } : {}) },
    body,
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch { /* not JSON */ }
  return { status: res.status, json };
}

const inbox = async (agent) => (await api('GET', `/api/v1/agents/${agent}/inbox?limit=1000`)).json?.events ?? [];
const receipts = async (id) => (await api('GET', `/api/v1/admin/sources/${id}/receipts?limit=100`)).json?.receipts ?? [];

const ISS = 'https://a2a-server.example';
const AUD = 'https://roost.example/ingest';
async function pair(alg, kid, opts = {}) {
  const { publicKey, privateKey } = await jose.generateKeyPair(alg, { extractable: true, ...opts });
  return { alg, kid, privateKey, publicKey, jwk: { ...(await jose.exportJWK(publicKey)), kid, alg, use: 'sig' } };
}
const k1 = await pair('ES256', 'k1');
const k2 = await pair('ES256', 'k2'); // not published until the rotation
const stranger = await pair('ES256', 'k1'); // claims kid k1 but is not the sender's key
const rs = await pair('RS256', 'rs1', { modulusLength: 2048 });

const now = () => Math.floor(Date.now() / 1000);
let n = 0;
async function mint(key, { iss = ISS, aud = AUD, jti = `jti-${++n}`, iat = now(), exp = now() + 300, kid = key.kid } = {}) {
  const claims = jti === null ? {} : { jti };
  const jwt = new jose.SignJWT(claims).setProtectedHeader({ alg: key.alg, typ: 'JWT', ...(kid ? { kid } : {}) })
    .setIssuer(iss).setAudience(aud).setIssuedAt(iat).setExpirationTime(exp);
  return jwt.sign(key.privateKey);
}

// The sender's JWK Set over HTTPS; it counts its fetches.
let published = [k1.jwk, rs.jwk];
let fetches = 0;
const server = https.createServer({ cert: fs.readFileSync(certFile), key: fs.readFileSync(keyFile) }, (req, res) => {
  fetches++;
  res.writeHead(200, { 'Content-Type': 'application/jwk-set+json' });
  res.end(JSON.stringify({ keys: published }));
});
await new Promise((ok) => server.listen(0, '127.0.0.1', ok));
const jwksUrl = `https://127.0.0.1:${server.address().port}/.well-known/jwks.json`;

const options = { issuer: ISS, audience: AUD };
const byUrl = await api('POST', '/api/v1/admin/sources',
  { name: 'a2a-url', scheme: 'jwt', agents: ['a2a-agent'], options: { ...options, jwks_url: jwksUrl } });
check(byUrl.status === 201, `a jwt source with jwks_url is added: ${byUrl.status} ${JSON.stringify(byUrl.json)}`);
const inline = await api('POST', '/api/v1/admin/sources',
  { name: 'a2a-inline', scheme: 'jwt', agents: ['a2a-agent'], options, secret: JSON.stringify({ keys: [k1.jwk] }) });
check(inline.status === 201, `a jwt source with an inline JWK Set is added: ${inline.status} ${JSON.stringify(inline.json)}`);
const noKeys = await api('POST', '/api/v1/admin/sources', { name: 'a2a-none', scheme: 'jwt', agents: ['a'], options });
check(noKeys.status === 400, `a jwt source with neither a JWK Set nor jwks_url is refused: ${noKeys.status}`);
const noAud = await api('POST', '/api/v1/admin/sources',
  { name: 'a2a-noaud', scheme: 'jwt', agents: ['a'], options: { issuer: ISS, jwks_url: jwksUrl } });
check(noAud.status === 400, `a jwt source without an audience is refused: ${noAud.status}`);

const task = JSON.stringify({ kind: 'task', id: 'task-1', contextId: 'ctx-1', status: { state: 'completed' } });

for (const src of [byUrl.json, inline.json]) {
  const name = src.name;
  const id = src.source_id;
  const before = (await inbox('a2a-agent')).length;
  const jwt = await mint(k1);
  const r1 = await push(id, jwt, task);
  check(r1.status === 200 && r1.json.duplicate === false && r1.json.events.length === 1,
    `${name}: a push signed by jose is accepted: ${r1.status} ${JSON.stringify(r1.json)}`);
  const r2 = await push(id, jwt, task);
  check(r2.status === 200 && r2.json.duplicate === true, `${name}: its retry is a duplicate: ${r2.status} ${JSON.stringify(r2.json)}`);
  const after = await inbox('a2a-agent');
  check(after.length === before + 1, `${name}: exactly one event (${before} → ${after.length})`);
  const ev = after.find((e) => e.payload.source_id === id);
  check(ev && ev.payload.delivery_id === `jti-${n}` && ev.payload.scheme === 'jwt' && ev.payload.body.id === 'task-1',
    `${name}: the event carries the jti as delivery id and the task: ${JSON.stringify(ev?.payload)}`);

  // HS256 keyed with the RSA public key (its PEM, the classic confusion) under the RSA kid.
  const pem = await jose.exportSPKI(rs.publicKey);
  const hsConfused = await new jose.SignJWT({ jti: `conf-${name}` }).setProtectedHeader({ alg: 'HS256', kid: 'rs1' })
    .setIssuer(ISS).setAudience(AUD).setIssuedAt().setExpirationTime('5m').sign(new TextEncoder().encode(pem));
  const unsecured = new jose.UnsecuredJWT({ jti: `none-${name}` }).setIssuer(ISS).setAudience(AUD)
    .setIssuedAt().setExpirationTime('5m').encode();
  const bad = {
    'no Authorization': null,
    'a wrong key': await mint(stranger),
    expired: await mint(k1, { iat: now() - 7200, exp: now() - 3600 }),
    'iat in the future': await mint(k1, { iat: now() + 3600, exp: now() + 7200 }),
    'a wrong aud': await mint(k1, { aud: 'https://someone-else.example' }),
    'a wrong iss': await mint(k1, { iss: 'https://evil.example' }),
    'alg none': unsecured,
    'alg none with a kid': `${Buffer.from(JSON.stringify({ alg: 'none', kid: 'k1' })).toString('base64url')}.${unsecured.split('.')[1]}.`,
    'HS256 keyed with the public key': hsConfused,
    'no jti': await mint(k1, { jti: null }),
    'an unknown kid': await mint(k2),
    'a body-less token (truncated)': jwt.slice(0, jwt.lastIndexOf('.')),
  };
  const was = (await inbox('a2a-agent')).length;
  for (const [what, t] of Object.entries(bad)) {
    const r = await push(id, t, task.replace('task-1', `task-bad-${what}`));
    check(r.status === 401 && r.json?.error?.code === 'delivery_refused', `${name}: ${what} is refused (401): ${r.status} ${JSON.stringify(r.json)}`);
  }
  check((await inbox('a2a-agent')).length === was, `${name}: nothing written by the refused pushes`);
  const rc = await receipts(id);
  const refused = rc.filter((x) => x.outcome === 'refused');
  check(refused.length >= Object.keys(bad).length, `${name}: every refusal has a receipt (${refused.length})`);
  for (const reason of ['jwt_expired', 'jwt_not_yet_valid', 'jwt_issuer_or_audience', 'jwt_alg_refused', 'delivery_id_missing', 'jwt_kid_unknown', 'signature_mismatch']) {
    check(refused.some((x) => x.reason === reason), `${name}: a receipt says ${reason}: ${JSON.stringify(refused.map((x) => x.reason))}`);
  }
}

// The key set is fetched once and cached; a flood of unknown kids is not a flood of fetches.
const fetchesBefore = fetches;
for (let i = 0; i < 10; i++) await push(byUrl.json.source_id, await mint(k2), task);
check(fetches - fetchesBefore <= 1, `10 unknown kids made at most one fetch (${fetches - fetchesBefore})`);
// The sender rotates: k2 published. A push under k2 is accepted once roostd may ask again.
published = [k1.jwk, k2.jwk];
let rotated = null;
const deadline = Date.now() + 60000 * patience;
while (Date.now() < deadline) {
  rotated = await push(byUrl.json.source_id, await mint(k2), task);
  if (rotated.status === 200) break;
  await new Promise((ok) => setTimeout(ok, 1000));
}
check(rotated?.status === 200, `after the sender's rotation a push under the new kid is accepted: ${rotated?.status}`);
check(fetches - fetchesBefore <= 3, `and the set was fetched a bounded number of times (${fetches - fetchesBefore})`);

server.close();
console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
