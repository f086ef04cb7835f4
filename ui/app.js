// SPDX-License-Identifier: MIT
// The Roost operator dashboard (/ui): watches a tenant's agents (depth, oldest pending age,
// claimed, quarantined, subscribers, last seen) through the operator API, refreshed every
// POLL_MS, and fixes quarantines (inspect, requeue one or all, purge). Webhook endpoints (state,
// failure run, last attempt, recent attempts) every ENDPOINT_POLL_MS, with disable and enable.
// Every request goes through
// roost.js's client (Authorization header, token refresh); test events through Roost.publish.
// Tokens are kept in memory (or sessionStorage when asked): never in localStorage, never in a URL.
// All text goes into the page with textContent: nothing from the API is ever parsed as HTML.
import Roost from '/sdk/roost.js';

// The operator listing is one indexed query per tenant; a visible dashboard asks ~3 times a
// second (a publish shows well within a second), a hidden one every 5 s.
const POLL_MS = 300;
const HIDDEN_POLL_MS = 5000;
const HISTORY = 400; // chart samples (two minutes at POLL_MS)
const SESSION_KEY = 'roost.dashboard.tokens';
// Endpoints cost one request each for their new attempts, so they are read less often.
const ENDPOINT_POLL_MS = 2000;
const RECENT_ATTEMPTS = 50; // kept per endpoint, shown newest first

const $ = (id) => document.getElementById(id);

/** @type {{tenant: string, token: string}[]} */
let tokens = [];
let current = null; // {tenant, token}
let client = null;
let selected = null; // agent id
let view = 'inbox';
let timer = null;
let history = { depth: [], wait: [], agent: [] };
// Webhook endpoints: the listing, and per endpoint id the attempts read so far. The attempt log
// is oldest first and paged by attempt id, so each poll asks only for attempts after the last
// one seen.
let endpoints = [];
/** @type {Map<string, {after: string, recent: object[]}>} */
let attempts = new Map();
let selectedEndpoint = null;
let endpointsAt = 0; // when the endpoints were last read (0: read them at the next refresh)

function tenantOf(token) {
  try {
    const part = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const claims = JSON.parse(atob(part + '='.repeat((4 - (part.length % 4)) % 4)));
    return typeof claims.tenant === 'string' ? claims.tenant : null;
  } catch {
    return null;
  }
}

function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined && text !== null) {
    e.textContent = String(text);
  }
  if (cls) {
    e.className = cls;
  }
  return e;
}

function age(s) {
  if (s === null || s === undefined) {
    return '–';
  }
  if (s < 60) {
    return `${Math.round(s)} s`;
  }
  if (s < 3600) {
    return `${Math.round(s / 60)} min`;
  }
  return `${(s / 3600).toFixed(1)} h`;
}

function since(iso) {
  return iso ? age((Date.now() - Date.parse(iso)) / 1000) + ' ago' : 'never';
}

function showError(err) {
  $('error').textContent = err ? `${err.code ?? ''} ${err.message ?? err}` : '';
}

// ---- sign-in and tenant switch ----

function signIn(list, remember) {
  tokens = list.map((token) => ({ tenant: tenantOf(token), token })).filter((t) => t.tenant);
  if (tokens.length === 0) {
    $('signin-error').textContent = 'No token with a tenant claim.';
    return;
  }
  if (remember) {
    sessionStorage.setItem(SESSION_KEY, JSON.stringify(tokens.map((t) => t.token)));
  } else {
    sessionStorage.removeItem(SESSION_KEY);
  }
  const sel = $('tenant');
  sel.replaceChildren(...tokens.map((t, i) => {
    const o = el('option', t.tenant);
    o.value = String(i);
    return o;
  }));
  $('tenant-box').hidden = tokens.length < 2;
  $('signin').hidden = true;
  $('app').hidden = false;
  $('signout').hidden = false;
  $('tokens').value = '';
  useTenant(0);
}

