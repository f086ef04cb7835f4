// SPDX-License-Identifier: MIT
// roost.js in Node (sdk/js/node.js) against the real roostd this script starts (port 0, ready
// file; on the private MariaDB when ROOST_TEST_MYSQL_URL is set: a fresh database per run).
// `node --test node_agent_test.mjs` runs every scenario; NODE_SCENARIOS=a,b picks some:
//   basic    concurrency, lease extension, RetryLater, Quarantine, publish, one process per
//            state dir, stop() releases
//   kill     the agent (a child process) SIGKILLed mid-handler: every event handled, re-runs <=
//            concurrency, none after its id was recorded; SIGTERM releases its claims
//   lostack  a TCP proxy drops ack answers: no handler runs twice
//   restart  roostd restarted under the agent (behind a proxy that follows the new port)
//   blocked  the stream blocked by the proxy: long polls (claim wait_s) take over
//   gone     a cursor behind retention (410): the state callback, then work goes on
//   interop  Node publishes and `roost agent run --exec` handles; `roost publish` and Node handles
// Env: ROOSTD, ROOST_CLI (binaries).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrivateKey } from 'node:crypto';
import { SignJWT } from 'jose';
import Roost from '../../sdk/js/node.js';
import { sleep, until } from './check.mjs';

const roostdBin = process.env.ROOSTD;
const cliBin = process.env.ROOST_CLI;
const only = process.env.NODE_SCENARIOS?.split(',');
const scenario = (name, fn) => test(name, { skip: only && !only.includes(name), timeout: 100000 }, fn);

// ---- roostd ----

/** A fresh MariaDB database on the fixture's server (store.url), or null with SQLite. */
function freshDatabase(tag) {
  const base = process.env.ROOST_TEST_MYSQL_URL;
  if (!base) {
    return null;
  }
  const u = new URL(base);
  const db = `roost_js_${process.pid}_${tag}_${Date.now() % 100000}`;
  const r = spawnSync('mariadb', ['-u', decodeURIComponent(u.username),
    `-p${decodeURIComponent(u.password)}`, '-h', u.hostname, '-P', u.port, '-e',
    `CREATE DATABASE \`${db}\` CHARACTER SET utf8mb4 COLLATE utf8mb4_bin`], { encoding: 'utf8' });
  assert.equal(r.status, 0, `create database: ${r.stderr}`);
  u.pathname = `/${db}`;
  return u.href;
}

async function startRoostd(sets = [], dir = null, storeUrl = undefined) {
  dir ??= mkdtempSync(join(tmpdir(), 'roost-node-'));
  const args = ['--data-dir', join(dir, 'data'), '--listen', '127.0.0.1:0', '--ready-file',
    join(dir, 'ready'), '--set', 'scavenger.interval_ms=100', '--set', 'sse.heartbeat_s=1'];
  const store = storeUrl === undefined ? freshDatabase('d') : storeUrl;
  if (store) {
    args.push('--set', `store.url=${store}`);
  }
  for (const s of sets) {
    args.push('--set', s);
  }
  rmSync(join(dir, 'ready'), { force: true });
  const proc = spawn(roostdBin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (d) => {
    log += d;
  });
  await until(() => existsSync(join(dir, 'ready')) &&
    readFileSync(join(dir, 'ready'), 'utf8').includes('\n'), 15000, `roostd ready: ${log}`);
  const url = readFileSync(join(dir, 'ready'), 'utf8').split('\n')[0].trim();
  const key = createPrivateKey(readFileSync(join(dir, 'data', 'token_ed25519.pem')));
  const d = {
    url, dir, proc, key, store, sets, log: () => log,
    port: Number(new URL(url).port),
    async stop(remove = true) {
      const exited = new Promise((r) => proc.on('exit', (code) => r(code)));
      proc.kill('SIGTERM');
      const code = await Promise.race([exited, sleep(20000).then(() => 'timeout')]);
      if (remove) {
        rmSync(dir, { recursive: true, force: true });
      }
      return code;
    },
    /** The same data dir (and database) again, on a new port. */
    async restart() {
      await this.stop(false);
      return startRoostd(sets, dir, store);
    },
  };
  d.admin = await mint(d, 'tenant:admin agent:*:read agent:*:publish agent:*:consume');
  return d;
}

