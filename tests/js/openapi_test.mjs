// Real answers of roostd against doc/openapi.json (issue 34): every route is called, for a
// success and for errors (401, 403, 404, 405, 400 on a bound, 409, 415), against the real
// roostd this script starts (port 0, ready file; SQLite, or MariaDB when ROOST_TEST_MYSQL_URL is
// set), and each answer is validated with ajv (JSON Schema draft 2020-12, the dialect of
// OpenAPI 3.1): its status must be one the operation describes (or its default), its media type
// one that status describes, and a JSON body must match the schema. The document served at
// GET /api/v1/openapi.json must be the file, with an ETag that answers 304.
//
// Usage: ROOSTD=path/to/roostd node openapi_test.mjs
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createPrivateKey, generateKeyPairSync } from 'node:crypto';
import { SignJWT } from 'jose';
import { sign as githubSign } from '@octokit/webhooks-methods';
import Ajv2020 from 'ajv/dist/2020.js';
import { check, finish, pass, sleep } from './check.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const docPath = join(here, '..', '..', 'doc', 'openapi.json');
const doc = JSON.parse(readFileSync(docPath, 'utf8'));
const roostdBin = process.env.ROOSTD;
const mysqlBase = process.env.ROOST_TEST_MYSQL_URL || '';
const covered = new Set();

// ---- the validator ----

// OpenAPI 3.1 schemas are JSON Schema 2020-12 with a few annotations of their own (example,
// x-roost-*): not strict about unknown keywords; formats are annotations here too.
const ajv = new Ajv2020({ strict: false, validateFormats: false, allErrors: true });
const compiled = new Map();
function validatorFor(schema) {
  const key = JSON.stringify(schema);
  if (!compiled.has(key)) {
    // "#/components/..." references resolve against the root: give the root the components.
    compiled.set(key, ajv.compile({ ...schema, components: doc.components }));
  }
  return compiled.get(key);
}

// Checks one answer against the operation (method, path template) of the document.
function validate(method, tpl, res) {
  const what = `${method} ${tpl} -> ${res.status}`;
  const op = doc.paths[tpl]?.[method.toLowerCase()];
  if (!op) {
    check(false, `${what}: no such operation in the document`);
    return;
  }
  covered.add(`${method} ${tpl}`);
  const r = op.responses[String(res.status)] || op.responses.default;
  if (!r) {
    check(false, `${what}: status not described`);
    return;
  }
  const ct = (res.headers.get('content-type') || '').split(';')[0].trim();
  if (!r.content || method === 'HEAD' || res.status === 304) {
    check(res.body === '' || !r.content || method === 'HEAD', `${what}: a body where none is described`);
    pass();
    return;
  }
  const media = r.content[ct];
  if (!media) {
    check(false, `${what}: media type '${ct}' not described (${Object.keys(r.content)})`);
    return;
  }
  if (ct !== 'application/json') {
    check(typeof res.body === 'string', `${what}: a text body`);
    return;
  }
  let json;
  try {
    json = JSON.parse(res.body);
  } catch {
    check(false, `${what}: not JSON: ${res.body.slice(0, 200)}`);
    return;
  }
  const v = validatorFor(media.schema);
  if (!v(json)) {
    check(false, `${what}: ${ajv.errorsText(v.errors)}\n  body: ${res.body.slice(0, 400)}`);
    return;
  }
  pass();
}

// ---- roostd ----

function mysqlStore() {
  if (!mysqlBase) {
    return '';
  }
  const u = new URL(mysqlBase);
  const db = `roost_openapi_${process.pid}_${Date.now()}`;
  const r = spawnSync('mariadb', ['-h', u.hostname, '-P', u.port, '-u',
    decodeURIComponent(u.username), `-p${decodeURIComponent(u.password)}`, '-e',
    `CREATE DATABASE ${db}`], { encoding: 'utf8' });
  if (r.status !== 0) {
    throw new Error(`cannot create the test database: ${r.stderr}`);
  }
  u.pathname = `/${db}`;
  return u.toString();
}