function signOut() {
  tokens = [];
  current = null;
  client = null;
  clearTimeout(timer);
  sessionStorage.removeItem(SESSION_KEY);
  $('app').hidden = true;
  $('signout').hidden = true;
  $('tenant-box').hidden = true;
  $('signin').hidden = false;
}

function useTenant(i) {
  current = tokens[i];
  // getToken: the tenant's token; when roostd refuses it (expired), ask for a new sign-in.
  client = Roost.client({
    server: '',
    getToken: ({ refresh }) => {
      if (refresh) {
        signOut();
        $('signin-error').textContent = `The token of ${current?.tenant ?? 'this tenant'} was refused: sign in again.`;
        throw new Error('token refused');
      }
      return current.token;
    },
  });
  selected = null;
  history = { depth: [], wait: [], agent: [] };
  endpoints = [];
  attempts = new Map();
  selectedEndpoint = null;
  endpointsAt = 0;
  $('agent').hidden = true;
  $('endpoint').hidden = true;
  $('agents').tBodies[0].replaceChildren();
  $('endpoints').tBodies[0].replaceChildren();
  $('live').textContent = '';
  refresh();
}

// ---- polling ----

let inFlight = false;
let again = false;

// One refresh at a time: a click during one asks for another right after it.
async function refresh() {
  if (inFlight) {
    again = true;
    return;
  }
  clearTimeout(timer);
  if (!client) {
    return;
  }
  inFlight = true;
  again = false;
  const c = client;
  try {
    const [agents, stats] = await Promise.all([
      c.get('/api/v1/admin/agents?sort=agent&limit=1000'),
      c.get('/api/v1/admin/stats').catch(() => null), // 503 before the first snapshot
    ]);
    if (c !== client) {
      throw new Error('tenant switched'); // an answer for the previous tenant: dropped
    }
    renderAgents(agents.agents);
    renderTotals(agents.agents, stats);
    if (selected) {
      await renderAgent(agents.agents.find((a) => a.agent_id === selected));
    }
    if (Date.now() - endpointsAt >= ENDPOINT_POLL_MS) {
      const read = await loadEndpoints(c);
      if (c !== client) {
        throw new Error('tenant switched');
      }
      endpoints = read.list;
      attempts = read.seen; // deleted endpoints drop out
      endpointsAt = Date.now();
      renderEndpoints();
    }
    $('live').textContent = `${current.tenant} · updated ${new Date().toLocaleTimeString()}`;
    showError(null);
  } catch (err) {
    if (c === client) {
      showError(err);
    }
  }
  inFlight = false;
  if (client) {
    const wait = document.visibilityState === 'hidden' ? HIDDEN_POLL_MS : POLL_MS;
    timer = setTimeout(refresh, again ? 0 : wait);
  }
}

function push(series, v) {
  series.push(v);
  if (series.length > HISTORY) {
    series.shift();
  }
}

function renderTotals(agents, stats) {
  const sum = (k) => agents.reduce((n, a) => n + (a[k] ?? 0), 0);
  const pending = sum('pending');
  const oldest = agents.reduce((m, a) => Math.max(m, a.oldest_pending_age_s ?? 0), 0);
  const cards = [
    ['agents', agents.length],
    ['pending', pending],
    ['scheduled', sum('scheduled')],
    ['claimed', sum('claimed')],
    ['quarantined', sum('quarantined')],
    ['subscribers', sum('subscribers')],
    ['oldest pending', age(oldest)],
  ];
  if (stats?.oldest_claim_age_s !== undefined) {
    cards.push(['oldest claim', age(stats.oldest_claim_age_s)]);
  }
  $('totals').replaceChildren(...cards.map(([k, v]) => {
    const c = el('div', null, 'card');
    c.append(el('b', v), el('span', k));
    c.dataset.k = k;
    return c;
  }));
  push(history.depth, pending);
  push(history.wait, oldest);
  chart($('chart-depth'), history.depth);
  chart($('chart-wait'), history.wait);
}

