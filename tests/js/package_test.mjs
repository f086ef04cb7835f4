// SPDX-License-Identifier: MIT
// The npm package of roost.js as a user gets it: `npm pack` in sdk/js, installed offline from
// the tarball into an empty temporary project. Then (node --test; NODE_SCENARIOS picks):
//   typescript  a strict TypeScript example using every public call compiles against the
//               installed package (tsc from tests/js), and runs: a Node agent handles what it
//               publishes, against the real roostd
//   cors        headless Chromium, the page on http://127.0.0.1:P1 (served here, roost.js from
//               the installed tarball) and roostd on http://localhost:P2 with
//               http.cors_origins=http://127.0.0.1:P1: three tabs sync, handle once, ack, and
//               survive the leader tab's close mid-handler; a page on an origin not listed
//               (http://127.0.0.1:P3) gets no data, and roostd logs no token or ticket
// Env: ROOSTD, CHROMIUM (default /usr/bin/chromium).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPrivateKey } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { SignJWT } from 'jose';
import { chromium } from 'playwright-core';
import { sleep, until } from './check.mjs';

const here = fileURLToPath(new URL('.', import.meta.url));
const sdkDir = join(here, '..', '..', 'sdk', 'js');
const only = process.env.NODE_SCENARIOS?.split(',');
const scenario = (name, fn) => test(name, { skip: only && !only.includes(name), timeout: 110000 }, fn);

/** npm pack + npm install of the tarball into an empty project: the project dir. */
function installPacked() {
  const dir = mkdtempSync(join(tmpdir(), 'roost-pkg-'));
  const pack = spawnSync('npm', ['pack', '--silent', '--pack-destination', dir],
    { cwd: sdkDir, encoding: 'utf8' });
  assert.equal(pack.status, 0, pack.stderr);
  const tgz = readdirSync(dir).find((f) => f.endsWith('.tgz'));
  assert.ok(tgz, 'a tarball');
  writeFileSync(join(dir, 'package.json'),
    JSON.stringify({ name: 'roost-pkg-test', private: true, type: 'module' }));
  const inst = spawnSync('npm', ['install', '--offline', '--no-audit', '--no-fund',
    `./${tgz}`], { cwd: dir, encoding: 'utf8' });
  assert.equal(inst.status, 0, inst.stderr);
  const pkgDir = join(dir, 'node_modules', 'roost-agent');
  const files = readdirSync(pkgDir).sort();
  assert.deepEqual(files, ['README.md', 'node.js', 'package.json', 'roost.d.ts', 'roost.js'],
    'the files of the package');
  return { dir, pkgDir };
}

async function startRoostd(sets = []) {
  const dir = mkdtempSync(join(tmpdir(), 'roost-pkg-d-'));
  const args = ['--data-dir', join(dir, 'data'), '--listen', '127.0.0.1:0', '--ready-file',
    join(dir, 'ready'), '--set', 'sse.heartbeat_s=1', '--set', 'scavenger.interval_ms=100'];
  for (const s of sets) {
    args.push('--set', s);
  }
  const proc = spawn(process.env.ROOSTD, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (d) => {
    log += d;
  });
  await until(() => existsSync(join(dir, 'ready')) &&
    readFileSync(join(dir, 'ready'), 'utf8').includes('\n'), 15000, `roostd: ${log}`);
  const url = readFileSync(join(dir, 'ready'), 'utf8').split('\n')[0].trim();
  const key = createPrivateKey(readFileSync(join(dir, 'data', 'token_ed25519.pem')));
  const mint = async (scope, ttl = 600) => {
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ tenant: 't1', scope, sub: 'pkg-test' }).setProtectedHeader({ alg: 'EdDSA' })
      .setIssuedAt(now).setExpirationTime(now + ttl).sign(key);
  };
  return {
    url, dir, mint, log: () => log, port: Number(new URL(url).port),
    async stop() {
      const exited = new Promise((r) => proc.on('exit', (code) => r(code)));
      proc.kill('SIGTERM');
      const code = await Promise.race([exited, sleep(20000).then(() => 'timeout')]);
      rmSync(dir, { recursive: true, force: true });
      return code;
    },
  };
}

