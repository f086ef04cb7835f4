// SPDX-License-Identifier: MIT
// Roost over the Model Context Protocol (issue 28), with the official MCP TypeScript SDK
// (@modelcontextprotocol/sdk) as the client: over stdio (StdioClientTransport spawning
// `roost mcp`) and over Streamable HTTP (roostd's /mcp), against the real roostd this script
// starts (port 0, ready file; on MariaDB when ROOST_TEST_MYSQL_URL is set: a database of its own).
// `node mcp_test.mjs SCENARIO` with SCENARIO one of
//   tools    tool listing (every schema compiled by ajv), every tool through both transports,
//            error mapping, claim's wait_s woken by a publish, the subscribed inbox resource
//            notified after a publish from elsewhere
//   leases   claim with lease_s=2, no call for 6 s, the ack succeeds and the event is completed
//            once (attempts 1)
//   kill     the MCP client killed with work claimed: claimable again at once; `kill -9` of
//            roost mcp: claimable only after the lease
//   restart  roostd restarted under a live stdio session and between HTTP calls: the next tool
//            call works
//   statedir --state-dir: a crashed session's leases released by the next one at start, an
//            event recorded as acked is acked again and never handed out, one session per dir
//   signed   under signatures.require=all: roost mcp --key-file/--key-id works, unsigned it gets
//            signature_missing as a tool error, an unsigned POST /mcp is 401
//   scopes   a token limited to one agent cannot claim another's work through either transport
//   hostile  malformed, huge, deep, wrong-typed, unknown-method and batch messages on stdin and
//            on /mcp: JSON-RPC errors, the server still answers, stdin EOF ends it with 0
// Env: ROOSTD, ROOST (binaries), ROOST_TEST_MYSQL_URL (optional). Ends with "N passed, N failed".
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrivateKey } from 'node:crypto';
import { SignJWT } from 'jose';
import Ajv from 'ajv';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { check, fail, finish, patience, sleep, waitUntil } from './check.mjs';

const scenario = process.argv[2];
const roostdBin = process.env.ROOSTD;
const roostBin = process.env.ROOST;
const mysqlBase = process.env.ROOST_TEST_MYSQL_URL || '';

// ---- roostd ----

/** A database of its own on the fixture's MariaDB: the store URL, or '' on SQLite. */
function mysqlStore() {
  if (!mysqlBase) {
    return '';
  }
  const u = new URL(mysqlBase);
  const db = `roost_mcp_${process.pid}_${scenario}`;
  const r = spawnSync('mariadb', ['-h', u.hostname, '-P', u.port, '-u',
    decodeURIComponent(u.username), `-p${decodeURIComponent(u.password)}`, '-e',
    `DROP DATABASE IF EXISTS ${db}; CREATE DATABASE ${db} CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`],
  { encoding: 'utf8' });
  if (r.status !== 0) {
    throw new Error(`cannot create the test database: ${r.stderr}`);
  }
  u.pathname = `/${db}`;
  return u.toString();
}

async function startRoostd(dir, listen = '127.0.0.1:0', storeUrl = '', sets = []) {
  const ready = join(dir, 'ready');
  rmSync(ready, { force: true });
  const args = ['--data-dir', join(dir, 'data'), '--listen', listen, '--ready-file', ready];
  if (storeUrl) {
    args.push('--set', `store.url=${storeUrl}`);
  }
  for (const x of sets) {
    args.push('--set', x);
  }
  const proc = spawn(roostdBin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (d) => {
    log += d;
  });
  const ok = await waitUntil(() => existsSync(ready) && readFileSync(ready, 'utf8').includes('\n'),
    30000);
  if (!ok) {
    proc.kill('SIGKILL');
    throw new Error(`roostd did not get ready:\n${log}`);
  }
  const url = readFileSync(ready, 'utf8').split('\n')[0].trim();
  const key = createPrivateKey(readFileSync(join(dir, 'data', 'token_ed25519.pem')));
  return {
    url, proc, key, storeUrl,
    async stop() {
      const exited = new Promise((r) => proc.on('exit', (code) => r(code)));
      proc.kill('SIGTERM');
      return Promise.race([exited, sleep(30000).then(() => 'timeout')]);
    },
  };
}