/** A line chart in plain SVG: the series scaled into the viewBox, its max written top left. */
function chart(svg, series) {
  const w = 300;
  const h = Number(svg.viewBox.baseVal.height) || 80;
  const max = Math.max(1, ...series);
  // The newest sample at the right edge, older ones to the left: the picture scrolls. The
  // first 60 samples spread over the whole width, then they get denser up to HISTORY.
  const slots = Math.min(HISTORY, Math.max(series.length, 60)) - 1;
  const pts = series.map((v, i) => {
    const x = w - ((series.length - 1 - i) * w) / slots;
    return `${x.toFixed(1)},${(h - 2 - (v / max) * (h - 12)).toFixed(1)}`;
  });
  const ns = 'http://www.w3.org/2000/svg';
  const line = document.createElementNS(ns, 'polyline');
  line.setAttribute('points', pts.join(' '));
  const label = document.createElementNS(ns, 'text');
  label.setAttribute('x', '2');
  label.setAttribute('y', '9');
  label.textContent = `max ${max} · now ${series.at(-1) ?? 0}`;
  svg.replaceChildren(line, label);
}

function renderAgents(agents) {
  const rows = agents.map((a) => {
    const tr = el('tr');
    tr.dataset.agent = a.agent_id;
    if (a.agent_id === selected) {
      tr.className = 'sel';
    }
    tr.append(
      el('td', a.agent_id),
      el('td', a.pending),
      el('td', age(a.oldest_pending_age_s)),
      el('td', a.claimed),
      el('td', a.quarantined, a.quarantined > 0 ? 'q' : ''),
      el('td', a.subscribers),
      el('td', since(a.last_seen_at)),
    );
    tr.addEventListener('click', () => select(a.agent_id));
    return tr;
  });
  $('agents').tBodies[0].replaceChildren(...rows);
}

function select(agentId) {
  selected = agentId;
  history.agent = [];
  $('agent-name').textContent = agentId;
  $('agent').hidden = false;
  $('inspect').hidden = true;
  refresh();
}

const enc = encodeURIComponent;

async function renderAgent(a) {
  push(history.agent, a?.pending ?? 0);
  chart($('chart-agent'), history.agent);
  if (view === 'inbox') {
    await renderInbox(a);
  } else {
    await renderQuarantine();
  }
}

async function renderInbox(a) {
  const head = a?.head ?? 0;
  const after = Math.max(0, head - 50);
  let r;
  try {
    r = await client.get(`/api/v1/agents/${enc(selected)}/inbox?after_cursor=${after}&limit=50`);
  } catch (err) {
    if (err.status === 403) {
      $('inbox-note').textContent = 'This token cannot read inboxes (add agent:*:read).';
      $('inbox').tBodies[0].replaceChildren();
      return;
    }
    if (err.status === 410) {
      $('inbox-note').textContent = 'Older events were removed by retention.';
      return;
    }
    throw err;
  }
  $('inbox-note').textContent = `the last ${r.events.length} events (head ${r.head})`;
  $('inbox').tBodies[0].replaceChildren(...r.events.reverse().map((ev) => {
    const tr = el('tr');
    tr.dataset.event = ev.event_id;
    const b = el('button', 'Inspect');
    b.addEventListener('click', (e) => {
      e.stopPropagation();
      inspect(ev);
    });
    const td = el('td');
    td.append(b);
    tr.append(el('td', ev.sequence_number), el('td', ev.event_id), el('td', ev.status),
      el('td', new Date(ev.created_at).toLocaleTimeString()), td);
    return tr;
  }));
}

function inspect(obj) {
  $('inspect').textContent = JSON.stringify(obj, null, 2);
  $('inspect').hidden = false;
}