async function mint(d, scope, ttlS = 600) {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ tenant: 't1', scope, sub: 'node-test' })
    .setProtectedHeader({ alg: 'EdDSA' }).setIssuedAt(now).setExpirationTime(now + ttlS)
    .sign(d.key);
}

async function api(d, method, path, body) {
  const res = await fetch(d.url + path, {
    method,
    headers: { Authorization: `Bearer ${d.admin}`,
      ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}) },
    body: body !== undefined ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

async function statuses(d, agent) {
  const r = await api(d, 'GET', `/api/v1/agents/${agent}/inbox?after_cursor=0&limit=1000`);
  return new Map((r.json?.events ?? []).map((e) => [e.event_id, e.status]));
}

async function publishN(d, agent, n, payload = {}) {
  const ids = [];
  for (let i = 0; i < n; i++) {
    const r = await Roost.publish({ server: d.url, getToken: () => d.admin },
      { recipients: [agent], payload: { n: i, ...payload } });
    ids.push(r.events[0].event_id);
  }
  return ids;
}

// ---- a TCP proxy in front of roostd ----

/**
 * Forwards connections to roostd (upstream port changeable). dropAcks: that many answers to
 * ack requests are swallowed (the connection is cut once roostd answered). blockStream: a
 * subscribe request is held without an answer. Counts long polls (claims with wait_s).
 */
async function startProxy(port) {
  const p = { port, dropAcks: 0, dropped: 0, blockStream: false, longPolls: 0, streams: 0 };
  const server = createServer((client) => {
    let up = null;
    let dropReply = false;
    const pending = [];
    client.on('error', () => up?.destroy());
    client.on('data', (chunk) => {
      const head = chunk.toString('latin1', 0, Math.min(chunk.length, 2048));
      const line = /^(GET|POST|DELETE|OPTIONS) (\S+) HTTP/.exec(head);
      if (line && line[2].includes('/subscribe') && !line[2].includes('/ticket')) {
        p.streams++;
        if (p.blockStream) {
          return; // held: no answer, ever
        }
      }
      if (line && /\/ack$/.test(line[2].split('?')[0]) && p.dropAcks > 0) {
        p.dropAcks--;
        dropReply = true;
      }
      if (/"wait_s":[1-9]/.test(head)) {
        p.longPolls++;
      }
      if (up === null) {
        up = connect(p.port, '127.0.0.1');
        up.on('data', (b) => {
          if (dropReply) {
            p.dropped++;
            client.destroy();
            up.destroy();
            return;
          }
          client.write(b);
        });
        up.on('error', () => client.destroy());
        up.on('close', () => client.destroy());
      }
      up.write(chunk);
      pending.length = 0;
    });
    client.on('close', () => up?.destroy());
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  p.url = `http://127.0.0.1:${server.address().port}`;
  p.close = () => new Promise((r) => {
    server.close(r);
    server.closeAllConnections?.();
  });
  return p;
}

function newAgent(server, d, agentId, handler, extra = {}) {
  const stateDir = mkdtempSync(join(tmpdir(), 'roost-node-state-'));
  const a = Roost.agent({
    server, agentId, stateDir, getToken: () => d.admin, handler, heartbeat_s: 1,
    handleSignals: false, ...extra,
  });
  a.errors = [];
  a.states = [];
  a.addEventListener('error', (e) => a.errors.push(e.detail.error));
  a.addEventListener('statechange', (e) => a.states.push(e.detail.state));
  return a;
}

/** A handler that counts runs per event id. */
function counting(ms = 0) {
  const runs = new Map();
  const fn = async (ev) => {
    runs.set(ev.event_id, (runs.get(ev.event_id) ?? 0) + 1);
    await sleep(ev.payload?.ms ?? ms);
  };
  return { runs, fn };
}

// ---- scenarios ----

scenario('basic', async () => {
  const d = await startRoostd(['claim.max_attempts=5']);
  try {
    const later = new Map();
    const runs = new Map();
    const a = newAgent(d.url, d, 'n.basic', async (ev) => {
      runs.set(ev.event_id, (runs.get(ev.event_id) ?? 0) + 1);
      if (ev.payload.later && !later.has(ev.event_id)) {
        later.set(ev.event_id, ev.attempts);
        throw new Roost.RetryLater('not yet', { retryAfterS: 1 });
      }
      if (ev.payload.poison) {
        return new Roost.Quarantine('cannot parse');
      }
      await sleep(ev.payload.ms ?? 50);
    }, { concurrency: 3, lease_s: 2 });
    await a.start();
    await until(() => a.state === 'streaming', 10000, 'streaming');
    const plain = await publishN(d, 'n.basic', 8);
    const [slow] = await publishN(d, 'n.basic', 1, { ms: 3500 }); // longer than lease_s
    const [lat] = await publishN(d, 'n.basic', 1, { later: true });
    const [poison] = await publishN(d, 'n.basic', 1, { poison: true });
    await until(async () => {
      const st = await statuses(d, 'n.basic');
      return [...plain, slow, lat].every((id) => st.get(id) === 'completed') &&
        st.get(poison) === 'quarantined';
    }, 30000, 'all completed, the poison quarantined');
    for (const id of [...plain, slow]) {
      assert.equal(runs.get(id), 1, `ran once: ${id}`);
    }
    assert.equal(runs.get(lat), 2, 'RetryLater: ran again');
    assert.equal(runs.get(poison), 1, 'Quarantine: never again');
    // Request lines reach the log in batches, within 50 ms of their answer.
    await until(() => /route=extend status=200/.test(d.log()), 5000, 'the slow lease was extended');
    // One process per state dir.
    const twin = Roost.agent({ server: d.url, agentId: 'n.basic', stateDir: a.stateDir,
      getToken: () => d.admin, handler: () => {}, handleSignals: false });
    await assert.rejects(twin.start(), (err) => err.name === 'StateDirLocked' &&
      err.message.includes(String(process.pid)));
    const onDisk = () => JSON.parse(readFileSync(join(a.stateDir, 'roost-agent.json'), 'utf8'));
    // The lease is forgotten once the ack's answer came (just after roostd completed it).
    await until(() => Object.keys(onDisk().leases).length === 0, 10000, 'leases forgotten');
    const state = onDisk();
    assert.ok(state.cursor >= 11, `cursor on disk: ${state.cursor}`);
    assert.ok(state.processed.includes(plain[0]), 'processed ids on disk');
    assert.deepEqual(Object.keys(state.leases), [], 'no outstanding lease left');
    assert.ok(a.lastSync instanceof Date);
    await a.stop();
    assert.equal(a.state, 'stopped');
    assert.ok(!existsSync(join(a.stateDir, 'roost-agent.lock')), 'unlocked');
    assert.deepEqual(a.errors.filter((e) => !(e instanceof Roost.RoostError) &&
      !(e instanceof Roost.RetryLater)), [], 'no unexpected error');
  } finally {
    assert.equal(await d.stop(), 0);
  }
});

function childAgent(d, env) {
  const proc = spawn(process.execPath, [new URL('./node_child_agent.mjs', import.meta.url).pathname],
    { env: { ...process.env, ROOST_SERVER: d.url, ROOST_TOKEN: d.admin, ...env },
      stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout.on('data', (b) => {
    out += b;
  });
  proc.stderr.on('data', (b) => {
    out += b;
  });
  proc.exited = new Promise((r) => proc.on('exit', (code, sig) => r(code ?? sig)));
  proc.output = () => out;
  return proc;
}

function readLog(path) {
  const lines = existsSync(path) ? readFileSync(path, 'utf8').split('\n').filter(Boolean) : [];
  return lines.map((l) => l.split(' '));
}

scenario('kill', async () => {
  const d = await startRoostd();
  const dir = mkdtempSync(join(tmpdir(), 'roost-node-kill-'));
  const env = { AGENT: 'n.kill', STATE_DIR: join(dir, 'state'), LOG: join(dir, 'log'),
    CONCURRENCY: '3', LEASE_S: '3' };
  try {
    const ids = await publishN(d, 'n.kill', 30, { ms: 150 });
    let child = childAgent(d, env);
    await until(() => readLog(env.LOG).filter(([k]) => k === 'done').length >= 8, 30000,
      'eight handled');
    await until(() => {
      const l = readLog(env.LOG);
      return l.filter(([k]) => k === 'start').length > l.filter(([k]) => k === 'done').length;
    }, 10000, 'a handler running');
    child.kill('SIGKILL');
    await child.exited;
    const before = readLog(env.LOG).length;
    const recorded = new Set(JSON.parse(readFileSync(join(env.STATE_DIR, 'roost-agent.json'),
      'utf8')).processed);
    assert.ok(recorded.size >= 1, 'some ids recorded before the kill');
    child = childAgent(d, env); // the stale lock of the dead process is taken over
    await until(async () => {
      const st = await statuses(d, 'n.kill');
      return ids.every((id) => st.get(id) === 'completed');
    }, 60000, `all completed: ${child.output()}`);
    const lines = readLog(env.LOG);
    const done = new Set(lines.filter(([k]) => k === 'done').map(([, id]) => id));
    assert.ok(ids.every((id) => done.has(id)), 'every event handled');
    const starts = lines.filter(([k]) => k === 'start').length;
    assert.ok(starts - ids.length <= 3, `re-runs ${starts - ids.length} <= concurrency`);
    const after = lines.slice(before).filter(([k]) => k === 'start').map(([, id]) => id);
    assert.deepEqual(after.filter((id) => recorded.has(id)), [],
      'nothing runs again after its id was recorded');
    // SIGTERM: the claim of a running handler goes back at once (release-all).
    const [slow] = await publishN(d, 'n.kill', 1, { ms: 60000 });
    await until(() => readLog(env.LOG).some(([k, id]) => k === 'start' && id === slow), 15000,
      'the slow handler started');
    child.kill('SIGTERM');
    assert.equal(await child.exited, 'SIGTERM');
    assert.equal((await statuses(d, 'n.kill')).get(slow), 'pending', 'released on SIGTERM');
    assert.ok(!existsSync(join(env.STATE_DIR, 'roost-agent.lock')), 'unlocked on SIGTERM');
  } finally {
    rmSync(dir, { recursive: true, force: true });
    assert.equal(await d.stop(), 0);
  }
});

scenario('lostack', async () => {
  const d = await startRoostd();
  const proxy = await startProxy(d.port);
  proxy.dropAcks = 3;
  const { runs, fn } = counting(20);
  const a = newAgent(proxy.url, d, 'n.ack', fn, { concurrency: 2 });
  try {
    await a.start();
    const ids = await publishN(d, 'n.ack', 8);
    await until(async () => {
      const st = await statuses(d, 'n.ack');
      return ids.every((id) => st.get(id) === 'completed');
    }, 30000, 'all completed');
    assert.equal(proxy.dropped, 3, 'three ack answers were lost');
    for (const id of ids) {
      assert.equal(runs.get(id), 1, `ran once: ${id}`);
    }
    await a.stop();
    // A fresh process on the same state dir runs none of them again either.
    const again = counting();
    const b = Roost.agent({ server: d.url, agentId: 'n.ack', stateDir: a.stateDir,
      getToken: () => d.admin, handler: again.fn, handleSignals: false, heartbeat_s: 1 });
    await b.start();
    await until(() => b.state === 'streaming', 10000, 'streaming');
    await b.stop();
    assert.equal(again.runs.size, 0);
  } finally {
    await a.stop();
    await proxy.close();
    assert.equal(await d.stop(), 0);
  }
});

scenario('restart', async () => {
  let d = await startRoostd();
  const proxy = await startProxy(d.port);
  const { runs, fn } = counting();
  const a = newAgent(proxy.url, d, 'n.rs', fn, { concurrency: 2 });
  try {
    await a.start();
    const first = await publishN(d, 'n.rs', 3);
    await until(() => first.every((id) => runs.get(id) === 1), 15000, 'first handled');
    d = await d.restart();
    proxy.port = d.port;
    await until(() => a.state === 'streaming', 30000, 'streaming again');
    const second = await publishN(d, 'n.rs', 3);
    await until(async () => {
      const st = await statuses(d, 'n.rs');
      return [...first, ...second].every((id) => st.get(id) === 'completed');
    }, 30000, 'all completed after the restart');
    for (const id of [...first, ...second]) {
      assert.equal(runs.get(id), 1, `ran once: ${id}`);
    }
  } finally {
    await a.stop();
    await proxy.close();
    assert.equal(await d.stop(), 0);
  }
});

scenario('blocked', async () => {
  const d = await startRoostd();
  const proxy = await startProxy(d.port);
  proxy.blockStream = true;
  const { runs, fn } = counting();
  const a = newAgent(proxy.url, d, 'n.blk', fn, { longPoll_s: 5 });
  try {
    await a.start();
    await until(() => proxy.streams >= 1 && proxy.longPolls >= 1, 15000, 'a long poll');
    const ids = await publishN(d, 'n.blk', 4);
    await until(() => ids.every((id) => runs.get(id) === 1), 30000, 'handled by long polls');
    assert.ok(!a.states.includes('streaming'), 'never streaming');
    assert.equal(a.state, 'polling');
    // Polling goes on with more long polls (each waits up to 5 s for work).
    await until(() => proxy.longPolls >= 2, 30000, `more long polls: ${proxy.longPolls}`);
    assert.ok(!a.states.includes('streaming'), 'still never streaming');
  } finally {
    await a.stop();
    await proxy.close();
    assert.equal(await d.stop(), 0);
  }
});

scenario('gone', async () => {
  const d = await startRoostd(['retention.completed_s=0', 'retention.interval_ms=100']);
  let a = null;
  try {
    await publishN(d, 'n.gone', 2);
    const taken = await api(d, 'POST', '/api/v1/agents/n.gone/inbox/claim', { limit: 10 });
    for (const ev of taken.json.events) {
      await api(d, 'POST', `/api/v1/agents/n.gone/inbox/${ev.event_id}/ack`,
        { lease_token: ev.lease_token });
    }
    // Both events purged (retention works in batches: wait for the second too, so the cursor the
    // agent resumes from is known).
    await until(async () => (await api(d, 'GET',
      '/api/v1/agents/n.gone/inbox?after_cursor=1&limit=1')).status === 410, 15000, '410');
    const calls = [];
    const { runs, fn } = counting();
    a = newAgent(d.url, d, 'n.gone', fn, { onState: (state, cursor) => calls.push({ state, cursor }) });
    await a.start();
    await until(() => calls.length === 1, 10000, 'the state callback');
    assert.ok(calls[0].cursor >= 2, `cursor ${calls[0].cursor}`);
    assert.equal(typeof calls[0].state, 'object');
    const [id] = await publishN(d, 'n.gone', 1);
    await until(() => runs.get(id) === 1, 15000, 'handled after the resync');
    assert.equal(calls.length, 1, 'one resync');
  } finally {
    // Stopped here too when a check failed, so the process never waits on a live agent.
    if (a) {
      await a.stop();
    }
    assert.equal(await d.stop(), 0);
  }
});

scenario('interop', async () => {
  const d = await startRoostd();
  const dir = mkdtempSync(join(tmpdir(), 'roost-node-interop-'));
  const env = { ...process.env, ROOST_SERVER: d.url, ROOST_TOKEN: d.admin };
  try {
    // Node publishes, the C agent handles.
    const ids = await publishN(d, 'n.c', 3);
    const out = join(dir, 'c-out');
    const c = spawn(cliBin, ['agent', 'run', '--agent', 'n.c', '--state-dir', join(dir, 'cst'),
      '--exec', `echo "$ROOST_EVENT_ID" >> ${out}`, '--quiet'], { env, stdio: 'ignore' });
    await until(() => existsSync(out) &&
      ids.every((id) => readFileSync(out, 'utf8').includes(id)), 30000, 'the C agent handled');
    c.kill('SIGTERM');
    await new Promise((r) => c.on('exit', r));
    assert.equal(readFileSync(out, 'utf8').trim().split('\n').length, 3, 'once each');
    // The CLI publishes, Node handles.
    const got = [];
    const a = newAgent(d.url, d, 'n.js', async (ev) => {
      got.push(ev.payload);
    });
    await a.start();
    const r = spawnSync(cliBin, ['publish', '--agent', 'n.js', '--payload', '{"from":"c"}'],
      { env, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    await until(() => got.length === 1, 15000, 'Node handled');
    assert.deepEqual(got[0], { from: 'c' });
    await a.stop();
  } finally {
    rmSync(dir, { recursive: true, force: true });
    assert.equal(await d.stop(), 0);
  }
});