async function mint(d, scope, ttlS = 900) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ tenant: 't1', scope, sub: 'mcp-test' })
    .setProtectedHeader({ alg: 'EdDSA' }).setIssuedAt(now).setExpirationTime(now + ttlS)
    .sign(d.key);
}

async function api(d, method, path, token, body) {
  const res = await fetch(d.url + path, {
    method,
    headers: { Authorization: `Bearer ${token}`,
      ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

async function publishRest(d, token, agent, payload = {}) {
  const r = await api(d, 'POST', '/api/v1/events', token, { recipients: [agent], payload });
  check(r.status === 201, `REST publish to ${agent}: ${r.status}`);
  return r.json.events[0].event_id;
}

async function readEvent(d, token, agent, eventId) {
  const r = await api(d, 'GET', `/api/v1/agents/${agent}/inbox?after_cursor=0&limit=1000`, token);
  return r.json.events.find((e) => e.event_id === eventId);
}

// ---- MCP clients ----

async function stdioClient(d, token, agent, extra = []) {
  const transport = new StdioClientTransport({
    command: roostBin, args: ['mcp', '--agent', agent, '--server', d.url, ...extra],
    env: { ...process.env, ROOST_TOKEN: token }, stderr: 'pipe',
  });
  let log = '';
  transport.stderr.on('data', (b) => {
    log += b;
  });
  const client = new Client({ name: 'roost-mcp-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport, log: () => log, kind: 'stdio', agentArg: () => ({}) };
}

async function httpClient(d, token, agent) {
  const transport = new StreamableHTTPClientTransport(new URL(`${d.url}/mcp`), {
    requestInit: { headers: { Authorization: `Bearer ${token}` } },
  });
  const client = new Client({ name: 'roost-mcp-test', version: '1.0.0' });
  await client.connect(transport);
  return { client, transport, log: () => '', kind: 'http', agentArg: () => ({ agent }) };
}

async function call(m, name, args = {}) {
  const agent = name === 'publish' ? {} : m.agentArg();
  return m.client.callTool({ name, arguments: { ...agent, ...args } });
}

// ---- scenarios ----

async function tools(d, admin) {
  const ajv = new Ajv({ strict: false });
  for (const kind of ['stdio', 'http']) {
    const agent = `tools-${kind}`;
    const token = await mint(d, 'agent:*:consume agent:*:publish');
    const m = kind === 'stdio' ? await stdioClient(d, token, agent) : await httpClient(d, token, agent);
    const { tools: list } = await m.client.listTools();
    const names = list.map((t) => t.name).sort();
    check(JSON.stringify(names) === JSON.stringify(['ack', 'claim', 'extend', 'get_state', 'publish',
      'read_inbox', 'release']), `${kind}: the tools: ${names}`);
    for (const t of list) {
      let ok = true;
      try {
        ajv.compile(t.inputSchema);
        ajv.compile(t.outputSchema);
      } catch (e) {
        ok = false;
        console.error(e);
      }
      check(ok && t.inputSchema.type === 'object' && t.outputSchema.type === 'object',
        `${kind}: ${t.name}'s schemas compile`);
      check(typeof t.description === 'string' && t.description.length > 80,
        `${kind}: ${t.name} has a description for a model`);
      check((kind === 'http' && t.name !== 'publish') ===
        (t.inputSchema.required || []).includes('agent'), `${kind}: ${t.name}'s agent argument`);
    }
    // publish (with an idempotency key: the repeat is a duplicate), read_inbox.
    let r = await call(m, 'publish', { recipients: [agent], payload: { task: 'one' },
      idempotency_key: 'k1', correlation_id: 'c1' });
    check(!r.isError && r.structuredContent.events.length === 1, `${kind}: publish`);
    const id1 = r.structuredContent.events[0].event_id;
    check(r.content[0].type === 'text' && JSON.parse(r.content[0].text).events[0].event_id === id1,
      `${kind}: the text copy of structuredContent`);
    r = await call(m, 'publish', { recipients: [agent], payload: { task: 'one' },
      idempotency_key: 'k1' });
    check(!r.isError && r.structuredContent.events[0].event_id === id1 &&
      r.structuredContent.events[0].duplicate === true, `${kind}: publish repeat is a duplicate`);
    r = await call(m, 'read_inbox', { after_cursor: 0 });
    check(!r.isError && r.structuredContent.events.some((e) => e.event_id === id1 &&
      e.payload.task === 'one') && r.structuredContent.head >= 1, `${kind}: read_inbox`);
    // claim, extend, release, claim again, ack (twice: idempotent).
    r = await call(m, 'claim', { lease_s: 30 });
    const ev = r.structuredContent.events[0];
    check(!r.isError && ev && ev.event_id === id1 && ev.lease_token && ev.attempts === 1,
      `${kind}: claim`);
    r = await call(m, 'extend', { event_id: id1, lease_token: ev.lease_token, lease_s: 90 });
    check(!r.isError && typeof r.structuredContent.claim_expires_at === 'string', `${kind}: extend`);
    r = await call(m, 'release', { event_id: id1, lease_token: ev.lease_token, reason: 'transient',
      error: 'not now' });
    check(!r.isError && r.structuredContent.status === 'released', `${kind}: release`);
    r = await call(m, 'claim', { lease_s: 30 });
    const ev2 = r.structuredContent.events[0];
    check(ev2 && ev2.event_id === id1 && ev2.attempts === 2, `${kind}: claimed again after release`);
    // Error mapping: the old lease, an unknown event, a cursor beyond the head, a bad argument.
    r = await call(m, 'ack', { event_id: id1, lease_token: ev.lease_token });
    check(r.isError && r.structuredContent.error.code === 'lease_mismatch',
      `${kind}: a stale lease is lease_mismatch: ${JSON.stringify(r.structuredContent)}`);
    r = await call(m, 'ack', { event_id: id1, lease_token: ev2.lease_token });
    check(!r.isError && r.structuredContent.status === 'completed', `${kind}: ack`);
    r = await call(m, 'ack', { event_id: id1, lease_token: ev2.lease_token });
    check(!r.isError, `${kind}: a repeated ack is fine`);
    r = await call(m, 'ack', { event_id: 'evt_01KBQ4Z0J7K3V8R5S2W9X6Y1TQ', lease_token: 'lt_x' });
    check(r.isError && ['event_not_found', 'invalid_lease_token'].includes(
      r.structuredContent.error.code), `${kind}: unknown event: ${JSON.stringify(r.structuredContent)}`);
    r = await call(m, 'read_inbox', { after_cursor: 999999 });
    check(r.isError && r.structuredContent.error.code === 'invalid_cursor',
      `${kind}: a cursor beyond the head is invalid_cursor`);
    r = await call(m, 'claim', { limit: 0 });
    check(r.isError && r.structuredContent.error.code === 'invalid_limit',
      `${kind}: limit 0 is invalid_limit`);
    r = await call(m, 'claim', { lease_s: 'long' });
    check(r.isError && r.structuredContent.error.code === 'invalid_lease_s',
      `${kind}: a string lease_s is invalid_lease_s`);
    let threw = false;
    try {
      await call(m, 'no_such_tool', {});
    } catch (e) {
      threw = e.code === -32602;
    }
    check(threw, `${kind}: an unknown tool is -32602`);
    r = await call(m, 'get_state');
    check(!r.isError && typeof r.structuredContent.state === 'object' &&
      Number.isInteger(r.structuredContent.cursor), `${kind}: get_state`);
    // claim with wait_s returns when work arrives (a publish from elsewhere).
    const t0 = Date.now();
    const waiting = call(m, 'claim', { wait_s: 25, lease_s: 30 });
    await sleep(500);
    const id2 = await publishRest(d, admin, agent, { task: 'two' });
    r = await waiting;
    check(!r.isError && r.structuredContent.events.length === 1 &&
      r.structuredContent.events[0].event_id === id2, `${kind}: claim with wait_s gets new work`);
    console.log(`${kind}: claim wait_s=25 returned after ${Date.now() - t0} ms (publish at ~500 ms)`);
    r = await call(m, 'ack', { event_id: id2, lease_token: r.structuredContent.events[0].lease_token });
    check(!r.isError, `${kind}: ack of the waited-for event`);
    if (kind === 'stdio') {
      // The inbox resource, subscribed: a publish from elsewhere notifies it.
      const uri = `roost://agents/${agent}/inbox`;
      const { resources } = await m.client.listResources();
      check(resources.some((x) => x.uri === uri), 'stdio: the inbox resource is listed');
      const rd = await m.client.readResource({ uri });
      const doc = JSON.parse(rd.contents[0].text);
      check(doc.agent_id === agent && doc.head >= 2, `stdio: the resource: ${rd.contents[0].text}`);
      const updates = [];
      m.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
        updates.push({ uri: n.params.uri, at: Date.now() });
      });
      await m.client.subscribeResource({ uri });
      await waitUntil(() => doc.streaming || true, 0);
      const before = updates.length;
      const at = Date.now();
      await publishRest(d, admin, agent, { task: 'three' });
      const got = await waitUntil(() => updates.length > before, 15000);
      check(got && updates[updates.length - 1].uri === uri, 'stdio: resources/updated after a publish');
      if (got) {
        const ms = updates[before].at - at;
        console.log(`stdio: resources/updated ${ms} ms after the publish was sent`);
        check(ms < patience(5000), `stdio: notified promptly (${ms} ms)`);
      }
      await m.client.unsubscribeResource({ uri });
      await m.client.setLoggingLevel('info');
    }
    await m.client.close();
  }
  // --channel: the experimental notifications/claude/channel on a wake-up, after initialized.
  const token = await mint(d, 'agent:chan:consume');
  const c = await stdioClient(d, token, 'chan', ['--channel']);
  check(c.client.getServerCapabilities().experimental?.['claude/channel'] !== undefined,
    'channel: the experimental capability is declared');
  const pings = [];
  c.client.fallbackNotificationHandler = async (n) => {
    if (n.method === 'notifications/claude/channel') {
      pings.push(n.params);
    }
  };
  const before = pings.length;
  await publishRest(d, admin, 'chan', { task: 'wake' });
  // The first event of the inbox: head 1 (a ping on connect says head 0).
  const woke = await waitUntil(() => pings.length > before && pings.some((p) =>
    p.meta?.agent === 'chan' && p.meta?.head === '1' && typeof p.content === 'string'), 15000);
  check(woke, 'channel: a publish wakes the session');
  if (!woke) {
    console.log(`channel: got ${JSON.stringify(pings)}; roost mcp's log:\n${c.log()}`);
  }
  await c.client.close();
}

async function leases(d, admin) {
  const agent = 'leases';
  const token = await mint(d, 'agent:leases:consume');
  const m = await stdioClient(d, token, agent);
  const id = await publishRest(d, admin, agent, { task: 'slow' });
  let r = await call(m, 'claim', { lease_s: 2 });
  const ev = r.structuredContent.events[0];
  check(ev && ev.event_id === id, 'leases: claimed');
  await sleep(6000); // the slow model: no call for three lease lengths
  // Meanwhile nobody else could claim it.
  const other = await api(d, 'POST', `/api/v1/agents/${agent}/inbox/claim`, admin, { lease_s: 5 });
  check(other.status === 200 && other.json.events.length === 0, 'leases: still held after 6 s');
  r = await call(m, 'ack', { event_id: id, lease_token: ev.lease_token });
  check(!r.isError, `leases: the ack after 6 s succeeds: ${JSON.stringify(r.structuredContent)}`);
  const e = await readEvent(d, admin, agent, id);
  check(e.status === 'completed', 'leases: completed');
  r = await api(d, 'GET', `/api/v1/agents/${agent}/inbox?after_cursor=0`, admin);
  check(r.json.events.filter((x) => x.event_id === id).length === 1, 'leases: once');
  await m.client.close();
}

async function kill(d, admin) {
  // The client killed: a node process holding an MCP session with a claimed event.
  const agent = 'killed';
  const token = await mint(d, 'agent:killed:consume');
  const id = await publishRest(d, admin, agent, { task: 'k' });
  const holder = spawn(process.execPath, [process.argv[1], '_holder', d.url, token, agent],
    { stdio: ['ignore', 'pipe', 'inherit'], env: process.env });
  let out = '';
  holder.stdout.on('data', (b) => {
    out += b;
  });
  const held = await waitUntil(() => out.includes(id), 30000);
  check(held, 'kill: the client claimed');
  holder.kill('SIGKILL');
  // roost mcp sees end of input and releases at once (well before the 300 s lease).
  const back = await waitUntil(async () => {
    const r = await api(d, 'POST', `/api/v1/agents/${agent}/inbox/claim`, admin, { lease_s: 60 });
    return r.json.events.length === 1 && r.json.events[0].event_id === id;
  }, 20000);
  check(back, 'kill: claimable again at once after the client died');

  // kill -9 of roost mcp: nothing releases; the lease (3 s, kept alive until the kill) ends.
  const agent2 = 'killed9';
  const token2 = await mint(d, 'agent:killed9:consume');
  const id2 = await publishRest(d, admin, agent2, { task: 'k9' });
  const m = await stdioClient(d, token2, agent2);
  const r = await call(m, 'claim', { lease_s: 3 });
  check(r.structuredContent.events[0]?.event_id === id2, 'kill: claimed through roost mcp');
  await sleep(4000); // kept alive past its first length
  process.kill(m.transport.pid, 'SIGKILL');
  const killedAt = Date.now();
  const early = await api(d, 'POST', `/api/v1/agents/${agent2}/inbox/claim`, admin, { lease_s: 60 });
  check(early.json.events.length === 0, 'kill -9: not claimable right away (the lease holds)');
  const later = await waitUntil(async () => {
    const x = await api(d, 'POST', `/api/v1/agents/${agent2}/inbox/claim`, admin, { lease_s: 60 });
    return x.json.events.length === 1 && x.json.events[0].event_id === id2;
  }, 60000);
  check(later, 'kill -9: claimable after the lease');
  console.log(`kill -9: claimable ${Date.now() - killedAt} ms after the kill (lease 3 s)`);
  await m.client.close().catch(() => {});
}

async function statedir(d, admin, dir) {
  const agent = 'stated';
  const token = await mint(d, 'agent:stated:consume');
  const sdir = join(dir, 'mcp-state');
  // A session that dies with a lease: the next session of its state dir releases it at start.
  const id1 = await publishRest(d, admin, agent, { task: 'crash' });
  const a = await stdioClient(d, token, agent, ['--state-dir', sdir]);
  let r = await call(a, 'claim', { lease_s: 600 });
  check(r.structuredContent.events[0]?.event_id === id1, 'state-dir: claimed');
  process.kill(a.transport.pid, 'SIGKILL');
  await a.client.close().catch(() => {});
  const b = await stdioClient(d, token, agent, ['--state-dir', sdir]);
  const x = await api(d, 'POST', `/api/v1/agents/${agent}/inbox/claim`, admin, { lease_s: 60 });
  check(x.json.events.length === 1 && x.json.events[0].event_id === id1 &&
    x.json.events[0].attempts === 2, 'state-dir: a crashed session\'s lease released at the next start');
  await api(d, 'POST', `/api/v1/agents/${agent}/inbox/${id1}/ack`, admin,
    { lease_token: x.json.events[0].lease_token });
  // An ack recorded but never answered (the crash between the two): the id is in DIR/processed,
  // so the event, delivered again, is acked and not handed out.
  const id2 = await publishRest(d, admin, agent, { task: 'done-before' });
  await b.client.close();
  appendFileSync(join(sdir, 'processed'), `${id2}\n`);
  const c = await stdioClient(d, token, agent, ['--state-dir', sdir]);
  r = await call(c, 'claim', { lease_s: 60 });
  check(!r.isError && r.structuredContent.events.length === 0, 'state-dir: a processed event is not handed out');
  check((await readEvent(d, admin, agent, id2)).status === 'completed', 'state-dir: ... it is acked');
  // Two sessions cannot share one state dir.
  let refused = false;
  try {
    const e = await stdioClient(d, token, agent, ['--state-dir', sdir]);
    await e.client.close();
  } catch {
    refused = true;
  }
  check(refused, 'state-dir: a second session of the same dir is refused');
  await c.client.close();
}

async function signed(d, admin, dir) {
  // roostd requires a signature on every agent route and publish (and so on /mcp).
  const agent = 'sig';
  const keyFile = join(dir, 'sig.pem');
  let r = spawnSync(roostBin, ['keys', 'generate', '--out', keyFile], { encoding: 'utf8' });
  check(r.status === 0, `signed: keys generate: ${r.stderr}`);
  r = spawnSync(roostBin, ['keys', 'add', '--server', d.url, '--token', admin, '--key-id', 'sig-1',
    '--agent', agent, '--alg', 'ed25519', '--public-key-file', `${keyFile}.pub`], { encoding: 'utf8' });
  check(r.status === 0, `signed: keys add: ${r.stderr}`);
  const token = await mint(d, 'agent:sig:consume');
  const pub = await api(d, 'POST', '/api/v1/events', admin, { recipients: [agent] });
  check(pub.status === 401, 'signed: an unsigned REST publish is refused');
  const m = await stdioClient(d, token, agent, ['--key-file', keyFile, '--key-id', 'sig-1']);
  let t = await call(m, 'read_inbox', {});
  check(!t.isError, `signed: a signed read works: ${JSON.stringify(t.structuredContent)}`);
  t = await call(m, 'claim', {});
  check(!t.isError && t.structuredContent.events.length === 0, 'signed: a signed claim works');
  await m.client.close();
  const u = await stdioClient(d, token, agent);
  t = await call(u, 'claim', {});
  check(t.isError && t.structuredContent.error.code === 'signature_missing',
    `signed: an unsigned roost mcp gets signature_missing: ${JSON.stringify(t.structuredContent)}`);
  await u.client.close();
  const res = await fetch(`${d.url}/mcp`, { method: 'POST',
    body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' } });
  const body = await res.json();
  check(res.status === 401 && body.error.code === 'signature_missing',
    `signed: an unsigned POST /mcp is 401 signature_missing (${res.status})`);
}

async function holder() {
  const [url, token, agent] = process.argv.slice(3);
  const m = await stdioClient({ url }, token, agent);
  const r = await call(m, 'claim', { lease_s: 300 });
  process.stdout.write(`${r.structuredContent.events[0]?.event_id}\n`);
  await sleep(600000);
}

async function restart(d, admin, dir) {
  const agent = 'restart';
  const token = await mint(d, 'agent:restart:consume agent:restart:publish');
  const s = await stdioClient(d, token, agent);
  const h = await httpClient(d, token, agent);
  let r = await call(s, 'get_state');
  check(!r.isError, 'restart: stdio works before');
  const port = new URL(d.url).port;
  check(await d.stop() === 0, 'restart: roostd stopped');
  const d2 = await startRoostd(dir, `127.0.0.1:${port}`, d.storeUrl);
  r = await call(s, 'publish', { recipients: [agent], payload: { after: 'restart' } });
  check(!r.isError, `restart: stdio's next call works: ${JSON.stringify(r.structuredContent)}`);
  r = await call(h, 'claim', { lease_s: 30 });
  check(!r.isError && r.structuredContent.events.length === 1, 'restart: http\'s next call works');
  await s.client.close();
  await h.client.close();
  return d2;
}

async function scopes(d, admin) {
  const token = await mint(d, 'agent:alice:consume');
  await publishRest(d, admin, 'bob', { secret: 1 });
  const s = await stdioClient(d, token, 'bob');
  let r = await call(s, 'claim', {});
  check(r.isError && r.structuredContent.error.code === 'forbidden', 'scopes: stdio refuses bob');
  await s.client.close();
  const h = await httpClient(d, token, 'bob');
  r = await call(h, 'claim', {});
  check(r.isError && r.structuredContent.error.code === 'forbidden' &&
    r.structuredContent.error.required_scope === 'agent:bob:consume', 'scopes: http refuses bob');
  r = await h.client.callTool({ name: 'claim', arguments: { agent: 'alice' } });
  check(!r.isError, 'scopes: http allows alice');
  r = await h.client.callTool({ name: 'publish', arguments: { recipients: ['bob'] } });
  check(r.isError && r.structuredContent.error.code === 'forbidden', 'scopes: no publish scope');
  await h.client.close();
  const still = await api(d, 'POST', '/api/v1/agents/bob/inbox/claim', admin, {});
  check(still.json.events.length === 1, 'scopes: bob\'s work untouched');
}

const hostileCases = [
  ['not json at all', -32700],
  ['{"jsonrpc":"2.0","id":1}', -32600],
  ['[{"jsonrpc":"2.0","id":1,"method":"ping"}]', -32600],
  ['[]', -32600],
  ['{"jsonrpc":"1.0","id":2,"method":"ping"}', -32600],
  ['{"jsonrpc":"2.0","id":{"x":1},"method":"ping"}', -32600],
  ['{"jsonrpc":"2.0","id":3,"method":42}', -32600],
  ['{"jsonrpc":"2.0","id":4,"method":"no/such"}', -32601],
  ['{"jsonrpc":"2.0","id":5,"method":"tools/call","params":[1]}', -32602],
  ['{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"nope"}}', -32602],
  ['{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":7}}', -32602],
  ['"just a string"', -32600],
  ['{"jsonrpc":"2.0","id":8,"id":9,"method":"ping"}', -32700],
  [`${'['.repeat(100000)}`, -32600],
  [`{"jsonrpc":"2.0","id":10,"method":"ping","params":${'{"a":'.repeat(200)}1${'}'.repeat(200)}}`,
    -32600],
];

async function hostile(d) {
  const token = await mint(d, 'agent:h:consume');
  // stdin: raw lines to roost mcp, one answer per line.
  const proc = spawn(roostBin, ['mcp', '--agent', 'h', '--server', d.url],
    { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, ROOST_TOKEN: token } });
  let buf = '';
  const answers = [];
  proc.stdout.on('data', (b) => {
    buf += b;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      answers.push(JSON.parse(buf.slice(0, i)));
      buf = buf.slice(i + 1);
    }
  });
  proc.stderr.on('data', () => {});
  const exited = new Promise((r) => proc.on('exit', (code) => r(code)));
  const lines = [...hostileCases.map((c) => c[0]),
    `{"jsonrpc":"2.0","id":11,"method":"ping","params":{"pad":"${'a'.repeat(5 * 1024 * 1024)}"}}`,
    Buffer.from([0x7b, 0xff, 0xfe, 0x7d]).toString('latin1'),
    '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"claim","arguments":{"limit":"ten"}}}',
    '{"jsonrpc":"2.0","method":"notifications/whatever"}',
    '{"jsonrpc":"2.0","id":13,"method":"ping"}'];
  for (const l of lines) {
    proc.stdin.write(`${l}\n`);
  }
  const all = await waitUntil(() => answers.length >= lines.length - 1, 30000);
  check(all, `hostile stdin: ${answers.length} answers to ${lines.length - 1} requests`);
  hostileCases.forEach(([text, code], i) => {
    check(answers[i]?.error?.code === code,
      `hostile stdin: ${text.slice(0, 40)} → ${code}, got ${JSON.stringify(answers[i]?.error)}`);
  });
  const n = hostileCases.length;
  check(answers[n]?.error?.code === -32600, 'hostile stdin: a 5 MiB line is refused');
  check(answers[n + 1]?.error?.code === -32700, 'hostile stdin: bad UTF-8 is a parse error');
  check(answers[n + 2]?.result?.isError === true &&
    answers[n + 2].result.structuredContent.error.code === 'invalid_limit', 'hostile stdin: wrong type');
  check(answers[n + 3]?.id === 13 && answers[n + 3]?.result !== undefined,
    'hostile stdin: still answers a ping');
  proc.stdin.end();
  const code = await Promise.race([exited, sleep(20000).then(() => 'hang')]);
  check(code === 0, `hostile stdin: EOF ends the session with 0 (${code})`);

  // /mcp: the same bodies.
  for (const [text, code2] of hostileCases) {
    const res = await fetch(`${d.url}/mcp`, { method: 'POST', body: text,
      headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' } });
    const body = await res.json().catch(() => null);
    check(body?.error?.code === code2 || (code2 === -32600 && res.status === 400 && body?.error),
      `hostile /mcp: ${text.slice(0, 40)} → ${code2}, got ${res.status} ${JSON.stringify(body)}`);
  }
  // Over limits.max_body_bytes: 413, or the connection closed before the body was all sent.
  const big = await fetch(`${d.url}/mcp`, { method: 'POST', body: `"${'a'.repeat(5 << 20)}"`,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' } })
    .then((res) => res.status, (e) => e.cause?.code || 'error');
  check(big === 413 || big === 'EPIPE' || big === 'ECONNRESET', `hostile /mcp: 5 MiB refused (${big})`);
  const get = await fetch(`${d.url}/mcp`, { headers: { Authorization: `Bearer ${token}` } });
  check(get.status === 405, 'hostile /mcp: GET is 405');
  const noauth = await fetch(`${d.url}/mcp`, { method: 'POST', body: '{}',
    headers: { 'Content-Type': 'application/json' } });
  check(noauth.status === 401, 'hostile /mcp: no token is 401');
  const ping = await fetch(`${d.url}/mcp`, { method: 'POST',
    body: '{"jsonrpc":"2.0","id":1,"method":"ping"}',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' } });
  check(ping.status === 200 && (await ping.json()).result !== undefined, 'hostile /mcp: still up');
}

async function main() {
  if (scenario === '_holder') {
    await holder();
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), `roost-mcp-${scenario}-`));
  let d = await startRoostd(dir, '127.0.0.1:0', mysqlStore(),
    scenario === 'signed' ? ['signatures.require=all'] : []);
  const admin = await mint(d, 'agent:*:consume agent:*:publish tenant:admin');
  try {
    if (scenario === 'tools') {
      await tools(d, admin);
    } else if (scenario === 'leases') {
      await leases(d, admin);
    } else if (scenario === 'kill') {
      await kill(d, admin);
    } else if (scenario === 'restart') {
      d = await restart(d, admin, dir);
    } else if (scenario === 'signed') {
      await signed(d, admin, dir);
    } else if (scenario === 'statedir') {
      await statedir(d, admin, dir);
    } else if (scenario === 'scopes') {
      await scopes(d, admin);
    } else if (scenario === 'hostile') {
      await hostile(d);
    } else {
      throw new Error(`unknown scenario ${scenario}`);
    }
  } catch (e) {
    fail(e);
  } finally {
    await d.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  finish();
}

main();