const example = `// Every public call of roost-agent, under strict TypeScript.
import Roost, { VERSION, agent, publish, client, Agent, Client, RoostError, RetryLater, Quarantine,
  type RoostEvent, type AgentOptions, type AgentState, type GetToken, type PublishResult } from 'roost-agent';

declare const process: { env: Record<string, string | undefined>; exit(code: number): never };

interface Order { n: number; poison?: boolean; later?: boolean }

const server: string = process.env.ROOST_SERVER ?? '';
const getToken: GetToken = async ({ refresh }) => {
  void refresh;
  return process.env.ROOST_TOKEN ?? '';
};
const seen: number[] = [];
const opts: AgentOptions<Order> = {
  server, agentId: 'ts.orders', getToken, stateDir: process.env.STATE_DIR, concurrency: 2,
  lease_s: 10, heartbeat_s: 1, longPoll_s: 5, handleSignals: false, tempfailMax: 3,
  onState: (state: Record<string, unknown> | null, cursor: number) => console.log('resync', state, cursor),
  handler: async (ev: RoostEvent<Order>) => {
    if (ev.payload.poison) {
      return new Quarantine('bad order');
    }
    if (ev.payload.later && ev.attempts < 2) {
      throw new RetryLater('not yet', { retryAfterS: 1 });
    }
    seen.push(ev.payload.n);
  },
};
const a: Agent<Order> = agent(opts);
const b: Agent<Order> = new Roost.Agent<Order>({ ...opts, stateDir: process.env.STATE_DIR + '-b' });
void b;
a.addEventListener('statechange', (e) => {
  const s: AgentState = e.detail.state;
  console.log('state', s, e.detail.previous);
});
a.addEventListener('sync', (e) => console.log('sync', e.detail.cursor, e.detail.lastSync.toISOString()));
a.addEventListener('error', (e) => console.log('error', e.detail.error instanceof RoostError));
await a.start();
const c: Client = client({ server, getToken });
const c2 = new Client({ server, getToken });
const bearer: string = await c2.bearer();
void bearer;
const r: PublishResult = await publish(c, { recipients: ['ts.orders'], payload: { n: 1 } });
await Roost.publish({ server, getToken }, { events: [
  { recipients: ['ts.orders'], payload: { n: 2, later: true } },
  { recipients: ['ts.orders'], payload: { n: 3, poison: true } }] });
const head = await c.get<{ head: number }>('/api/v1/agents/ts.orders/inbox?after_cursor=0&limit=1');
try {
  await c.post('/api/v1/agents/other/inbox/claim', { limit: 1 });
} catch (err) {
  if (!(err instanceof RoostError) || err.status !== 403) {
    throw err;
  }
}
await c.request('GET', '/api/v1/agents/ts.orders/state');
const deadline = Date.now() + 60000;
while (seen.length < 2 && Date.now() < deadline) {
  await new Promise((res) => setTimeout(res, 50));
}
await a.stop();
console.log(JSON.stringify({ version: VERSION, seen: seen.sort(), first: r.events[0].sequence_number,
  head: head.head, cursor: a.cursor, lastSync: a.lastSync !== null, consumer: a.consumer,
  isLeader: a.isLeader, mode: a.mode, agentId: a.agentId, state: a.state }));
process.exit(seen.length === 2 ? 0 : 1);
`;