async function startRoostd(dir) {
  const ready = join(dir, 'ready');
  const args = ['--data-dir', join(dir, 'data'), '--listen', '127.0.0.1:0', '--ready-file', ready,
    '--set', 'metrics.refresh_ms=100'];
  const store = mysqlStore();
  if (store) {
    args.push('--set', `store.url=${store}`);
  }
  const proc = spawn(roostdBin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (d) => {
    log += d;
  });
  const deadline = Date.now() + 30000;
  while (!(existsSync(ready) && readFileSync(ready, 'utf8').includes('\n'))) {
    if (Date.now() > deadline) {
      proc.kill('SIGKILL');
      throw new Error(`roostd did not get ready:\n${log}`);
    }
    await sleep(25);
  }
  const url = readFileSync(ready, 'utf8').split('\n')[0].trim();
  const key = createPrivateKey(readFileSync(join(dir, 'data', 'token_ed25519.pem')));
  return {
    url, proc, key,
    async stop() {
      const exited = new Promise((r) => proc.on('exit', r));
      proc.kill('SIGTERM');
      await Promise.race([exited, sleep(30000)]);
    },
  };
}

async function mint(d, scope) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ tenant: 't1', scope, sub: 'openapi-test' })
    .setProtectedHeader({ alg: 'EdDSA' }).setIssuedAt(now).setExpirationTime(now + 900)
    .sign(d.key);
}

// One call, validated against (method, tpl); returns {status, json, headers, body}.
async function call(d, method, tpl, path, { token, body, headers = {}, raw } = {}) {
  const h = { ...headers };
  if (token) {
    h.Authorization = `Bearer ${token}`;
  }
  let payload;
  if (raw !== undefined) {
    payload = raw;
  } else if (body !== undefined) {
    h['Content-Type'] = 'application/json';
    payload = JSON.stringify(body);
  }
  const res = await fetch(d.url + path, { method, headers: h, body: payload });
  const text = await res.text();
  const out = { status: res.status, headers: res.headers, body: text, json: null };
  try {
    out.json = text ? JSON.parse(text) : null;
  } catch {
    /* text answers */
  }
  validate(method, tpl, out);
  return out;
}

// ---- the calls ----

