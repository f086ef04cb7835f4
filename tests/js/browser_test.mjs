// SPDX-License-Identifier: MIT
// roost.js and the /ui dashboard in a real browser: headless Chromium (Debian's /usr/bin/chromium)
// driven by playwright-core, against the real roostd this script starts (port 0, ready file).
// `node browser_test.mjs SCENARIO` with SCENARIO one of
//   tabs       six tabs of one agent hold one stream (roostd's subscriber count), a seventh tab
//              still works; events are handled once, in one tab; the same with leader tabs
//              (no SharedWorker)
//   failover   the leader tab closed mid-handler: another tab finishes the work, exactly once
//   offline    the page offline for longer than the heartbeat, then online: it pulls everything
//   token      getToken: a refused token is refreshed, a short-lived token's stream reconnects
//   ticket     a subscribe ticket opens one EventSource once, and not after auth.ticket_ttl_s
//   dashboard  /ui shows a publish within a second and requeues a quarantined event by clicking;
//              it lists a webhook endpoint (a local HTTPS receiver) with its attempts, and its
//              Disable button disables it
//   dashboard_events  /ui finds an event by id and by correlation id and shows its attempts,
//              last error, consumer and lease; the event pane follows a requeue; the charts keep
//              their history across a reload; no horizontal scroll at 400 px; times with a date;
//              an agent with an open stream is seen now
//   dashboard_devices  roost login's link opens /ui on its code; approve, deny, revoke by clicking
//   dashboard_sources  /ui lists the tenant's inbound webhook sources (scheme, target, ingest
//              URL, outcomes of their receipts) and a source's receipts (accepted, duplicate,
//              refused with the reason, time, size, peer) for deliveries signed by the senders'
//              own libraries; a delivery sent while the page is open shows; another tenant's
//              sources are never listed, and the tenant switch shows only its own
// Test pages are served on roostd's own origin (Playwright answers /test/*), so they import
// /sdk/roost.js from roostd and can share a SharedWorker. Ends with "N passed, N failed".
// Env: ROOSTD (binary), CHROMIUM (default /usr/bin/chromium), ROOST_SCREENSHOTS (a directory:
// the dashboard scenario writes its PNGs there).
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHmac, createPrivateKey, randomBytes } from 'node:crypto';
import { createServer } from 'node:https';
import { SignJWT } from 'jose';
import { chromium } from 'playwright-core';
import { check, counts, pass, patience, run, sleep, waitUntil } from './check.mjs';
import { signHeaders } from './ingest_sign.mjs';

const scenario = process.argv[2];
const roostdBin = process.env.ROOSTD;
const chromiumBin = process.env.CHROMIUM || '/usr/bin/chromium';

// ---- roostd ----

async function startRoostd(sets) {
  const dir = mkdtempSync(join(tmpdir(), `roost-browser-${scenario}-`));
  const args = ['--data-dir', join(dir, 'data'), '--listen', '127.0.0.1:0', '--ready-file',
    join(dir, 'ready')];
  for (const s of sets) {
    args.push('--set', s);
  }
  const proc = spawn(roostdBin, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  proc.stderr.on('data', (d) => {
    log += d;
  });
  const ready = await waitUntil(() => existsSync(join(dir, 'ready')) &&
    readFileSync(join(dir, 'ready'), 'utf8').includes('\n'), 15000);
  if (!ready) {
    proc.kill('SIGKILL');
    throw new Error(`roostd did not get ready:\n${log}`);
  }
  const url = readFileSync(join(dir, 'ready'), 'utf8').split('\n')[0].trim();
  const key = createPrivateKey(readFileSync(join(dir, 'data', 'token_ed25519.pem')));
  return {
    url, dir, proc, key, log: () => log,
    async stop() {
      const exited = new Promise((r) => proc.on('exit', (code) => r(code)));
      proc.kill('SIGTERM');
      const code = await Promise.race([exited, sleep(20000).then(() => 'timeout')]);
      rmSync(dir, { recursive: true, force: true });
      return code;
    },
  };
}

/** A token signed with roostd's key (EdDSA, no kid), like `roost token mint`. */
async function mint(d, scope, ttlS = 600, tenant = 't1') {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({ tenant, scope, sub: 'browser-test' })
    .setProtectedHeader({ alg: 'EdDSA' })
    .setIssuedAt(now)
    .setExpirationTime(now + ttlS)
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
  return { status: res.status, json: text ? JSON.parse(text) : null, headers: res.headers };
}

async function publish(d, token, agent, payload = {}) {
  const r = await api(d, 'POST', '/api/v1/events', token, { recipients: [agent], payload });
  check(r.status === 201, `publish to ${agent}: ${r.status}`);
  return r.json.events[0].event_id;
}

/** Open SSE streams on roostd (/metrics, served to loopback): a scenario streams one agent at a
 * time, so this is that agent's count. (The admin listing knows only agents with events.) */
async function subscribers(d) {
  const text = await (await fetch(`${d.url}/metrics`)).text();
  const m = /^roost_sse_subscribers (\d+)$/m.exec(text);
  return m ? Number(m[1]) : -1;
}

// ---- a webhook receiver ----

/** A self-signed certificate for 127.0.0.1 (roostd trusts it as webhooks.ca_file). */
function makeCert() {
  const dir = mkdtempSync(join(tmpdir(), 'roost-browser-tls-'));
  const r = spawnSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt',
    'ec_paramgen_curve:P-256', '-nodes', '-days', '2', '-subj', '/CN=127.0.0.1',
    '-addext', 'subjectAltName=IP:127.0.0.1', '-keyout', join(dir, 'key.pem'),
    '-out', join(dir, 'cert.pem')], { encoding: 'utf8' });
  if (r.status !== 0) {
    throw new Error(`openssl: ${r.stderr}`);
  }
  return { dir, cert: join(dir, 'cert.pem'), key: join(dir, 'key.pem') };
}

/** HTTPS on 127.0.0.1: answers the verification challenge with HMAC-SHA256(secret, challenge)
 * and every delivery with 200. (tests/integration/webhooks.sh verifies the signatures.) */
async function startReceiver(tls, secret) {
  const key = Buffer.from(secret.replace(/^whsec_/, ''), 'base64');
  const server = createServer({ cert: readFileSync(tls.cert), key: readFileSync(tls.key) },
    (req, res) => {
      let body = '';
      req.on('data', (c) => {
        body += c;
      });
      req.on('end', () => {
        const doc = JSON.parse(body || '{}');
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.end(doc.type === 'endpoint.verification'
          ? JSON.stringify({ challenge_response: createHmac('sha256', key).update(doc.challenge).digest('hex') })
          : '{}');
      });
    });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { url: `https://127.0.0.1:${server.address().port}`, close: () => server.close() };
}