scenario('typescript', async () => {
  const { dir } = installPacked();
  const d = await startRoostd();
  try {
    writeFileSync(join(dir, 'example.ts'), example);
    writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({
      compilerOptions: {
        strict: true, target: 'es2022', module: 'nodenext', moduleResolution: 'nodenext',
        lib: ['es2022', 'dom'], types: [], noEmitOnError: true, outDir: 'out',
        noUnusedLocals: true, exactOptionalPropertyTypes: false,
      },
      files: ['example.ts'],
    }));
    const tsc = spawnSync(process.execPath, [join(here, 'node_modules', 'typescript', 'bin', 'tsc'),
      '-p', dir], { encoding: 'utf8' });
    assert.equal(tsc.status, 0, `tsc: ${tsc.stdout}${tsc.stderr}`);
    // A wrong call must not compile: the declarations do check.
    mkdirSync(join(dir, 'bad'));
    writeFileSync(join(dir, 'bad', 'bad.ts'), "import { agent } from 'roost-agent';\n" +
      "agent({ server: '', agentId: 'x', getToken: () => 't', handler: () => {}, concurrency: 'two' });\n");
    writeFileSync(join(dir, 'bad', 'tsconfig.json'), JSON.stringify({ compilerOptions: {
      strict: true, module: 'nodenext', moduleResolution: 'nodenext', lib: ['es2022', 'dom'],
      types: [], noEmit: true }, files: ['bad.ts'] }));
    const bad = spawnSync(process.execPath, [join(here, 'node_modules', 'typescript', 'bin', 'tsc'),
      '-p', join(dir, 'bad')], { encoding: 'utf8' });
    assert.notEqual(bad.status, 0, 'a wrong option type is refused');
    assert.match(bad.stdout, /bad\.ts\(2,\d+\): error TS2322/);
    const token = await d.mint('agent:ts.*:read agent:ts.*:consume agent:ts.*:publish');
    const run = spawnSync(process.execPath, [join(dir, 'out', 'example.js')], {
      encoding: 'utf8', timeout: 90000,
      env: { ...process.env, ROOST_SERVER: d.url, ROOST_TOKEN: token, STATE_DIR: join(dir, 'state') },
    });
    assert.equal(run.status, 0, `example: ${run.stdout}${run.stderr}`);
    const last = JSON.parse(run.stdout.trim().split('\n').pop());
    assert.deepEqual(last.seen, [1, 2]);
    assert.equal(last.mode, 'node');
    assert.equal(last.state, 'stopped');
    assert.ok(existsSync(join(dir, 'state', 'roost-agent.json')), 'state in stateDir');
  } finally {
    assert.equal(await d.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  }
});

const page = (server, agentId) => `<!doctype html><html><head><meta charset="utf-8"></head><body>
<script type="module">
import Roost from '/roost-agent/roost.js';
const tab = location.hash.slice(1);
window.errors = [];
const agent = Roost.agent({
  server: ${JSON.stringify(server)}, agentId: ${JSON.stringify(agentId)}, lease_s: 3, heartbeat_s: 1,
  getToken: () => window.mintToken(),
  handler: async (ev) => {
    await window.handlerStarted(ev.event_id, tab);
    await new Promise((r) => setTimeout(r, ev.payload?.ms ?? 0));
    await window.handlerDone(ev.event_id, tab);
  },
});
agent.addEventListener('error', (e) => window.errors.push(String(e.detail.error?.message ?? e.detail.error)));
window.agent = agent;
window.Roost = Roost;
agent.start();
window.ready = true;
</script></body></html>`;

/** Serves the page and the installed package's files on 127.0.0.1 (its own origin); the
 * page's roostd URL is read at each request from holder.server. */
async function pageServer(pkgDir, holder, agentId) {
  const srv = createServer((req, res) => {
    const path = req.url.split('?')[0];
    if (path === '/agent.html') {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(page(holder.server, agentId));
    } else if (path === '/roost-agent/roost.js') {
      res.writeHead(200, { 'Content-Type': 'text/javascript' });
      res.end(readFileSync(join(pkgDir, 'roost.js')));
    } else {
      res.writeHead(404);
      res.end();
    }
  });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  return { origin: `http://127.0.0.1:${srv.address().port}`, close: () => srv.close() };
}