async function renderQuarantine() {
  const r = await client.get(`/api/v1/admin/quarantine?agent_id=${enc(selected)}&limit=100`);
  $('quarantine').tBodies[0].replaceChildren(...r.events.map((ev) => {
    const tr = el('tr');
    tr.dataset.event = ev.event_id;
    const td = el('td');
    const actions = [
      ['Inspect', async () => inspect(await client.get(`/api/v1/admin/quarantine/${enc(ev.event_id)}`))],
      ['Requeue', () => client.post(`/api/v1/admin/quarantine/${enc(ev.event_id)}/requeue`, {})],
      ['Purge', () => confirm(`Purge ${ev.event_id} for good?`) &&
        client.post(`/api/v1/admin/quarantine/${enc(ev.event_id)}/purge`, {})],
    ];
    for (const [name, fn] of actions) {
      const b = el('button', name, name === 'Purge' ? 'danger' : '');
      b.dataset.action = name.toLowerCase();
      b.addEventListener('click', (e) => {
        e.stopPropagation();
        act(fn);
      });
      td.append(b, ' ');
    }
    tr.append(el('td', ev.event_id), el('td', ev.attempts), el('td', ev.last_error ?? ''), td);
    return tr;
  }));
}

async function act(fn) {
  try {
    await fn();
    showError(null);
  } catch (err) {
    showError(err);
  }
  refresh();
}

async function requeueAll() {
  // No bulk requeue route: page through the agent's quarantine, requeueing each event.
  for (;;) {
    const r = await client.get(`/api/v1/admin/quarantine?agent_id=${enc(selected)}&limit=100`);
    if (r.events.length === 0) {
      return;
    }
    for (const ev of r.events) {
      await client.post(`/api/v1/admin/quarantine/${enc(ev.event_id)}/requeue`, {});
    }
  }
}

async function purgeAll() {
  if (!confirm(`Purge every quarantined event of ${selected} for good?`)) {
    return;
  }
  for (let more = true; more;) {
    more = (await client.post('/api/v1/admin/quarantine/purge', { agent_id: selected })).more;
  }
}

function setView(v) {
  view = v;
  $('show-inbox').className = v === 'inbox' ? 'on' : '';
  $('show-quarantine').className = v === 'quarantine' ? 'on' : '';
  $('inbox-view').hidden = v !== 'inbox';
  $('quarantine-view').hidden = v !== 'quarantine';
  refresh();
}

// ---- webhook endpoints ----

/** The tenant's endpoints, and their attempts with the new ones since the last read appended. */
async function loadEndpoints(c) {
  const list = [];
  for (let next = null; ;) {
    const r = await c.get(`/api/v1/admin/endpoints?limit=100${next ? `&next=${enc(next)}` : ''}`);
    list.push(...r.endpoints);
    if (!r.next) {
      break;
    }
    next = r.next;
  }
  const seen = new Map();
  for (const ep of list) {
    const old = attempts.get(ep.endpoint_id);
    const a = { after: old?.after ?? '', recent: old?.recent ?? [] }; // a copy: dropped on a switch
    for (;;) {
      const r = await c.get(`/api/v1/admin/endpoints/${enc(ep.endpoint_id)}/attempts?limit=100` +
        (a.after ? `&after=${enc(a.after)}` : ''));
      if (r.attempts.length > 0) {
        a.after = r.attempts.at(-1).attempt_id;
        a.recent = [...a.recent, ...r.attempts].slice(-RECENT_ATTEMPTS);
      }
      if (!r.next) {
        break;
      }
    }
    seen.set(ep.endpoint_id, a);
  }
  return { list, seen };
}

function attemptText(at) {
  if (!at) {
    return '–';
  }
  const code = at.status_code === 0 ? 'no answer' : at.status_code;
  return at.error_class === 'ok' ? `${code}` : `${code} ${at.error_class}`;
}