// ---- the browser ----

/** The agent page: options in the hash; handler calls report to the test through bindings. */
const agentPage = `<!doctype html><html><head><meta charset="utf-8"><title>agent</title></head><body>
<script type="module">
import Roost from '/sdk/roost.js';
const cfg = JSON.parse(decodeURIComponent(location.hash.slice(1)));
const tab = cfg.tab;
window.states = [];
window.errors = [];
window.tokenCalls = [];
window.stateCalls = [];
const agent = Roost.agent({
  server: '',
  agentId: cfg.agent,
  lease_s: cfg.lease_s ?? 30,
  heartbeat_s: cfg.heartbeat_s ?? 30,
  sharedWorker: cfg.sharedWorker ?? true,
  concurrency: cfg.concurrency ?? 1,
  onState: (state, cursor) => window.stateCalls.push({ state, cursor }),
  getToken: async ({ refresh }) => {
    window.tokenCalls.push(refresh);
    return window.mintToken(cfg.ttl ?? 600, window.tokenCalls.length === 1 && cfg.firstTokenBad);
  },
  handler: async (ev) => {
    await window.handlerStarted(ev.event_id, tab);
    await new Promise((r) => setTimeout(r, ev.payload?.ms ?? 0));
    await window.handlerDone(ev.event_id, tab);
  },
});
agent.addEventListener('statechange', (e) => window.states.push(e.detail.state));
agent.addEventListener('error', (e) => window.errors.push(String(e.detail.error?.message ?? e.detail.error)));
window.agent = agent;
window.Roost = Roost;
agent.start();
window.ready = true;
</script></body></html>`;