scenario('cors', async () => {
  const { dir, pkgDir } = installPacked();
  const holder = { server: '' };
  const app = await pageServer(pkgDir, holder, 'c.app');
  const other = await pageServer(pkgDir, holder, 'c.other');
  const d = await startRoostd([`http.cors_origins=${app.origin}`]);
  holder.server = `http://localhost:${d.port}`; // another origin than either page's
  const browser = await chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run'],
  });
  try {
    const context = await browser.newContext();
    const token = await d.mint('agent:c.*:read agent:c.*:consume agent:c.*:publish');
    const starts = new Map();
    const dones = new Map();
    const rec = (m, id, tab) => m.set(id, [...(m.get(id) ?? []), tab]);
    await context.exposeBinding('mintToken', () => token);
    await context.exposeBinding('handlerStarted', (_s, id, tab) => rec(starts, id, tab));
    await context.exposeBinding('handlerDone', (_s, id, tab) => rec(dones, id, tab));
    const producer = (await import('../../sdk/js/node.js')).default;
    const pub = async (agentId, payload) => (await producer.publish(
      { server: d.url, getToken: () => token }, { recipients: [agentId], payload })).events[0].event_id;
    const status = async (agentId) => {
      const r = await fetch(`${d.url}/api/v1/agents/${agentId}/inbox?after_cursor=0&limit=100`,
        { headers: { Authorization: `Bearer ${token}` } });
      return new Map((await r.json()).events.map((e) => [e.event_id, e.status]));
    };
    const open = async (origin, tab) => {
      const p = await context.newPage();
      await p.goto(`${origin}/agent.html#${tab}`);
      await p.waitForFunction(() => window.ready === true);
      return p;
    };
    // The listed origin: three tabs, one leader, streaming through the SharedWorker.
    const tabs = [await open(app.origin, 'a0'), await open(app.origin, 'a1'), await open(app.origin, 'a2')];
    await until(async () => (await tabs[0].evaluate(() => window.agent.state)) === 'streaming',
      20000, 'streaming cross-origin');
    assert.equal(await tabs[0].evaluate(() => window.agent.mode), 'shared-worker');
    const ids = [await pub('c.app', {}), await pub('c.app', {}), await pub('c.app', {})];
    await until(async () => {
      const st = await status('c.app');
      return ids.every((id) => st.get(id) === 'completed');
    }, 20000, 'handled and acked cross-origin');
    assert.ok(ids.every((id) => (dones.get(id) ?? []).length === 1), 'once each');
    // A publish from the page itself (POST with Authorization: preflighted).
    const fromPage = await tabs[1].evaluate(async () => (await window.Roost.publish(
      { server: window.agent.opts.server, getToken: () => window.mintToken() },
      { recipients: ['c.app'], payload: { ms: 1500 } })).events[0].event_id);
    await until(() => (starts.get(fromPage) ?? []).length === 1, 20000, 'the page\'s event started');
    // The leader tab closes mid-handler: another tab finishes it.
    const leaderTab = starts.get(fromPage)[0];
    const leader = tabs[Number(leaderTab.slice(1))];
    await leader.close({ runBeforeUnload: true });
    await until(async () => (await status('c.app')).get(fromPage) === 'completed', 30000,
      'finished by another tab');
    assert.ok(!(dones.get(fromPage) ?? []).includes(leaderTab), 'not in the closed tab');
    assert.equal((dones.get(fromPage) ?? []).length, 1, 'finished once');

    // An origin not listed: no data, the handler never runs, the event stays pending.
    const [ghost] = [await pub('c.other', {})];
    const o = await open(other.origin, 'o0');
    // Its pull fails in the browser (no CORS answer): the agent says offline, and keeps trying.
    await until(async () => (await o.evaluate(() => window.agent.state)) === 'offline', 20000,
      'the unlisted page offline');
    assert.equal(starts.has(ghost), false, 'an unlisted origin handles nothing');
    assert.equal((await status('c.other')).get(ghost), 'pending');
    const state = await o.evaluate(() => window.agent.state);
    assert.notEqual(state, 'streaming');
    const read = await o.evaluate(async () => {
      try {
        await window.Roost.client({ server: window.agent.opts.server, getToken: () => window.mintToken() })
          .get('/api/v1/agents/c.other/inbox?after_cursor=0&limit=1');
        return 'read';
      } catch (err) {
        return `${err.code}`;
      }
    });
    assert.equal(read, 'network', 'the browser blocks the answer');
    assert.ok(!d.log().includes(token), 'no token in roostd\'s log');
    assert.ok(!/ticket=rt/.test(d.log()), 'no ticket in roostd\'s log');
  } finally {
    await browser.close();
    app.close();
    other.close();
    assert.equal(await d.stop(), 0);
    rmSync(dir, { recursive: true, force: true });
  }
});