function renderEndpoints() {
  $('endpoints-note').textContent = endpoints.length === 0 ? 'No webhook endpoint in this tenant.' : '';
  $('endpoints').tBodies[0].replaceChildren(...endpoints.map((ep) => {
    const tr = el('tr');
    tr.dataset.endpoint = ep.endpoint_id;
    tr.dataset.status = ep.status;
    if (ep.endpoint_id === selectedEndpoint) {
      tr.className = 'sel';
    }
    const active = ep.status === 'active';
    const state = active ? 'enabled' : `disabled${ep.disabled_reason ? ` (${ep.disabled_reason})` : ''}`;
    const last = attempts.get(ep.endpoint_id)?.recent.at(-1);
    const url = el('td', ep.url, 'url');
    url.title = ep.url;
    const b = el('button', active ? 'Disable' : 'Enable', active ? 'danger' : '');
    b.dataset.action = active ? 'disable' : 'enable';
    b.addEventListener('click', (e) => {
      e.stopPropagation();
      endpointsAt = 0; // show the new state at once
      act(() => client.post(`/api/v1/admin/endpoints/${enc(ep.endpoint_id)}/${b.dataset.action}`, {}));
    });
    const td = el('td');
    td.append(b);
    tr.append(url, el('td', ep.agent_id), el('td', state, active ? '' : 'off'),
      el('td', ep.failing_since ? age((Date.now() - Date.parse(ep.failing_since)) / 1000) : '–',
        ep.failing_since ? 'q' : ''),
      el('td', last ? `${attemptText(last)} · ${since(last.at)}` : 'none yet',
        last && last.error_class !== 'ok' ? 'q' : ''),
      td);
    tr.addEventListener('click', () => selectEndpoint(ep.endpoint_id));
    return tr;
  }));
  renderAttempts();
}

function selectEndpoint(id) {
  selectedEndpoint = id;
  renderEndpoints();
}

function renderAttempts() {
  const ep = endpoints.find((e) => e.endpoint_id === selectedEndpoint);
  $('endpoint').hidden = !ep;
  if (!ep) {
    return;
  }
  $('endpoint-name').textContent = `${ep.agent_id} (${ep.endpoint_id})`;
  const recent = [...(attempts.get(ep.endpoint_id)?.recent ?? [])].reverse();
  $('attempts').tBodies[0].replaceChildren(...recent.map((at) => {
    const tr = el('tr');
    tr.dataset.attempt = at.attempt_id;
    tr.append(el('td', new Date(at.at).toLocaleTimeString()), el('td', at.event_id),
      el('td', at.attempt), el('td', at.status_code === 0 ? '–' : at.status_code),
      el('td', `${at.latency_ms} ms`), el('td', at.error_class, at.error_class === 'ok' ? '' : 'q'));
    tr.title = at.response_head; // the first bytes of the answer
    return tr;
  }));
}

// ---- wiring ----

$('signin-form').addEventListener('submit', (e) => {
  e.preventDefault();
  $('signin-error').textContent = '';
  signIn($('tokens').value.split(/\s+/).filter(Boolean), $('remember').checked);
});
$('signout').addEventListener('click', signOut);
$('tenant').addEventListener('change', (e) => useTenant(Number(e.target.value)));
$('show-inbox').addEventListener('click', () => setView('inbox'));
$('show-quarantine').addEventListener('click', () => setView('quarantine'));
$('requeue-all').addEventListener('click', () => act(requeueAll));
$('purge-all').addEventListener('click', () => act(purgeAll));
$('publish-form').addEventListener('submit', async (e) => {
  e.preventDefault();
  try {
    const payload = JSON.parse($('pub-payload').value || '{}');
    const r = await Roost.publish({ server: '', getToken: () => current.token },
      { recipients: [$('pub-agent').value], payload });
    $('pub-result').textContent = `published ${r.events[0].event_id} (seq ${r.events[0].sequence_number})`;
  } catch (err) {
    $('pub-result').textContent = `${err.code ?? ''} ${err.message}`;
  }
  refresh();
});
document.addEventListener('visibilitychange', () => document.visibilityState === 'visible' && refresh());

const saved = sessionStorage.getItem(SESSION_KEY);
if (saved) {
  try {
    signIn(JSON.parse(saved), true);
  } catch {
    sessionStorage.removeItem(SESSION_KEY);
  }
}