async function run(d) {
  const admin = await mint(d, 'tenant:admin');
  const agent = await mint(d, 'agent:a1:consume agent:a1:publish agent:a2:publish agent:a2:consume');
  const reader = await mint(d, 'agent:a9:read');
  const A = '/api/v1/agents/{agent}';

  // The document itself.
  const served = await call(d, 'GET', '/api/v1/openapi.json', '/api/v1/openapi.json');
  check(served.status === 200 && served.body === readFileSync(docPath, 'utf8'),
    'the served document is doc/openapi.json');
  const etag = served.headers.get('etag');
  check(!!etag, 'the document has an ETag');
  const again = await call(d, 'GET', '/api/v1/openapi.json', '/api/v1/openapi.json',
    { headers: { 'If-None-Match': etag } });
  check(again.status === 304 && again.body === '', 'If-None-Match answers 304 without a body');
  await call(d, 'HEAD', '/api/v1/openapi.json', '/api/v1/openapi.json');

  // Publish, read, peek, claim, extend, ack.
  const pub = await call(d, 'POST', '/api/v1/events', '/api/v1/events',
    { token: agent, body: { recipients: ['a1'], payload: { n: 1 }, idempotency_key: 'k1' } });
  check(pub.status === 201, `publish: ${pub.status}`);
  const dup = await call(d, 'POST', '/api/v1/events', '/api/v1/events',
    { token: agent, body: { recipients: ['a1'], payload: { n: 1 }, idempotency_key: 'k1' } });
  check(dup.status === 200, `duplicate publish: ${dup.status}`);
  await call(d, 'POST', '/api/v1/events', '/api/v1/events',
    { token: agent, body: { events: [{ recipients: ['a1'], payload: { n: 2 } },
      { recipients: ['a1', 'a2'], payload: { n: 3 }, priority: 5 }] } });
  await call(d, 'POST', '/api/v1/events', '/api/v1/events',
    { token: agent, body: { recipients: ['a1'], priority: 101 } });
  await call(d, 'POST', '/api/v1/events', '/api/v1/events',
    { token: agent, body: { recipients: ['a1'], colour: 'red' } });
  await call(d, 'POST', '/api/v1/events', '/api/v1/events',
    { token: agent, raw: '{"recipients":["a1"]}', headers: { 'Content-Type': 'text/plain' } });
  await call(d, 'POST', '/api/v1/events', '/api/v1/events', { body: { recipients: ['a1'] } });
  await call(d, 'POST', '/api/v1/events', '/api/v1/events',
    { token: reader, body: { recipients: ['a1'] } });

  await call(d, 'GET', `${A}/inbox`, '/api/v1/agents/a1/inbox?after_cursor=0&limit=10', { token: agent });
  await call(d, 'GET', `${A}/inbox`, '/api/v1/agents/a1/inbox?limit=0', { token: agent });
  await call(d, 'GET', `${A}/inbox`, '/api/v1/agents/a1/inbox?limit=1&limit=2', { token: agent });
  await call(d, 'GET', `${A}/inbox`, '/api/v1/agents/a1/inbox', { token: reader });
  await call(d, 'GET', `${A}/inbox/peek`, '/api/v1/agents/a1/inbox/peek', { token: agent });
  await call(d, 'GET', `${A}/inbox/peek`, '/api/v1/agents/a9/inbox/peek', { token: reader });
  await call(d, 'GET', `${A}/state`, '/api/v1/agents/a1/state', { token: agent });
  const claim = await call(d, 'POST', `${A}/inbox/claim`, '/api/v1/agents/a1/inbox/claim',
    { token: agent, body: { limit: 10, lease_s: 30, consumer: 'w1' } });
  check(claim.status === 200 && claim.json.events.length === 3, `claim: ${claim.body.slice(0, 200)}`);
  await call(d, 'POST', `${A}/inbox/claim`, '/api/v1/agents/a1/inbox/claim',
    { token: agent, body: { lease_s: 0 } });
  const [e1, e2, e3] = claim.json.events;
  const E = `${A}/inbox/{event}`;
  await call(d, 'POST', `${E}/extend`, `/api/v1/agents/a1/inbox/${e1.event_id}/extend`,
    { token: agent, body: { lease_token: e1.lease_token, lease_s: 60 } });
  await call(d, 'POST', `${E}/ack`, `/api/v1/agents/a1/inbox/${e1.event_id}/ack`,
    { token: agent, body: { lease_token: e2.lease_token } });
  await call(d, 'POST', `${E}/ack`, `/api/v1/agents/a1/inbox/${e1.event_id}/ack`,
    { token: agent, body: { lease_token: e1.lease_token } });
  await call(d, 'POST', `${E}/ack`, '/api/v1/agents/a1/inbox/evt_nope/ack',
    { token: agent, body: { lease_token: e1.lease_token } });
  await call(d, 'POST', `${A}/inbox/ack`, '/api/v1/agents/a1/inbox/ack',
    { token: agent, body: { acks: [{ event_id: e2.event_id, lease_token: e2.lease_token },
      { event_id: e1.event_id, lease_token: e2.lease_token }] } });
  const rel = await call(d, 'POST', `${E}/release`, `/api/v1/agents/a1/inbox/${e3.event_id}/release`,
    { token: agent, body: { lease_token: e3.lease_token, reason: 'poison', error: 'boom' } });
  check(rel.status === 200 && rel.json.status === 'quarantined', `release poison: ${rel.body}`);
  await call(d, 'POST', `${E}/release`, `/api/v1/agents/a1/inbox/${e3.event_id}/release`,
    { token: agent, body: { lease_token: e3.lease_token, reason: 'maybe' } });
  await call(d, 'POST', `${A}/inbox/release-all`, '/api/v1/agents/a1/inbox/release-all',
    { token: agent, body: { consumer: 'w1' } });
  await call(d, 'POST', `${A}/inbox/release-all`, '/api/v1/agents/a1/inbox/release-all',
    { token: agent });

  // Quarantine and the operator routes.
  const Q = '/api/v1/admin/quarantine';
  await call(d, 'GET', Q, `${Q}?agent_id=a1&limit=10`, { token: admin });
  await call(d, 'GET', Q, `${Q}?next=%21%21`, { token: admin });
  await call(d, 'GET', Q, Q, { token: agent });
  await call(d, 'GET', `${Q}/{event}`, `${Q}/${e3.event_id}`, { token: admin });
  await call(d, 'GET', `${Q}/{event}`, `${Q}/${e1.event_id}`, { token: admin });
  await call(d, 'POST', `${Q}/{event}/requeue`, `${Q}/${e3.event_id}/requeue`, { token: admin });
  const c2 = await call(d, 'POST', `${A}/inbox/claim`, '/api/v1/agents/a1/inbox/claim',
    { token: agent, body: { limit: 1 } });
  const e3b = c2.json.events[0];
  await call(d, 'POST', `${E}/release`, `/api/v1/agents/a1/inbox/${e3b.event_id}/release`,
    { token: agent, body: { lease_token: e3b.lease_token, reason: 'poison' } });
  await call(d, 'POST', `${Q}/requeue`, `${Q}/requeue`, { token: admin, body: { agent_id: 'a1', limit: 10 } });
  await call(d, 'POST', `${Q}/requeue`, `${Q}/requeue`, { token: admin, body: { limit: 100000 } });
  const c3 = await call(d, 'POST', `${A}/inbox/claim`, '/api/v1/agents/a1/inbox/claim',
    { token: agent, body: { limit: 1 } });
  const e3c = c3.json.events[0];
  await call(d, 'POST', `${E}/release`, `/api/v1/agents/a1/inbox/${e3c.event_id}/release`,
    { token: agent, body: { lease_token: e3c.lease_token, reason: 'poison' } });
  await call(d, 'POST', `${Q}/{event}/purge`, `${Q}/${e1.event_id}/purge`, { token: admin });
  await call(d, 'POST', `${Q}/{event}/purge`, `${Q}/${e3c.event_id}/purge`, { token: admin });
  await call(d, 'POST', `${Q}/purge`, `${Q}/purge`, { token: admin, body: { agent_id: 'a1' } });
  await call(d, 'POST', `${Q}/purge`, `${Q}/purge`, { token: admin });
  await call(d, 'GET', '/api/v1/admin/agents', '/api/v1/admin/agents?sort=depth&limit=5', { token: admin });
  await call(d, 'GET', '/api/v1/admin/agents', '/api/v1/admin/agents?sort=size', { token: admin });
  const ag = await call(d, 'GET', '/api/v1/admin/agents', '/api/v1/admin/agents?limit=1', { token: admin });
  check(typeof ag.json?.next === 'string' && ag.json.next.startsWith('p1.'), `a page token: ${ag.json?.next}`);
  // A token of the format before issue 34 (base64url of the agent id) is refused, clearly.
  const old = await call(d, 'GET', '/api/v1/admin/agents', '/api/v1/admin/agents?next=YTE', { token: admin });
  check(old.status === 400 && old.json.error.code === 'invalid_page_token', `an old token: ${old.body}`);
  if (ag.json?.next) {
    await call(d, 'GET', '/api/v1/admin/agents',
      `/api/v1/admin/agents?limit=1&next=${encodeURIComponent(ag.json.next)}`, { token: admin });
  }
  // What happened to event X: one event by id (any status), events by correlation id, and the
  // charts' history.
  const EV = '/api/v1/admin/events';
  await call(d, 'GET', `${EV}/{event}`, `${EV}/${e3b.event_id}`, { token: admin });
  await call(d, 'GET', `${EV}/{event}`, `${EV}/evt_nosuchevent`, { token: admin });
  await call(d, 'GET', EV, `${EV}?correlation_id=c1&limit=5`, { token: admin });
  await call(d, 'GET', EV, EV, { token: admin });
  await call(d, 'GET', '/api/v1/admin/history', '/api/v1/admin/history', { token: admin });
  let stats;
  for (let i = 0; i < 100; i++) {
    stats = await call(d, 'GET', '/api/v1/admin/stats', '/api/v1/admin/stats', { token: admin });
    if (stats.status === 200) {
      break;
    }
    await sleep(100);
  }
  check(stats.status === 200, `admin stats: ${stats.status}`);

  // Signing keys.
  const { publicKey } = generateKeyPairSync('ed25519');
  const pem = publicKey.export({ type: 'spki', format: 'pem' });
  const K = '/api/v1/admin/keys';
  const k = await call(d, 'POST', K, K, { token: admin,
    body: { key_id: 'k1', agent_id: 'a1', alg: 'ed25519', public_key: pem } });
  check(k.status === 201, `key add: ${k.status} ${k.body}`);
  await call(d, 'POST', K, K, { token: admin, body: { key_id: 'k1', agent_id: 'a1', alg: 'ed25519', public_key: pem } });
  await call(d, 'POST', K, K, { token: admin, body: { key_id: 'k2', agent_id: 'a1', alg: 'rot13', public_key: pem } });
  await call(d, 'GET', K, `${K}?limit=10`, { token: admin });
  await call(d, 'POST', `${K}/{key}/revoke`, `${K}/k1/revoke`, { token: admin });
  await call(d, 'POST', `${K}/{key}/revoke`, `${K}/nope/revoke`, { token: admin });
  await call(d, 'POST', `${K}/{key}/revoke`, `${K}/bad%20id/revoke`, { token: admin });
  await call(d, 'GET', '/api/v1/keys/server', '/api/v1/keys/server');

  // Webhooks (no HTTPS endpoint here: the registration's refusals, the listings, unknown ids).
  const CB = `${A}/callbacks`;
  await call(d, 'POST', CB, '/api/v1/agents/a1/callbacks', { token: agent, body: { url: 'http://127.0.0.1:1/hook' } });
  await call(d, 'POST', CB, '/api/v1/agents/a1/callbacks', { token: agent, body: { url: 'https://127.0.0.1:1/hook', secret: 'nope' } });
  await call(d, 'GET', CB, '/api/v1/agents/a1/callbacks', { token: agent });
  await call(d, 'DELETE', `${CB}/{key}`, '/api/v1/agents/a1/callbacks/ep_nope', { token: agent });
  const EP = '/api/v1/admin/endpoints';
  await call(d, 'GET', EP, `${EP}?limit=10`, { token: admin });
  await call(d, 'GET', EP, `${EP}?limit=101`, { token: admin });
  await call(d, 'GET', `${EP}/{key}`, `${EP}/ep_nope`, { token: admin });
  await call(d, 'POST', `${EP}/{key}/disable`, `${EP}/ep_nope/disable`, { token: admin });
  await call(d, 'POST', `${EP}/{key}/enable`, `${EP}/ep_nope/enable`, { token: admin });
  await call(d, 'GET', `${EP}/{key}/attempts`, `${EP}/ep_nope/attempts`, { token: admin });
  await call(d, 'GET', `${EP}/{key}/attempts`, `${EP}/ep_nope/attempts?after=wa_1&next=p1.eA`, { token: admin });
  await call(d, 'POST', `${EP}/{key}/replay`, `${EP}/ep_nope/replay`, { token: admin, body: { since: '2026-01-01T00:00:00Z' } });

  // Inbound webhook sources and a delivery: accepted, duplicate, refused (doc/INGEST.md).
  const S = '/api/v1/admin/sources';
  const src = await call(d, 'POST', S, S, { token: admin, body: { name: 'gh', scheme: 'github', agents: ['a1'] } });
  check(src.status === 201 && src.json.secret.length > 16, `source added: ${src.status}`);
  await call(d, 'POST', S, S, { token: admin, body: { name: 'x', scheme: 'nope', agents: ['a1'] } });
  await call(d, 'GET', S, `${S}?limit=10`, { token: admin });
  await call(d, 'GET', `${S}/{key}`, `${S}/${src.json.source_id}`, { token: admin });
  await call(d, 'GET', `${S}/{key}`, `${S}/src_nope`, { token: admin });
  const ghBody = JSON.stringify({ action: 'opened' });
  const ghSig = await githubSign(src.json.secret, ghBody);
  const ghHeaders = { 'X-GitHub-Delivery': 'd-1', 'X-GitHub-Event': 'issues', 'X-Hub-Signature-256': ghSig, 'Content-Type': 'application/json' };
  const ING = '/ingest/{key}';
  const acc = await call(d, 'POST', ING, `/ingest/${src.json.source_id}`, { headers: ghHeaders, raw: ghBody });
  check(acc.status === 200 && acc.json.duplicate === false, `ingest accepted: ${acc.status}`);
  const dupIng = await call(d, 'POST', ING, `/ingest/${src.json.source_id}`, { headers: ghHeaders, raw: ghBody });
  check(dupIng.status === 200 && dupIng.json.duplicate === true, `ingest duplicate: ${dupIng.status}`);
  const bad = await call(d, 'POST', ING, `/ingest/${src.json.source_id}`, { headers: ghHeaders, raw: '{"action":"closed"}' });
  check(bad.status === 401, `ingest refused: ${bad.status}`);
  await call(d, 'POST', ING, '/ingest/src_nope', { raw: '{}' });
  await call(d, 'GET', `${S}/{key}/receipts`, `${S}/${src.json.source_id}/receipts?limit=2`, { token: admin });
  await call(d, 'POST', `${S}/{key}/rotate`, `${S}/${src.json.source_id}/rotate`, { token: admin, body: { overlap_s: 60 } });
  await call(d, 'POST', `${S}/{key}/rotate`, `${S}/src_nope/rotate`, { token: admin });
  await call(d, 'DELETE', `${S}/{key}`, `${S}/${src.json.source_id}`, { token: admin });
  await call(d, 'DELETE', `${S}/{key}`, `${S}/${src.json.source_id}`, { token: admin });

  // The stream and its ticket.
  const t = await call(d, 'POST', `${A}/subscribe/ticket`, '/api/v1/agents/a1/subscribe/ticket', { token: agent });
  check(t.status === 201, `ticket: ${t.status}`);
  await call(d, 'POST', `${A}/subscribe/ticket`, '/api/v1/agents/a1/subscribe/ticket', { token: agent, body: { x: 1 } });
  const ac = new AbortController();
  const sres = await fetch(`${d.url}/api/v1/agents/a1/subscribe?ticket=${encodeURIComponent(t.json.ticket)}`,
    { signal: ac.signal });
  const reader2 = sres.body.getReader();
  let sse = '';
  while (!sse.includes('\n\nid: ') || !sse.endsWith('\n\n')) {
    const { value, done } = await reader2.read();
    if (done) {
      break;
    }
    sse += Buffer.from(value).toString('utf8');
  }
  ac.abort();
  validate('GET', `${A}/subscribe`, { status: sres.status, headers: sres.headers, body: '' });
  const grammar = /^retry: \d+\n\n(id: \d+\nevent: (inbox_updated|heartbeat)\ndata: \{"cursor_hint":\d+\}\n\n)+$/;
  check(grammar.test(sse), `the stream follows the documented grammar: ${JSON.stringify(sse)}`);
  const ev = doc.paths[`${A}/subscribe`].get.responses['200'].content['text/event-stream'].schema['x-roost-sse'].events;
  const data = JSON.parse(sse.split('data: ')[1].split('\n')[0]);
  const dv = validatorFor(ev.inbox_updated.data);
  check(dv(data), 'an inbox_updated event\'s data matches its schema');
  await call(d, 'GET', `${A}/subscribe`, '/api/v1/agents/a1/subscribe?ticket=rt1.bogus');
  await call(d, 'GET', `${A}/subscribe`, '/api/v1/agents/a1/subscribe?colour=red', { token: agent });

  // MCP.
  await call(d, 'POST', '/mcp', '/mcp', { token: agent, headers: { Accept: 'application/json, text/event-stream' },
    body: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } } });
  await call(d, 'POST', '/mcp', '/mcp', { token: agent, headers: { Accept: 'application/json, text/event-stream' },
    body: { jsonrpc: '2.0', method: 'notifications/initialized' } });
  await call(d, 'POST', '/mcp', '/mcp', { body: { jsonrpc: '2.0', id: 1, method: 'tools/list' } });

  // Operations and files.
  await call(d, 'GET', '/healthz', '/healthz');
  await call(d, 'HEAD', '/healthz', '/healthz');
  const h405 = await fetch(`${d.url}/healthz`, { method: 'POST' });
  check(h405.status === 405 && h405.headers.get('allow') === 'GET, HEAD', `POST /healthz: ${h405.status}`);
  await h405.text();
  await call(d, 'GET', '/readyz', '/readyz');
  await call(d, 'HEAD', '/readyz', '/readyz');
  await call(d, 'GET', '/metrics', '/metrics');
  await call(d, 'GET', '/sdk/{file}', '/sdk/roost.js');
  await call(d, 'HEAD', '/sdk/{file}', '/sdk/roost.js');
  await call(d, 'GET', '/sdk/{file}', '/sdk/nope.js');
  await call(d, 'GET', '/ui', '/ui');
  await call(d, 'HEAD', '/ui', '/ui');
  await call(d, 'GET', '/ui/{file}', '/ui/app.js');
  await call(d, 'HEAD', '/ui/{file}', '/ui/app.js');

  // Device login (RFC 8628), refresh-token rotation and the operator's device routes.
  const WK = '/.well-known/oauth-authorization-server';
  await call(d, 'GET', WK, WK);
  const form = { 'Content-Type': 'application/x-www-form-urlencoded' };
  const DA = '/oauth/device_authorization';
  const da = await call(d, 'POST', DA, DA, { headers: form,
    raw: new URLSearchParams({ client_id: 'a1', tenant: 't1', device_name: 'box' }).toString() });
  check(da.status === 200 && !!da.json.user_code, `device authorization: ${da.body}`);
  const daBad = await call(d, 'POST', DA, DA, { body: { client_id: 'a b' } });
  check(daBad.status === 400 && daBad.json.error === 'invalid_client', `bad client_id: ${daBad.body}`);
  const T = '/oauth/token';
  const tok = (fields) => call(d, 'POST', T, T, { headers: form, raw: new URLSearchParams(fields).toString() });
  const grant = { grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
    device_code: da.json.device_code, client_id: 'a1' };
  const pend = await tok(grant);
  check(pend.status === 400 && pend.json.error === 'authorization_pending', `pending: ${pend.body}`);
  const DV = '/api/v1/admin/devices';
  const dl = await call(d, 'GET', DV, `${DV}?user_code=${da.json.user_code}`, { token: admin });
  check(dl.status === 200 && dl.json.devices.length === 1, `device listed: ${dl.body}`);
  const ap = await call(d, 'POST', `${DV}/approve`, `${DV}/approve`,
    { token: admin, body: { user_code: da.json.user_code } });
  check(ap.status === 200 && ap.json.status === 'approved', `approve: ${ap.body}`);
  const ap2 = await call(d, 'POST', `${DV}/approve`, `${DV}/approve`,
    { token: admin, body: { user_code: da.json.user_code } });
  check(ap2.status === 409, `approve twice: ${ap2.body}`);
  const t1 = await tok(grant);
  check(t1.status === 200 && !!t1.json.refresh_token, `tokens: ${t1.body}`);
  const t2 = await tok({ grant_type: 'refresh_token', refresh_token: t1.json.refresh_token });
  check(t2.status === 200 && t2.json.refresh_token !== t1.json.refresh_token, `refresh: ${t2.body}`);
  const da2 = await call(d, 'POST', DA, DA, { body: { client_id: 'a2', tenant: 't1' } });
  const dn = await call(d, 'POST', `${DV}/deny`, `${DV}/deny`,
    { token: admin, body: { user_code: da2.json.user_code } });
  check(dn.status === 200 && dn.json.status === 'denied', `deny: ${dn.body}`);
  const dn404 = await call(d, 'POST', `${DV}/deny`, `${DV}/deny`,
    { token: admin, body: { user_code: 'BCDF-GHJK' } });
  check(dn404.status === 404, `deny unknown: ${dn404.body}`);
  const rv = await call(d, 'POST', `${DV}/{key}/revoke`, `${DV}/${t1.json.device_id}/revoke`,
    { token: admin });
  check(rv.status === 200 && rv.json.status === 'revoked', `revoke: ${rv.body}`);
  const t3 = await tok({ grant_type: 'refresh_token', refresh_token: t2.json.refresh_token });
  check(t3.status === 400 && t3.json.error === 'invalid_grant', `refresh after revoke: ${t3.body}`);
  const t415 = await call(d, 'POST', T, T, { headers: { 'Content-Type': 'text/plain' }, raw: 'x=1' });
  check(t415.status === 415, `text body: ${t415.body}`);

  // The router's own answers, on a described path: 405 (Allow) and an unknown agent id.
  // A 405 belongs to no operation: its body is the Error object, its Allow the path's methods.
  const m405 = await fetch(`${d.url}/api/v1/events`, { method: 'DELETE', headers: { Authorization: `Bearer ${agent}` } });
  const errV = validatorFor({ $ref: '#/components/schemas/Error' });
  const b405 = await m405.json();
  check(m405.status === 405 && m405.headers.get('allow') === 'POST' && errV(b405) &&
    b405.error.code === 'method_not_allowed', `405 with Allow and the Error object: ${JSON.stringify(b405)}`);
  const m404 = await fetch(`${d.url}/api/v1/nowhere`, { headers: { Authorization: `Bearer ${agent}` } });
  check(m404.status === 404 && errV(await m404.json()), '404 with the Error object');
  await call(d, 'GET', `${A}/state`, '/api/v1/agents/bad%20agent/state', { token: agent });
}

const dir = mkdtempSync(join(tmpdir(), 'roost-openapi-'));
const d = await startRoostd(dir);
try {
  await run(d);
} catch (e) {
  check(false, `run: ${e.stack}`);
} finally {
  await d.stop();
  rmSync(dir, { recursive: true, force: true });
}
// Every operation of the document was called (HEAD included where it is described).
for (const [tpl, item] of Object.entries(doc.paths)) {
  for (const m of ['get', 'post', 'delete', 'head']) {
    if (item[m]) {
      check(covered.has(`${m.toUpperCase()} ${tpl}`), `operation ${m.toUpperCase()} ${tpl} was called`);
    }
  }
}
finish();