async function launch(d) {
  const profile = mkdtempSync(join(tmpdir(), 'roost-chromium-'));
  const browser = await chromium.launch({
    executablePath: chromiumBin,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--disable-quic',
      '--disable-background-networking', '--disable-component-update', '--no-first-run'],
  });
  const context = await browser.newContext();
  const starts = new Map(); // event_id -> [tab...]
  const dones = new Map();
  const record = (m, id, tab) => m.set(id, [...(m.get(id) ?? []), tab]);
  let consume = 'agent:b.*:consume';
  await context.exposeBinding('handlerStarted', (_src, id, tab) => record(starts, id, tab));
  await context.exposeBinding('handlerDone', (_src, id, tab) => record(dones, id, tab));
  await context.exposeBinding('mintToken', async (_src, ttl, bad) => {
    const t = await mint(d, consume, ttl);
    return bad ? `${t.slice(0, -4)}AAAA` : t; // a broken signature: refused with 401
  });
  await context.route('**/test/blank.html', (route) =>
    route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: '<!doctype html><title>blank</title>' }));
  await context.route('**/test/agent.html', (route) =>
    route.fulfill({ status: 200, contentType: 'text/html; charset=utf-8', body: agentPage }));
  const tabs = [];
  return {
    browser, context, starts, dones, tabs,
    setScope(s) {
      consume = s;
    },
    async open(cfg) {
      const page = await context.newPage();
      page.on('console', (m) => m.type() === 'error' && console.error(`page ${cfg.tab}: ${m.text()}`));
      page.on('pageerror', (e) => console.error(`page ${cfg.tab}: ${e}`));
      await page.goto(`${d.url}/test/agent.html#${encodeURIComponent(JSON.stringify(cfg))}`);
      await page.waitForFunction(() => window.ready === true);
      tabs.push(page);
      return page;
    },
    async close() {
      await browser.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

const doneOnce = (b, ids) => ids.every((id) => (b.dones.get(id) ?? []).length === 1);

// ---- scenarios ----

async function scenarioTabs(d, b, admin, producer) {
  // Six tabs with the SharedWorker: one stream between them.
  const pages = await Promise.all([0, 1, 2, 3, 4, 5].map((i) => b.open({ agent: 'b.tabs', tab: `t${i}` })));
  check(await waitUntil(async () => (await subscribers(d)) === 1, 10000,
    'one subscriber'), 'six tabs: one stream');
  const swModes = await Promise.all(pages.map((p) => p.evaluate(() => window.agent.mode)));
  check(swModes.every((m) => m === 'shared-worker'), `SharedWorker mode in every tab: ${swModes}`);
  const leaders = await Promise.all(pages.map((p) => p.evaluate(() => window.agent.isLeader)));
  check(leaders.filter(Boolean).length === 1, `one leader among six: ${leaders}`);
  // The seventh tab works: its fetches are not stuck behind six streams.
  const seventh = await b.open({ agent: 'b.tabs', tab: 't6' });
  const served = await seventh.evaluate(async () => (await fetch('/sdk/roost.js')).status);
  check(served === 200, 'seventh tab: a fetch is answered');
  const ids = [];
  for (let i = 0; i < 5; i++) {
    ids.push(await publish(d, producer, 'b.tabs', { n: i }));
  }
  check(await waitUntil(() => doneOnce(b, ids), 10000, 'five events handled'),
    'every event handled, once');
  const tabsUsed = new Set(ids.flatMap((id) => b.dones.get(id) ?? []));
  check(tabsUsed.size === 1, `handled in one tab only: ${[...tabsUsed]}`);
  check(await waitUntil(() => seventh.evaluate(() => window.agent.state === 'streaming' &&
    window.agent.lastSync !== null), 5000), 'seventh tab sees state streaming and lastSync');
  check((await subscribers(d)) === 1, 'still one stream with seven tabs');
  await Promise.all([...pages, seventh].map((p) => p.close()));
  check(await waitUntil(async () => (await subscribers(d)) === 0, 10000),
    'all tabs closed: the stream is gone');

  // Leader tabs without a SharedWorker: still one stream.
  const lt = await Promise.all([0, 1, 2].map((i) =>
    b.open({ agent: 'b.lead', tab: `l${i}`, sharedWorker: false })));
  check(await waitUntil(async () => (await subscribers(d)) === 1, 10000),
    'leader tabs: one stream');
  // Every tab, followers included, says where the stream lives (issue 33: followers said null).
  const modes = await Promise.all(lt.map((p) => p.evaluate(() => window.agent.mode)));
  check(modes.every((m) => m === 'leader-tab'), `leader-tab mode in every tab: ${modes}`);

  const id = await publish(d, producer, 'b.lead', {});
  check(await waitUntil(() => doneOnce(b, [id]), 10000), 'leader tabs: the event is handled once');
}

async function scenarioFailover(d, b, admin, producer, sharedWorker) {
  const agent = sharedWorker ? 'b.fail' : 'b.faillt';
  const pages = await Promise.all([0, 1, 2].map((i) =>
    b.open({ agent, tab: `f${i}`, lease_s: 3, sharedWorker })));
  const slow = await publish(d, producer, agent, { ms: 1500 });
  check(await waitUntil(() => (b.starts.get(slow) ?? []).length === 1, 10000), 'handler started');
  const leaderTab = b.starts.get(slow)[0];
  const leaderPage = pages[Number(leaderTab.slice(1))];
  const closedAt = Date.now();
  await leaderPage.close({ runBeforeUnload: true }); // mid-handler
  const t0 = Date.now();
  // The page notes when it became leader: the hand-over time does not include this polling.
  const rest = pages.filter((p) => p !== leaderPage);
  let since = [];
  check(await waitUntil(async () => {
    since = (await Promise.all(rest.map((p) => p.evaluate(() => window.agent.isLeader &&
      window.agent.leaderSince)))).filter(Boolean);
    return since.length === 1;
  }, 5000), 'one new leader');
  check(since.length === 1 && since[0] - closedAt < patience(1000),
    `a new leader within a second, stretched for a loaded machine (${since[0] - closedAt} ms)`);
  check(await waitUntil(() => (b.dones.get(slow) ?? []).length === 1, 15000,
    'another tab finishes'), 'a remaining tab finished the work');
  check(!(b.dones.get(slow) ?? []).includes(leaderTab), 'not in the closed tab');
  console.error(`failover (${sharedWorker ? 'shared worker' : 'leader tabs'}): done ${Date.now() - t0} ms after the close`);
  const more = [];
  for (let i = 0; i < 3; i++) {
    more.push(await publish(d, producer, agent, {}));
  }
  check(await waitUntil(() => doneOnce(b, more), 10000), 'later events handled');
  // Every ack lands (a handler reports before it returns), and nothing runs a second time.
  check(await waitUntil(async () => (await api(d, 'GET',
    `/api/v1/agents/${agent}/inbox?after_cursor=0&limit=10`, admin)).json.events
    .every((e) => e.status === 'completed'), 5000), 'all completed in roostd');
  check(doneOnce(b, [slow, ...more]), 'exactly once overall');
  for (const p of pages) {
    if (!p.isClosed()) {
      await p.close();
    }
  }
}

async function scenarioOffline(d, b, admin, producer) {
  const page = await b.open({ agent: 'b.off', tab: 'o0', heartbeat_s: 1 });
  check(await waitUntil(() => page.evaluate(() => window.agent.state === 'streaming'), 10000),
    'streaming');
  await b.context.setOffline(true);
  check(await waitUntil(() => page.evaluate(() => window.agent.state === 'offline'), 5000),
    'state offline');
  await sleep(2200); // longer than two heartbeats (1 s)
  // Meanwhile another consumer takes two events and retention deletes them: the page's cursor
  // falls behind the watermark (410), so it must resync from /state (onState) and go on.
  const consumer = await mint(d, 'agent:b.*:consume');
  for (let i = 0; i < 2; i++) {
    const r = await api(d, 'POST', '/api/v1/events', producer,
      { recipients: ['b.off'], payload: {}, state_patch: { seen: i } });
    check(r.status === 201, 'publish with a state patch');
  }
  const taken = await api(d, 'POST', '/api/v1/agents/b.off/inbox/claim', consumer, { limit: 2 });
  for (const ev of taken.json.events) {
    await api(d, 'POST', `/api/v1/agents/b.off/inbox/${ev.event_id}/ack`, consumer,
      { lease_token: ev.lease_token });
  }
  check(await waitUntil(async () => (await api(d, 'GET',
    '/api/v1/agents/b.off/inbox?after_cursor=0&limit=1', consumer)).status === 410, 10000),
  'retention moved the watermark (410 for cursor 0)');
  const ids = [];
  for (let i = 0; i < 3; i++) {
    ids.push(await publish(d, producer, 'b.off', { n: i }));
  }
  await sleep(500);
  check(ids.every((id) => !b.dones.has(id)), 'nothing handled while offline');
  await b.context.setOffline(false);
  const t0 = Date.now();
  check(await waitUntil(() => doneOnce(b, ids), 8000, 'pulled after online'),
    'everything missed is pulled once online');
  console.error(`offline: caught up ${Date.now() - t0} ms after online`);
  const calls = await page.evaluate(() => window.stateCalls);
  check(calls.length === 1 && calls[0].state.seen === 1 && calls[0].cursor >= 2,
    `410: onState got the state and its cursor: ${JSON.stringify(calls)}`);
  check(ids.every((id) => (b.dones.get(id) ?? []).length === 1) && b.dones.size === 3,
    'the two events taken elsewhere were not handled here');
  check(await waitUntil(() => page.evaluate(() => window.agent.state === 'streaming'), 10000),
    'streaming again');
}

async function scenarioToken(d, b, admin, producer) {
  // Tokens live 3 s (roostd ends a stream at its token's exp), and the first one is refused.
  const page = await b.open({ agent: 'b.tok', tab: 'k0', ttl: 3, firstTokenBad: true });
  check(await waitUntil(() => page.evaluate(() => window.agent.state === 'streaming'), 10000),
    'streaming with a refreshed token');
  check(await page.evaluate(() => window.tokenCalls.includes(true)), 'a refused token: getToken({refresh: true})');
  const first = await publish(d, producer, 'b.tok', {});
  check(await waitUntil(() => doneOnce(b, [first]), 5000), 'handled with the refreshed token');
  await sleep(4500); // past the first stream token's exp: token_expired, a new ticket
  const calls = await page.evaluate(() => window.tokenCalls.length);
  check(calls >= 3, `getToken called again as tokens expired (${calls} calls)`);
  check(await waitUntil(() => page.evaluate(() => window.agent.state === 'streaming'), 5000),
    'streaming after the token expired');
  const t0 = Date.now();
  const second = await publish(d, producer, 'b.tok', {});
  check(await waitUntil(() => doneOnce(b, [second]), 5000), 'handled after the token expired');
  console.error(`token: handled ${Date.now() - t0} ms after the publish`);
  // Streams end at each 3 s token's exp and the agent opens the next: while one is replaced the
  // count may read 0 (or the old one not yet gone), so wait for the one the agent holds.
  check(await waitUntil(async () => (await subscribers(d)) === 1, 5000), 'one stream');
}

/** A handler longer than its lease: extended at half-life, so it runs once and acks. */
async function scenarioLease(d, b, admin, producer) {
  const page = await b.open({ agent: 'b.lease', tab: 'e0', lease_s: 2 });
  check(await waitUntil(() => page.evaluate(() => window.agent.state === 'streaming'), 10000),
    'streaming');
  const id = await publish(d, producer, 'b.lease', { ms: 3500 });
  check(await waitUntil(() => doneOnce(b, [id]), 10000), 'the long handler finished');
  check((b.starts.get(id) ?? []).length === 1, 'it ran once');
  // Request lines reach the log in batches, within 50 ms of their answer.
  const extends_ = () => (d.log().match(/route=extend status=200/g) ?? []).length;
  check(await waitUntil(() => extends_() >= 2, 5000),
    `extended at half-life (${extends_()} extends)`);
  // The handler reports before it returns; the ack follows.
  check(await waitUntil(async () => (await api(d, 'GET',
    '/api/v1/agents/b.lease/inbox?after_cursor=0&limit=1', admin)).json.events[0].status === 'completed',
  5000), 'acked: completed');
  check((b.starts.get(id) ?? []).length === 1, 'not expired and run again');
}

async function scenarioTicket(d, b, admin) {
  b.setScope('agent:b.*:read');
  const page = await b.context.newPage();
  await page.goto(`${d.url}/test/blank.html`);
  const result = await page.evaluate(async () => {
    const token = await window.mintToken(600, false);
    const ticket = async () => (await (await fetch('/api/v1/agents/b.tk/subscribe/ticket', {
      method: 'POST', headers: { Authorization: `Bearer ${token}` } })).json()).ticket;
    const open = (t) => new Promise((resolve) => {
      const es = new EventSource(`/api/v1/agents/b.tk/subscribe?ticket=${encodeURIComponent(t)}`);
      let events = 0;
      es.addEventListener('inbox_updated', () => events++);
      es.onopen = () => setTimeout(() => { es.close(); resolve({ open: true, events }); }, 300);
      es.onerror = () => { const state = es.readyState; es.close(); resolve({ open: false, events, state }); };
    });
    const t1 = await ticket();
    const first = await open(t1);
    const again = await open(t1);
    const t2 = await ticket();
    await new Promise((r) => setTimeout(r, 1300)); // auth.ticket_ttl_s=1
    const late = await open(t2);
    return { first, again, late };
  });
  check(result.first.open && result.first.events === 1, `a ticket opens a stream: ${JSON.stringify(result.first)}`);
  check(!result.again.open && result.again.events === 0, 'the same ticket twice: refused');
  check(!result.late.open && result.late.events === 0, 'a ticket after its ttl: refused');
}

async function scenarioDashboard(d, b, admin, producer, tls) {
  const operator = await mint(d, 'tenant:admin agent:*:read agent:*:publish agent:*:consume');
  const other = await mint(d, 'tenant:admin agent:*:read', 600, 't2');
  await publish(d, producer, 'd.alpha', { hello: 1 });
  const page = await b.context.newPage();
  await page.setViewportSize({ width: 1100, height: 900 });
  page.on('pageerror', (e) => console.error(`dashboard: ${e}`));
  await page.addInitScript(() => {
    const f = window.fetch;
    window.agentPolls = 0;
    window.fetch = (...args) => {
      window.agentPolls += String(args[0]?.url ?? args[0]).includes('/api/v1/admin/agents') ? 1 : 0;
      return f(...args);
    };
  });
  const res = await page.goto(`${d.url}/ui`);
  check(res.status() === 200, '/ui answers 200');
  check((res.headers()['content-security-policy'] ?? '').includes("script-src 'self'"), 'CSP');
  await page.fill('#tokens', `${operator}\n${other}`);
  await page.click('#signin-button');
  await page.waitForSelector('#agents tr[data-agent="d.alpha"]');
  check(await page.evaluate(() => sessionStorage.length === 0), 'token kept in memory only');
  // A publish shows at the first poll after it (polls every 300 ms: within a second). Counted in
  // polls (the page's agent listings, counted by a wrapped fetch), not milliseconds, which a
  // loaded machine stretches.
  await page.waitForTimeout(600);
  await publish(d, producer, 'd.beta', { n: 1 }); // answered: the event is committed
  const polls = await page.evaluate(() => new Promise((resolve) => {
    const at = window.agentPolls;
    const shown = () => document.querySelector('#agents tr[data-agent="d.beta"]') !== null;
    if (shown()) {
      resolve(0);
      return;
    }
    new MutationObserver((_, o) => {
      if (shown()) {
        o.disconnect();
        resolve(window.agentPolls - at);
      }
    }).observe(document.getElementById('agents'), { childList: true, subtree: true });
  }));
  check(polls <= 1, `a publish shows at the first poll after it (${polls} polls)`);
  // A quarantined event: claim, release as poison; then requeue it by clicking.
  const evId = await publish(d, producer, 'd.q', { bad: true });
  const claim = await api(d, 'POST', '/api/v1/agents/d.q/inbox/claim', operator, { limit: 1 });
  const lt = claim.json.events[0].lease_token;
  const rel = await api(d, 'POST', `/api/v1/agents/d.q/inbox/${evId}/release`, operator,
    { lease_token: lt, reason: 'poison', error: 'cannot parse the order' });
  check(rel.json?.status === 'quarantined', 'event quarantined');
  await page.click('#agents tr[data-agent="d.q"]');
  await page.waitForSelector('#agents tr[data-agent="d.q"] td.q');
  await page.click('#show-quarantine');
  await page.waitForSelector(`#quarantine tr[data-event="${evId}"]`);
  await page.click(`#quarantine tr[data-event="${evId}"] button[data-action="inspect"]`);
  await page.waitForFunction(() => document.getElementById('event-fields').textContent.includes('cannot parse'));
  if (process.env.ROOST_SCREENSHOTS) {
    await page.screenshot({ path: join(process.env.ROOST_SCREENSHOTS, 'dashboard-quarantine.png'), fullPage: true });
  }
  await page.click(`#quarantine tr[data-event="${evId}"] button[data-action="requeue"]`);
  check(await waitUntil(async () => {
    const r = await api(d, 'GET', '/api/v1/agents/d.q/inbox?after_cursor=0&limit=10', operator);
    return r.json.events.find((e) => e.event_id === evId)?.status === 'pending';
  }, 5000), 'the click requeued the event (pending again)');
  await page.waitForSelector(`#quarantine tr[data-event="${evId}"]`, { state: 'detached', timeout: 3000 });
  pass();
  await page.click('#show-inbox');
  await page.waitForSelector(`#inbox tr[data-event="${evId}"]`);
  // A webhook endpoint: listed with its delivered attempt; Disable disables it in roostd.
  const secret = `whsec_${randomBytes(32).toString('base64')}`;
  const rx = await startReceiver(tls, secret);
  try {
    const reg = await api(d, 'POST', '/api/v1/agents/d.hook/callbacks', operator,
      { url: `${rx.url}/hook`, secret });
    check(reg.status === 201, `endpoint registered: ${reg.status} ${JSON.stringify(reg.json)}`);
    const ep = reg.json?.endpoint_id;
    const hookEv = await publish(d, producer, 'd.hook', { hook: 1 });
    const row = `#endpoints tr[data-endpoint="${ep}"]`;
    await page.waitForSelector(`${row}[data-status="active"]`, { timeout: 5000 });
    check((await page.textContent(row)).includes(`${rx.url}/hook`), 'the endpoint row shows its url');
    // The delivery shows as the last attempt (200) and in the endpoint's attempts.
    check(await waitUntil(async () => /^200 /.test(await page.textContent(`${row} td:nth-child(5)`)),
      8000, 'last attempt 200'), 'the last attempt is shown (200)');
    await page.click(row);
    await page.waitForFunction((id) => [...document.querySelectorAll('#attempts tbody tr')]
      .some((tr) => tr.textContent.includes(id) && tr.textContent.includes('ok')), hookEv,
    { timeout: 5000 });
    pass();
    if (process.env.ROOST_SCREENSHOTS) {
      await page.screenshot({ path: join(process.env.ROOST_SCREENSHOTS, 'dashboard-endpoints.png'), fullPage: true });
    }
    await page.click(`${row} button[data-action="disable"]`);
    check(await waitUntil(async () => {
      const r = await api(d, 'GET', `/api/v1/admin/endpoints/${ep}`, operator);
      return r.json?.status === 'disabled' && r.json?.disabled_reason === 'operator';
    }, 5000), 'the Disable click disabled the endpoint (operator)');
    await page.waitForSelector(`${row}[data-status="disabled"] button[data-action="enable"]`, { timeout: 5000 });
    await page.click(`${row} button[data-action="enable"]`);
    check(await waitUntil(async () => (await api(d, 'GET', `/api/v1/admin/endpoints/${ep}`,
      operator)).json?.status === 'active', 5000), 'the Enable click enabled it again');
    await page.waitForSelector(`${row}[data-status="active"]`, { timeout: 5000 });
    pass();
  } finally {
    rx.close();
  }
  // Tenant switch: t2 has no agents.
  await page.selectOption('#tenant', '1');
  await page.waitForFunction(() => document.getElementById('live').textContent.startsWith('t2'));
  check((await page.locator('#agents tbody tr').count()) === 0, 'tenant t2: no agents of t1');
  await page.selectOption('#tenant', '0');
  await page.waitForSelector('#agents tr[data-agent="d.alpha"]');
  if (process.env.ROOST_SCREENSHOTS) {
    // Some history for the charts: a burst of publishes, then half of them consumed.
    await page.click('#agents tr[data-agent="d.alpha"]');
    for (let i = 0; i < 20; i++) {
      await publish(d, producer, 'd.alpha', { n: i });
      await page.waitForTimeout(250);
    }
    const got = await api(d, 'POST', '/api/v1/agents/d.alpha/inbox/claim', operator, { limit: 10 });
    for (const ev of got.json.events) {
      await api(d, 'POST', `/api/v1/agents/d.alpha/inbox/${ev.event_id}/ack`, operator,
        { lease_token: ev.lease_token });
      await page.waitForTimeout(150);
    }
    await page.waitForTimeout(1200);
    await page.screenshot({ path: join(process.env.ROOST_SCREENSHOTS, 'dashboard.png'), fullPage: true });
  }
  // roost.js: served with a version and an ETag, and revalidated with 304.
  const js = await fetch(`${d.url}/sdk/roost.js`);
  const body = await js.text();
  const etag = js.headers.get('etag');
  check(js.status === 200 && etag && js.headers.get('x-roost-version'), 'roost.js: ETag and version');
  check(body.includes(`export const VERSION = '${js.headers.get('x-roost-version')}'`),
    'roost.js VERSION is roostd\'s');
  const again = await fetch(`${d.url}/sdk/roost.js`, { headers: { 'If-None-Match': etag } });
  check(again.status === 304, 'If-None-Match: 304');
  const pkg = JSON.parse(readFileSync(new URL('../../sdk/js/package.json', import.meta.url), 'utf8'));
  check(pkg.version === js.headers.get('x-roost-version'), 'sdk/js/package.json has the same version');
  // Default and named exports both work.
  const exportsOk = await page.evaluate(async () => {
    const m = await import('/sdk/roost.js');
    return m.default.agent === m.agent && typeof m.publish === 'function' && m.default.VERSION === m.VERSION;
  });
  check(exportsOk, 'default and named exports');
}

/** The points of a chart's line (0 before its first drawing). */
const chartPoints = (page, id) => page.evaluate((i) => {
  const line = document.querySelector(`#${i} polyline`);
  return line ? line.getAttribute('points').split(' ').filter(Boolean).length : 0;
}, id);

const DATED = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/; // YYYY-MM-DD HH:MM:SS

/** Runs one part of a scenario: a part that throws (a selector never shown) fails as a check,
 * and the next part still runs. */
async function part(what, fn) {
  try {
    await fn();
  } catch (err) {
    check(false, `${what}: ${String(err.message ?? err).split('\n')[0]}`);
  }
}

// roost login's verification link opens the dashboard on its user code; the operator approves
// it (the device's next poll gets its tokens), denies another, and revokes the first.
async function scenarioDashboardDevices(d, b, admin) {
  const form = (path, body) => fetch(d.url + path, { method: 'POST', body: new URLSearchParams(body) })
    .then(async (r) => ({ status: r.status, json: await r.json() }));
  const start = (agent) => form('/oauth/device_authorization',
    { client_id: agent, device_name: 'laptop box', tenant: 't1' }); // the operator's tenant
  const a = await start('dev.a');
  const other = await start('dev.b');
  check(a.status === 200 && other.status === 200, 'two device authorizations');
  const poll = (dc, agent) => form('/oauth/token', { grant_type: 'urn:ietf:params:oauth:grant-type:device_code',
    device_code: dc.device_code, client_id: agent });
  check((await poll(a.json, 'dev.a')).json.error === 'authorization_pending', 'pending before approval');
  const page = await b.context.newPage();
  page.setDefaultTimeout(10000);
  page.on('pageerror', (e) => console.error(`dashboard: ${e}`));
  await page.goto(a.json.verification_uri_complete);
  await page.fill('#tokens', admin);
  await page.click('#signin-button');
  const row = `#device-list tr[data-code="${a.json.user_code}"]`;
  await page.waitForSelector(`${row}.sel[data-status="pending"]`);
  const text = await page.textContent(row);
  check(text.includes('dev.a') && text.includes('laptop box') && text.includes('127.0.0.1') &&
    text.includes('agent:dev.a:consume'), `the row shows agent, name, address, scopes: ${text}`);
  check((await page.textContent('#devices-note')).includes(a.json.user_code), 'the note names the code');
  // once decided, a device no longer shows its code: follow it by its id
  const byId = `#device-list tr[data-device="${await page.getAttribute(row, 'data-device')}"]`;
  await page.click(`${row} button[data-action="approve"]`);
  await page.waitForSelector(`${byId}[data-status="approved"]`);
  await new Promise((r) => setTimeout(r, a.json.interval * 1000));
  const tok = await poll(a.json, 'dev.a');
  check(tok.status === 200 && tok.json.refresh_token?.startsWith('rt1.'), `approved in the browser: tokens (${tok.status})`);
  const otherRow = `#device-list tr[data-code="${other.json.user_code}"]`;
  const otherId = `#device-list tr[data-device="${await page.getAttribute(otherRow, 'data-device')}"]`;
  await page.click(`${otherRow} button[data-action="deny"]`);
  await page.waitForSelector(`${otherId}[data-status="denied"]`);
  check((await poll(other.json, 'dev.b')).json.error === 'access_denied', 'denied in the browser');
  await page.click(`${byId} button[data-action="revoke"]`);
  await page.waitForSelector(`${byId}[data-status="revoked"]`);
  const r = await form('/oauth/token', { grant_type: 'refresh_token', refresh_token: tok.json.refresh_token });
  check(r.json.error === 'invalid_grant', 'revoked in the browser: its refresh fails');
  await page.close();
}

// Inbound webhook sources in the dashboard: deliveries signed by npm standardwebhooks and
// @octokit/webhooks-methods (ingest_sign.mjs), seen as the operator sees them.
async function scenarioDashboardSources(d, b, admin) {
  const admin2 = await mint(d, 'tenant:admin agent:*:read', 600, 't2');
  const add = async (token, body) => {
    const r = await api(d, 'POST', '/api/v1/admin/sources', token, body);
    check(r.status === 201, `source ${body.name} added: ${r.status}`);
    return r.json;
  };
  const deliver = async (src, body, headers) => (await fetch(`${d.url}/ingest/${src.source_id}`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body })).status;
  const openai = await add(admin, { name: 'openai', scheme: 'standard-webhooks', agents: ['openai-agent'] });
  const gh = await add(admin, { name: 'github', scheme: 'github', agents: ['gh-agent', 'ops'] });
  const routed = await add(admin, { name: 'routed', scheme: 'standard-webhooks',
    agent_pointer: '/metadata/agent', agent_selector: 'support-*' });
  const other = await add(admin2, { name: 'other-tenant', scheme: 'github', agents: ['t2-agent'] });

  const body = JSON.stringify({ type: 'response.completed', data: { id: 'resp_1' } });
  const good = await signHeaders('standard-webhooks', openai.secret, body, { id: 'msg-dash-1' });
  const wrongKey = `whsec_${Buffer.from('not the secret of this source!!!').toString('base64')}`;
  const big = JSON.stringify({ pad: 'x'.repeat(200000) });
  const codes = [
    await deliver(openai, body, good),
    await deliver(openai, body, good), // the sender's retry
    await deliver(openai, body, await signHeaders('standard-webhooks', wrongKey, body, { id: 'msg-dash-x' })),
    await deliver(openai, big, await signHeaders('standard-webhooks', openai.secret, big, { id: 'msg-dash-big' })),
  ];
  check(JSON.stringify(codes) === '[200,200,401,413]', `the deliveries answered 200, 200, 401, 413: ${codes}`);
  const push = JSON.stringify({ ref: 'refs/heads/main' });
  check(await deliver(gh, push, await signHeaders('github', gh.secret, push, { id: 'gh-dash-1' })) === 200,
    'the GitHub delivery is accepted');
  check(await deliver(other, push, await signHeaders('github', other.secret, push, { id: 't2-dash-1' })) === 200,
    "tenant 2's delivery is accepted");

  const page = await b.context.newPage();
  page.setDefaultTimeout(15000);
  page.on('pageerror', (e) => console.error(`dashboard: ${e}`));
  await page.goto(`${d.url}/ui/`);
  await page.fill('#tokens', `${admin}\n${admin2}`);
  await page.click('#signin-button');
  const row = (src) => `#source-list tr[data-source="${src.source_id}"]`;
  const rowText = (src, text) => page.waitForFunction(([sel, t]) =>
    document.querySelector(sel)?.textContent.includes(t), [row(src), text]).then(() => true, () => false);
  check(await rowText(openai, '1 accepted · 1 duplicate · 2 refused'),
    `the openai source counts its receipts: ${await page.textContent(row(openai)).catch(() => 'no row')}`);
  const text = await page.textContent(row(openai));
  check(text.includes('openai') && text.includes('standard-webhooks') && text.includes('openai-agent') &&
    text.includes(openai.ingest_url) && text.includes(`/ingest/${openai.source_id}`),
  `the row shows name, scheme, target and ingest URL: ${text}`);
  check(await rowText(gh, 'gh-agent, ops') && await rowText(gh, '1 accepted · 0 duplicate · 0 refused'),
    `the github source: ${await page.textContent(row(gh)).catch(() => 'no row')}`);
  check(await rowText(routed, '/metadata/agent within support-*') && await rowText(routed, 'none yet'),
    `a routed source shows its pointer and selector: ${await page.textContent(row(routed)).catch(() => 'no row')}`);
  check(await page.locator(row(other)).count() === 0, "tenant 1's page never lists tenant 2's source");

  // The receipt log of a source: newest first, each with its outcome, reason, size and peer.
  await page.click(row(openai));
  await page.waitForSelector('#source:not([hidden]) #receipts tbody tr:nth-child(4)');
  const rows = await page.$$eval('#receipts tbody tr', (trs) => trs.map((tr) =>
    [...tr.cells].map((td) => td.textContent)));
  const outcomes = rows.map((r) => r[1]).sort().join(',');
  check(outcomes === 'accepted,duplicate,refused,refused', `the receipts' outcomes: ${outcomes}`);
  check(rows.some((r) => r[1] === 'refused' && r[2] === 'signature_mismatch') &&
    rows.some((r) => r[1] === 'refused' && r[2] === 'body_too_large'), `the refusals say why: ${JSON.stringify(rows)}`);
  check(rows.filter((r) => r[3] === 'msg-dash-1').length === 2 && rows.every((r) => r[5] === '127.0.0.1') &&
    rows.every((r) => /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/.test(r[0])) &&
    rows.some((r) => r[4] === `${Buffer.byteLength(big)} B`) && rows.some((r) => r[4] === `${Buffer.byteLength(body)} B`),
  `delivery id, time with its date, size and peer: ${JSON.stringify(rows)}`);
  check((await page.textContent('#source-name')).includes(openai.source_id), 'the pane names the source');

  // A delivery while the page is open shows at a later poll, in the list and the receipts.
  const live = JSON.stringify({ type: 'response.completed', data: { id: 'resp_2' } });
  check(await deliver(openai, live, await signHeaders('standard-webhooks', openai.secret, live, { id: 'msg-dash-2' })) === 200,
    'a delivery sent while the page is open is accepted');
  check(await page.waitForFunction(() => [...document.querySelectorAll('#receipts tbody tr')]
    .some((tr) => tr.cells[3].textContent === 'msg-dash-2' && tr.cells[1].textContent === 'accepted'))
    .then(() => true, () => false), 'the new receipt shows');
  check(await rowText(openai, '2 accepted · 1 duplicate · 2 refused'), 'the counts follow');
  if (process.env.ROOST_SCREENSHOTS) {
    await page.screenshot({ path: join(process.env.ROOST_SCREENSHOTS, 'dashboard-sources.png'), fullPage: true });
  }

  // The other tenant: its own source only, none of tenant 1's, and no receipt pane left open.
  await page.selectOption('#tenant', '1');
  check(await rowText(other, '1 accepted') && await rowText(other, 't2-agent'),
    `tenant 2 sees its source: ${await page.textContent('#source-list').catch(() => '')}`);
  check(await page.locator(row(openai)).count() === 0 && await page.locator(row(gh)).count() === 0,
    "tenant 2's page lists none of tenant 1's sources");
  check(await page.isHidden('#source'), 'the receipt pane of the other tenant is closed');
  await page.close();
}

async function scenarioDashboardEvents(d, b, admin, producer) {
  const operator = await mint(d, 'tenant:admin agent:*:read agent:*:publish agent:*:consume');
  const page = await b.context.newPage();
  page.setDefaultTimeout(10000);
  await page.setViewportSize({ width: 1100, height: 900 });
  page.on('pageerror', (e) => console.error(`dashboard: ${e}`));
  // Events to find: one correlation id over two agents (one of them claimed by a named consumer),
  // and a quarantined event with its last error.
  const pub = await api(d, 'POST', '/api/v1/events', producer,
    { recipients: ['e.one', 'e.two'], payload: { order: 7 }, correlation_id: 'order-7' });
  check(pub.status === 201, `publish with a correlation id: ${pub.status}`);
  const [one, two] = pub.json.events.map((e) => e.event_id);
  const held = await api(d, 'POST', '/api/v1/agents/e.two/inbox/claim', operator,
    { limit: 1, lease_s: 600, consumer: 'worker-9' });
  check(held.json?.events?.[0]?.event_id === two, 'the second event claimed by worker-9');
  const bad = await publish(d, producer, 'e.q', { bad: true });
  const claim = await api(d, 'POST', '/api/v1/agents/e.q/inbox/claim', operator, { limit: 1 });
  const rel = await api(d, 'POST', `/api/v1/agents/e.q/inbox/${bad}/release`, operator,
    { lease_token: claim.json.events[0].lease_token, reason: 'poison', error: 'cannot parse the order' });
  check(rel.json?.status === 'quarantined', 'event quarantined');

  await page.goto(`${d.url}/ui`);
  await page.fill('#tokens', operator);
  await page.check('#remember'); // the reload below signs in again from sessionStorage
  await page.click('#signin-button');
  await page.waitForSelector('#agents tr[data-agent="e.q"]');
  const field = (k) => page.textContent(`#event-fields dd[data-k="${k}"]`);
  const findText = async (q) => {
    await page.fill('#find-q', q);
    await page.click('#find-form button[type="submit"]');
  };

  await part('find by id', async () => {
    await findText(bad);
    await page.waitForSelector(`#event[data-event="${bad}"][data-status="quarantined"]`);
    check((await field('attempts')).startsWith('1 '), `attempts shown: ${await field('attempts')}`);
    check((await field('last error')) === 'cannot parse the order', `last error shown: ${await field('last error')}`);
    check(DATED.test(await field('created')), `the created time has a date: ${await field('created')}`);
  });
  await part('find by correlation id', async () => {
    await findText('order-7');
    await page.waitForSelector(`#found tr[data-event="${one}"]`);
    check(await page.locator(`#found tr[data-event="${two}"]`).count() === 1, 'both events of order-7 listed');
    const created = await page.textContent(`#found tr[data-event="${one}"] td:last-child`);
    check(DATED.test(created), `the found list dates its times: ${created}`);
    await page.click(`#found tr[data-event="${two}"]`);
    await page.waitForSelector(`#event[data-event="${two}"][data-status="claimed"]`);
    check((await field('consumer')) === 'worker-9', `consumer shown: ${await field('consumer')}`);
    const lease = await field('lease');
    check(lease.startsWith('lt_') && lease.includes('worker-9') &&
      !lease.includes(held.json.events[0].lease_token), `the lease shown, its token shortened: ${lease}`);
  });
  // Inspect a quarantined event, requeue it: the pane (the old one was #inspect) must not go on
  // showing it as quarantined.
  await part('the pane after a requeue', async () => {
    await page.click('#agents tr[data-agent="e.q"]');
    await page.click('#show-quarantine');
    await page.click(`#quarantine tr[data-event="${bad}"] button[data-action="inspect"]`);
    const paneShows = (text) => page.evaluate(([id, t]) => [...document.querySelectorAll('#event, #inspect')]
      .some((p) => !p.hidden && p.textContent.includes(id) && p.textContent.includes(t)), [bad, text]);
    check(await waitUntil(() => paneShows('quarantined'), 10000, 'the pane shows the event'),
      'Inspect shows the quarantined event');
    await page.click(`#quarantine tr[data-event="${bad}"] button[data-action="requeue"]`);
    check(await waitUntil(async () => (await api(d, 'GET', `/api/v1/admin/events/${bad}`, operator))
      .json?.status === 'pending', 5000), 'the click requeued it');
    check(await waitUntil(async () => !(await paneShows('quarantined')), 5000, 'the pane after the requeue'),
      'the pane no longer shows the requeued event as quarantined');
    const status = await page.getAttribute('#event', 'data-status');
    check(status === 'pending', `the pane shows it pending: ${status}`);
  });
  await part('inbox times', async () => {
    await page.click('#agents tr[data-agent="e.q"]');
    await page.click('#show-inbox');
    const cell = `#inbox tr[data-event="${bad}"] td:nth-child(4)`;
    await page.waitForSelector(cell);
    const t = await page.textContent(cell);
    check(DATED.test(t), `the inbox dates its times: ${t}`);
  });
  // An agent with an open stream and no claim yet: seen now (it was "never").
  await part('last seen', async () => {
    await publish(d, producer, 'e.live', { n: 1 });
    b.setScope('agent:e.*:consume');
    await b.open({ agent: 'e.live', tab: 'live' });
    await page.waitForSelector('#agents tr[data-agent="e.live"]');
    check(await waitUntil(async () => Number(await page.textContent(
      '#agents tr[data-agent="e.live"] td:nth-child(6)')) > 0, 8000, 'e.live subscribed'), 'e.live has a subscriber');
    const seen = await page.textContent('#agents tr[data-agent="e.live"] td:nth-child(7)');
    check(seen.startsWith('now'), `an agent with an open stream is seen now: ${seen}`);
  });
  // The charts come from the server's history: a reload draws every sample at once.
  await part('charts across a reload', async () => {
    check(await waitUntil(async () => (await chartPoints(page, 'chart-depth')) >= 4, 15000,
      'four chart samples'), 'the depth chart has samples');
    const before = await chartPoints(page, 'chart-depth');
    await page.reload();
    await page.waitForSelector('#chart-depth polyline', { state: 'attached' });
    const after = await chartPoints(page, 'chart-depth');
    check(after >= before, `the depth chart keeps its history across a reload (${before} -> ${after})`);
    check(await chartPoints(page, 'chart-wait') >= before, 'and so does the wait chart');
  });
  // A narrow window with the panes open: the page never scrolls sideways (tables scroll inside).
  await part('narrow window', async () => {
    // Clicks dispatched: the old page redrew every row at each poll, too fast for a real click.
    await page.locator('#agents tr[data-agent="e.q"]').dispatchEvent('click');
    await page.locator(`#inbox tr[data-event="${bad}"] button`).dispatchEvent('click');
    await findText('order-7').catch(() => {}); // the old page had no search
    for (const width of [400, 320]) {
      await page.setViewportSize({ width, height: 800 });
      await page.waitForTimeout(100); // a layout pass
      const m = await page.evaluate(() => ({ page: document.documentElement.scrollWidth,
        view: document.documentElement.clientWidth }));
      check(m.page <= m.view, `no horizontal overflow at ${width} px (page ${m.page} px, window ${m.view} px)`);
    }
    if (process.env.ROOST_SCREENSHOTS) {
      await page.setViewportSize({ width: 1100, height: 900 });
      await page.click(`#found tr[data-event="${two}"]`);
      await page.waitForSelector(`#event[data-event="${two}"]`);
      await page.screenshot({ path: join(process.env.ROOST_SCREENSHOTS, 'dashboard-event.png'), fullPage: true });
    }
  });
}

async function main() {
  if (!roostdBin) {
    console.error('ROOSTD must be set');
    process.exit(2);
  }
  const sets = ['scavenger.interval_ms=100', 'sse.heartbeat_s=1', 'sse.max_per_agent=100'];
  if (scenario === 'ticket') {
    sets.push('auth.ticket_ttl_s=1');
  }
  if (scenario === 'offline') {
    sets.push('retention.completed_s=0', 'retention.interval_ms=100');
  }
  const tls = scenario === 'dashboard' ? makeCert() : null;
  if (tls) {
    sets.push('webhooks.allow_cidrs=127.0.0.1/32', `webhooks.ca_file=${tls.cert}`,
      'webhooks.poll_ms=50');
  }
  const t0 = Date.now();
  const lap = (what) => process.env.ROOST_TEST_TIMING && console.error(`${what}: ${Date.now() - t0} ms`);
  const d = await startRoostd(sets);
  lap('roostd ready');
  const b = await launch(d);
  lap('browser ready');
  const admin = await mint(d, 'tenant:admin agent:*:read');
  const producer = await mint(d, 'agent:*:publish');
  try {
    switch (scenario) {
      case 'tabs': await scenarioTabs(d, b, admin, producer); break;
      case 'failover':
        await scenarioFailover(d, b, admin, producer, true);
        await scenarioFailover(d, b, admin, producer, false);
        break;
      case 'offline': await scenarioOffline(d, b, admin, producer); break;
      case 'token':
        await scenarioToken(d, b, admin, producer);
        await scenarioLease(d, b, admin, producer);
        break;
      case 'ticket': await scenarioTicket(d, b, admin); break;
      case 'dashboard': await scenarioDashboard(d, b, admin, producer, tls); break;
      case 'dashboard_events': await scenarioDashboardEvents(d, b, admin, producer); break;
      case 'dashboard_devices': await scenarioDashboardDevices(d, b, admin); break;
      case 'dashboard_sources': await scenarioDashboardSources(d, b, admin); break;
      default: throw new Error(`unknown scenario ${scenario}`);
    }
  } finally {
    lap('scenario done');
    await b.close();
    lap('browser closed');
    const code = await d.stop();
    lap('roostd stopped');
    check(code === 0, `roostd exited 0 (${code})`);
    if (tls) {
      rmSync(tls.dir, { recursive: true, force: true });
    }
    if (counts.failed > 0) {
      // A directory of its own: runs side by side never overwrite each other's log.
      const path = join(mkdtempSync(join(tmpdir(), `roost-browser-${scenario}-log-`)), 'roostd.log');
      writeFileSync(path, d.log());
      console.error(`roostd's log: ${path}`);
    }
  }
}

run(main);
