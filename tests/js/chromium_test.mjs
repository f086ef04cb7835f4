// SPDX-License-Identifier: MIT
// A real browser's EventSource against roostd: headless Chromium (Debian's /usr/bin/chromium,
// driven by puppeteer-core, which never downloads a browser) loads a page served from another
// origin (a Node http server on 127.0.0.1:0), and the page subscribes with
// `new EventSource(roostd + '/api/v1/agents/js.browser/subscribe?access_token=' + token)` — the
// cross-origin read works because roostd answers Access-Control-Allow-Origin. The page records
// every event into window.__events; the test publishes and waits until the page saw the new head.
// A bad access_token fails the page's EventSource (readyState CLOSED, no events).
// Env: ROOST_URL, ROOST_TOKEN (read + publish on js.*), CHROMIUM (default /usr/bin/chromium).
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';
import { check, pass, run } from './check.mjs';

const url = process.env.ROOST_URL;
const token = process.env.ROOST_TOKEN;
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';

const page = (cfg) => `<!doctype html>
<html><head><meta charset="utf-8"><title>roost sse</title></head><body>
<script>
  const cfg = ${JSON.stringify(cfg)};
  window.__events = [];
  window.__errors = 0;
  window.__open = false;
  const es = new EventSource(cfg.roostd + '/api/v1/agents/' + cfg.agent +
                             '/subscribe?access_token=' + encodeURIComponent(cfg.token));
  window.__es = es;
  for (const type of ['inbox_updated', 'heartbeat']) {
    es.addEventListener(type, (e) => window.__events.push({type, id: e.lastEventId, data: e.data}));
  }
  es.onopen = () => { window.__open = true; };
  es.onerror = () => { window.__errors++; };
</script>
</body></html>`;

async function publish(agent) {
  const res = await fetch(`${url}/api/v1/events`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ recipients: [agent], payload: { from: 'chromium_test' } }),
  });
  const body = await res.json();
  check(res.status === 201, `publish answered ${res.status}`);
  return body.events[0].sequence_number;
}

async function main() {
  if (!url || !token) {
    console.error('ROOST_URL and ROOST_TOKEN must be set');
    process.exit(2);
  }
  const agent = 'js.browser';
  const server = http.createServer((req, res) => {
    const u = new URL(req.url, 'http://127.0.0.1');
    const tok = u.pathname === '/bad' ? 'not-a-token' : token;
    res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' });
    res.end(page({ roostd: url, agent, token: tok }));
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const origin = `http://127.0.0.1:${server.address().port}`;
  check(origin !== new URL(url).origin, 'the page is on another origin than roostd');

  const profile = mkdtempSync(join(tmpdir(), 'roost-chromium-'));
  const browser = await puppeteer.launch({
    executablePath: chromium,
    headless: true,
    userDataDir: profile,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--disable-dev-shm-usage',
      `--user-data-dir=${profile}`,
    ],
  });
  try {
    const tab = await browser.newPage();
    tab.on('console', (msg) => console.error(`page: ${msg.text()}`));
    await tab.goto(`${origin}/`, { waitUntil: 'load' });
    // At once: the head (0), as inbox_updated with id 0.
    await tab.waitForFunction(
      () => window.__events.some((e) => e.type === 'inbox_updated'),
      { timeout: 15000 },
    );
    const first = await tab.evaluate(() => window.__events[0]);
    check(first.type === 'inbox_updated', 'first event inbox_updated');
    check(first.data === '{"cursor_hint":0}' && first.id === '0', `first event head 0: ${JSON.stringify(first)}`);
    check(await tab.evaluate(() => window.__open && window.__es.readyState === 1), 'stream open');

    // A publish: the page sees the new head.
    const seq = await publish(agent);
    await tab.waitForFunction(
      (s) =>
        window.__events.some(
          (e) => e.type === 'inbox_updated' && e.data === `{"cursor_hint":${s}}` && e.id === String(s),
        ),
      { timeout: 15000 },
      seq,
    );
    pass(); // waitForFunction throws on timeout
    check((await tab.evaluate(() => window.__errors)) === 0, 'no error events');

    // A bad access_token: the browser's EventSource fails (401) and stays closed.
    const bad = await browser.newPage();
    await bad.goto(`${origin}/bad`, { waitUntil: 'load' });
    await bad.waitForFunction(() => window.__errors > 0 && window.__es.readyState === 2, {
      timeout: 15000,
    });
    check((await bad.evaluate(() => window.__events.length)) === 0, 'bad token: no events');
    pass();
  } finally {
    await browser.close();
    server.close();
    rmSync(profile, { recursive: true, force: true });
  }
}

run(main);
