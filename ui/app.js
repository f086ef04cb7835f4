// SPDX-License-Identifier: MIT
// The Roost operator dashboard (/ui): watches a tenant's agents (depth, oldest pending age,
// claimed, quarantined, subscribers, last seen) through the operator API, refreshed every
// POLL_MS, and fixes quarantines (inspect, requeue one or all, purge). The tenant's charts come
// from the server's history (/admin/history), so they survive a page load. Any event is found by
// id or correlation id and shown in the event pane (attempts, last error, consumer, lease), read
// again with every refresh, so it never shows a state the event has left. Webhook endpoints
// (state, failure run, last attempt, recent attempts) every ENDPOINT_POLL_MS, with disable and
// enable. Inbound webhook sources (scheme, target, ingest URL, the outcomes of their recent
// receipts) and each source's receipt log, as often. Every request goes through roost.js's client (Authorization header, token refresh);
// test events through Roost.publish.
// Tokens are kept in memory (or sessionStorage when asked): never in localStorage, never in a URL.
// All text goes into the page with textContent: nothing from the API is ever parsed as HTML.
import Roost from '/sdk/roost.js';

// The operator listing is one indexed query per tenant; a visible dashboard asks ~3 times a
// second (a publish shows well within a second), a hidden one every 5 s.
const POLL_MS = 300;
const HIDDEN_POLL_MS = 5000;
// The selected agent's chart is kept by the tab (the server's history is per tenant): one sample
// a second at most, over the same window as the tenant's charts.
const AGENT_SAMPLE_MS = 1000;
const SESSION_KEY = 'roost.dashboard.tokens';
// Endpoints cost one request each for their new attempts, so they are read less often.
const ENDPOINT_POLL_MS = 2000;
const RECENT_ATTEMPTS = 50; // kept per endpoint, shown newest first
const RECENT_RECEIPTS = 100; // read per source at each of its polls (the log is newest first)

const $ = (id) => document.getElementById(id);

/** @type {{tenant: string, token: string}[]} */
let tokens = [];
let current = null; // {tenant, token}
let client = null;
let selected = null; // agent id
let view = 'inbox';
let timer = null;
// The tenant's chart samples as /admin/history gave them ({at_ms, pending, oldest_pending_age_s,
// ...}, oldest first, at most `max` of them), the window they span, and the agent's samples.
let history = newHistory();
let eventShown = null; // the event id in the event pane
let devicesAt = 0; // when the device list was last read (0: read it on the next refresh)
// Webhook endpoints: the listing, and per endpoint id the attempts read so far. The attempt log
// is oldest first and paged by attempt id, so each poll asks only for attempts after the last
// one seen.
let endpoints = [];
/** @type {Map<string, {after: string, recent: object[]}>} */
let attempts = new Map();
let selectedEndpoint = null;
let endpointsAt = 0; // when the endpoints were last read (0: read them at the next refresh)
// Inbound webhook sources, and per source id its newest receipts ({recent, more}).
let sources = [];
/** @type {Map<string, {recent: object[], more: boolean}>} */
let receipts = new Map();
let selectedSource = null;
let sourcesAt = 0; // as endpointsAt
let sourcesErr = null; // why the sources could not be read (a token without tenant:admin)

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

function newHistory() {
  return { samples: [], max: 300, windowMs: 300000, agent: [] };
}

/** Puts `nodes` (elements) into parent, keeping each child already there that equals its new
 * node, and patching a row whose cells changed cell by cell: a poll redraws only what changed,
 * so a row or button under the pointer is never swapped for a copy (a click on it lands). Rows
 * match by dataset[key] (e.g. 'agent' for data-agent), other children by position. */
function patch(parent, nodes, key) {
  const old = [...parent.children];
  const byKey = key ? new Map(old.map((n) => [n.dataset[key], n])) : null;
  const out = nodes.map((n, i) => {
    const prev = byKey ? byKey.get(n.dataset[key]) : old[i];
    if (!prev || prev.isEqualNode(n)) {
      return prev ?? n;
    }
    if (n.tagName !== 'TR' || prev.cells.length !== n.cells.length) {
      return n;
    }
    for (const a of [...prev.attributes]) {
      prev.removeAttribute(a.name);
    }
    for (const a of [...n.attributes]) {
      prev.setAttribute(a.name, a.value);
    }
    patch(prev, [...n.cells]);
    return prev;
  });
  if (out.length !== old.length || out.some((n, i) => n !== old[i])) {
    parent.replaceChildren(...out);
  }
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

const pad = (n) => String(n).padStart(2, '0');

/** Every time shown has its date: YYYY-MM-DD HH:MM:SS, local time. */
function when(iso) {
  if (!iso) {
    return '–';
  }
  const d = new Date(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

/** A table cell for a time: the local date and time, the UTC timestamp on hover. */
function timeCell(iso) {
  const td = el('td', when(iso));
  if (iso) {
    td.title = iso;
  }
  return td;
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
  history = newHistory();
  eventShown = null;
  $('event').hidden = true;
  $('found-box').hidden = true;
  $('find-note').textContent = '';
  endpoints = [];
  attempts = new Map();
  selectedEndpoint = null;
  endpointsAt = 0;
  devicesAt = 0;
  $('device-list').tBodies[0].replaceChildren();
  sources = [];
  receipts = new Map();
  selectedSource = null;
  sourcesAt = 0;
  sourcesErr = null;
  $('source').hidden = true;
  $('source-list').tBodies[0].replaceChildren();
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
    const after = history.samples.at(-1)?.at_ms;
    const [agents, stats, hist] = await Promise.all([
      c.get('/api/v1/admin/agents?sort=agent&limit=1000'),
      c.get('/api/v1/admin/stats').catch(() => null), // 503 before the first snapshot
      c.get(`/api/v1/admin/history${after ? `?after_ms=${after}` : ''}`),
    ]);
    if (c !== client) {
      throw new Error('tenant switched'); // an answer for the previous tenant: dropped
    }
    renderAgents(agents.agents);
    renderTotals(agents.agents, stats);
    renderCharts(hist);
    if (selected) {
      await renderAgent(agents.agents.find((a) => a.agent_id === selected));
    }
    if (eventShown) {
      await renderEvent(c);
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
    if (Date.now() - sourcesAt >= ENDPOINT_POLL_MS) {
      // tenant:admin only, as the devices below
      const read = await loadSources(c).catch((err) => ({ err }));
      if (c !== client) {
        throw new Error('tenant switched');
      }
      sources = read.list ?? [];
      receipts = read.seen ?? new Map();
      sourcesErr = read.err ?? null;
      sourcesAt = Date.now();
      renderSources();
    }
    if (Date.now() - devicesAt >= ENDPOINT_POLL_MS) {
      // tenant:admin only: without it the section says so instead of failing the page
      const r = await c.get('/api/v1/admin/devices?limit=100').catch((err) => ({ err }));
      if (c !== client) {
        throw new Error('tenant switched');
      }
      devicesAt = Date.now();
      renderDevices(r.devices ?? [], r.err);
    }
    $('live').textContent = `${current.tenant} · updated ${when(new Date().toISOString())}`;
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
  patch($('totals'), cards.map(([k, v]) => {
    const c = el('div', null, 'card');
    c.append(el('b', v), el('span', k));
    c.dataset.k = k;
    return c;
  }), 'k');
}

/** The tenant's charts: the new samples of /admin/history appended to those read so far. */
function renderCharts(hist) {
  history.max = hist.max_samples;
  history.windowMs = hist.max_samples * hist.interval_ms;
  history.samples = [...history.samples, ...hist.samples].slice(-history.max);
  const series = (k) => history.samples.map((s) => ({ t: s.at_ms, v: s[k] ?? 0 }));
  chart($('chart-depth'), series('pending'));
  chart($('chart-wait'), series('oldest_pending_age_s'));
}

/** A line chart in plain SVG: the newest point ({t: ms, v}) at the right edge, older ones to
 * the left, the max written top left. */
function chart(svg, points) {
  const w = 300;
  const h = Number(svg.viewBox.baseVal.height) || 80;
  const max = Math.max(1, ...points.map((p) => p.v));
  const right = points.at(-1)?.t ?? 0;
  // A young history spreads over the width (a minute at least), then scrolls in its window.
  const span = Math.min(history.windowMs, Math.max(60000, right - (points[0]?.t ?? right)));
  const pts = points.map(({ t, v }) => {
    const x = Math.max(0, w - ((right - t) * w) / span);
    return `${x.toFixed(1)},${(h - 2 - (v / max) * (h - 12)).toFixed(1)}`;
  });
  const ns = 'http://www.w3.org/2000/svg';
  const line = document.createElementNS(ns, 'polyline');
  line.setAttribute('points', pts.join(' '));
  const label = document.createElementNS(ns, 'text');
  label.setAttribute('x', '2');
  label.setAttribute('y', '9');
  label.textContent = `max ${max} · now ${points.at(-1)?.v ?? 0}`;
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
      lastSeenCell(a),
    );
    tr.addEventListener('click', () => select(a.agent_id));
    return tr;
  });
  patch($('agents').tBodies[0], rows, 'agent');
}

/** An agent with an open stream is seen now; else its last claim or stream open, or never. */
function lastSeenCell(a) {
  const td = a.subscribers > 0 ? el('td', 'now (streaming)') : el('td', since(a.last_seen_at));
  if (a.last_seen_at) {
    td.title = when(a.last_seen_at);
  }
  return td;
}

function select(agentId) {
  selected = agentId;
  history.agent = [];
  $('agent-name').textContent = agentId;
  $('agent').hidden = false;
  refresh();
}

const enc = encodeURIComponent;

async function renderAgent(a) {
  const now = Date.now();
  if (now - (history.agent.at(-1)?.t ?? 0) >= AGENT_SAMPLE_MS) {
    history.agent = [...history.agent, { t: now, v: a?.pending ?? 0 }]
      .filter((p) => now - p.t <= history.windowMs);
  }
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
  patch($('inbox').tBodies[0], r.events.reverse().map((ev) => {
    const tr = el('tr');
    tr.dataset.event = ev.event_id;
    const b = el('button', 'Inspect');
    b.dataset.action = 'inspect';
    b.addEventListener('click', (e) => {
      e.stopPropagation();
      showEvent(ev.event_id);
    });
    const td = el('td');
    td.append(b);
    tr.append(el('td', ev.sequence_number), el('td', ev.event_id), el('td', ev.status),
      timeCell(ev.created_at), td);
    return tr;
  }), 'event');
}

async function renderQuarantine() {
  const r = await client.get(`/api/v1/admin/quarantine?agent_id=${enc(selected)}&limit=100`);
  patch($('quarantine').tBodies[0], r.events.map((ev) => {
    const tr = el('tr');
    tr.dataset.event = ev.event_id;
    const td = el('td');
    td.append(...eventButtons(ev.event_id, true));
    tr.append(el('td', ev.event_id), el('td', ev.attempts), el('td', ev.last_error ?? ''), td);
    return tr;
  }), 'event');
}

/** The actions on a quarantined event (the quarantine table and the event pane share them):
 * Inspect (when not shown in the pane already), Requeue, Purge. */
function eventButtons(id, withInspect) {
  const actions = [
    ['Requeue', () => client.post(`/api/v1/admin/quarantine/${enc(id)}/requeue`, {})],
    ['Purge', () => confirm(`Purge ${id} for good?`) &&
      client.post(`/api/v1/admin/quarantine/${enc(id)}/purge`, {})],
  ];
  if (withInspect) {
    actions.unshift(['Inspect', () => showEvent(id)]);
  }
  return actions.map(([name, fn]) => {
    const b = el('button', name, name === 'Purge' ? 'danger' : '');
    b.dataset.action = name.toLowerCase();
    b.addEventListener('click', (e) => {
      e.stopPropagation();
      act(fn);
    });
    return b;
  });
}

// ---- an event: found by id or correlation id, shown in the event pane ----

/** Opens the event pane on `id`; the next refresh (now) reads it. */
function showEvent(id) {
  eventShown = id;
  $('event-id').textContent = id;
  $('event').hidden = false;
  refresh();
}

function closeEvent() {
  eventShown = null;
  $('event').hidden = true;
}

function leaseText(l) {
  if (!l) {
    return 'none';
  }
  const left = l.expires_in_ms > 0 ? `in ${age(l.expires_in_ms / 1000)}` : 'expired, not yet taken back';
  return `${l.token} held by ${l.consumer ?? 'an unnamed consumer'} since ${when(l.claimed_at)}, ` +
    `expires ${when(l.expires_at)} (${left})`;
}

// What the pane shows of an event (GET /admin/events/{id}), in this order.
const EVENT_FIELDS = [
  ['status', (e) => e.status],
  ['agent', (e) => `${e.agent_id} · seq ${e.sequence_number}`],
  ['correlation id', (e) => e.correlation_id ?? '–'],
  ['created', (e) => when(e.created_at)],
  ['available', (e) => when(e.available_at)],
  ['attempts', (e) => `${e.attempts} (timeouts ${e.timeouts}, nacks ${e.nacks})`],
  ['last error', (e) => e.last_error ?? '–'],
  ['consumer', (e) => e.consumer ?? '–'],
  ['claimed', (e) => when(e.claimed_at)],
  ['lease', (e) => leaseText(e.lease)],
  ['completed', (e) => when(e.completed_at)],
  ['expires', (e) => when(e.expires_at)],
];

/** Reads the shown event again and renders it: its state now, never the one it has left. */
async function renderEvent(c) {
  const id = eventShown;
  let ev;
  try {
    ev = await c.get(`/api/v1/admin/events/${enc(id)}`);
  } catch (err) {
    if (err.status !== 404) {
      throw err;
    }
    ev = null;
  }
  if (c !== client || id !== eventShown) {
    return; // switched or closed meanwhile
  }
  $('event').dataset.event = id;
  $('event').dataset.status = ev?.status ?? 'gone';
  $('event-note').textContent = ev ? '' : 'No such event: never published in this tenant, purged, or removed by retention.';
  patch($('event-fields'), (ev ? EVENT_FIELDS : []).flatMap(([k, fn]) => {
    const dd = el('dd', fn(ev));
    dd.dataset.k = k;
    return [el('dt', k), dd];
  }));
  patch($('event-actions'), ev?.status === 'quarantined' ? eventButtons(id, false) : []);
  $('event-payload').hidden = !ev;
  $('event-payload').textContent = ev ? JSON.stringify(ev.payload, null, 2) : '';
}

const EVENT_ID = /^evt_[0-9A-HJKMNP-TV-Z]{26}$/i;

/** Finds q: an event id opens the event pane; anything else (or an id the tenant does not have)
 * lists the events of that correlation id, and opens the pane on the only one. */
async function find(q) {
  const c = client;
  $('find-note').textContent = '';
  $('found-box').hidden = true;
  if (EVENT_ID.test(q)) {
    try {
      await c.get(`/api/v1/admin/events/${enc(q)}`);
      showEvent(q);
      return;
    } catch (err) {
      if (err.status !== 404) {
        throw err;
      }
    }
  }
  const r = await c.get(`/api/v1/admin/events?correlation_id=${enc(q)}&limit=100`);
  if (c !== client) {
    return;
  }
  if (r.events.length === 0) {
    $('find-note').textContent = `No event with the id or correlation id ${q}.`;
    return;
  }
  $('find-note').textContent = `${r.events.length}${r.next ? '+' : ''} events with correlation id ${q}`;
  patch($('found').tBodies[0], r.events.map((ev) => {
    const tr = el('tr');
    tr.dataset.event = ev.event_id;
    tr.append(el('td', ev.event_id), el('td', ev.agent_id), el('td', ev.sequence_number),
      el('td', ev.status), el('td', ev.attempts), el('td', ev.last_error ?? ''),
      timeCell(ev.created_at));
    tr.addEventListener('click', () => showEvent(ev.event_id));
    return tr;
  }), 'event');
  $('found-box').hidden = false;
  if (r.events.length === 1) {
    showEvent(r.events[0].event_id);
  }
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
  for (let more = true; more;) {
    more = (await client.post('/api/v1/admin/quarantine/requeue', { agent_id: selected })).more;
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
  patch($('endpoints').tBodies[0], endpoints.map((ep) => {
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
      el('td', last ? `${attemptText(last)} · ${since(last.at)} (${when(last.at)})` : 'none yet',
        last && last.error_class !== 'ok' ? 'q' : ''),
      td);
    tr.addEventListener('click', () => selectEndpoint(ep.endpoint_id));
    return tr;
  }), 'endpoint');
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
  patch($('attempts').tBodies[0], recent.map((at) => {
    const tr = el('tr');
    tr.dataset.attempt = at.attempt_id;
    tr.append(timeCell(at.at), el('td', at.event_id),
      el('td', at.attempt), el('td', at.status_code === 0 ? '–' : at.status_code),
      el('td', `${at.latency_ms} ms`), el('td', at.error_class, at.error_class === 'ok' ? '' : 'q'));
    tr.title = at.response_head; // the first bytes of the answer
    return tr;
  }), 'attempt');
}

// ---- inbound webhook sources (doc/INGEST.md) ----

/** The tenant's sources, and the newest receipts of each (one request a source). */
async function loadSources(c) {
  const list = [];
  for (let next = null; ;) {
    const r = await c.get(`/api/v1/admin/sources?limit=100${next ? `&next=${enc(next)}` : ''}`);
    list.push(...r.sources);
    if (!r.next) {
      break;
    }
    next = r.next;
  }
  const seen = new Map(await Promise.all(list.map(async (src) => {
    // a source deleted since the listing has no log: shown empty until the next poll drops it
    const r = await c.get(`/api/v1/admin/sources/${enc(src.source_id)}/receipts?limit=${RECENT_RECEIPTS}`)
      .catch(() => ({ receipts: [], next: null }));
    return [src.source_id, { recent: r.receipts, more: Boolean(r.next) }];
  })));
  return { list, seen };
}

/** Where a source's events go: its agents, or the agent its pointer names within the selector. */
function targetOf(src) {
  return src.agents ? src.agents.join(', ') : `${src.agent_pointer} within ${src.agent_selector}`;
}

function renderSources() {
  $('sources-note').textContent = sourcesErr ? `Sources: ${sourcesErr.message}` :
    sources.length === 0 ? 'No inbound webhook source in this tenant.' : '';
  patch($('source-list').tBodies[0], sources.map((src) => {
    const tr = el('tr');
    tr.dataset.source = src.source_id;
    if (src.source_id === selectedSource) {
      tr.className = 'sel';
    }
    const r = receipts.get(src.source_id) ?? { recent: [], more: false };
    const n = (outcome) => r.recent.filter((x) => x.outcome === outcome).length;
    const counts = `${n('accepted')} accepted · ${n('duplicate')} duplicate · ${n('refused')} refused` +
      (r.more ? ` (the last ${r.recent.length})` : '');
    const last = r.recent[0];
    const url = el('td', src.ingest_url, 'url');
    url.title = src.ingest_url;
    tr.append(el('td', src.name), el('td', src.scheme), el('td', targetOf(src)), url,
      el('td', counts, n('refused') > 0 ? 'q' : ''),
      el('td', last ? `${last.outcome} · ${since(last.at)} (${when(last.at)})` : 'none yet'));
    tr.addEventListener('click', () => selectSource(src.source_id));
    return tr;
  }), 'source');
  renderReceipts();
}

function selectSource(id) {
  selectedSource = id;
  renderSources();
}

function renderReceipts() {
  const src = sources.find((x) => x.source_id === selectedSource);
  $('source').hidden = !src;
  if (!src) {
    return;
  }
  $('source-name').textContent = `${src.name} (${src.source_id})`;
  patch($('receipts').tBodies[0], (receipts.get(src.source_id)?.recent ?? []).map((rc) => {
    const tr = el('tr');
    tr.dataset.receipt = rc.receipt_id;
    tr.dataset.outcome = rc.outcome;
    tr.append(timeCell(rc.at), el('td', rc.outcome, rc.outcome === 'refused' ? 'q' : ''),
      el('td', rc.reason), el('td', rc.delivery_id ?? '–'), el('td', `${rc.size} B`),
      el('td', rc.peer), el('td', rc.events));
    return tr;
  }), 'receipt');
}

// ---- devices (roost login, doc/CREDENTIALS.md) ----

/** The user code the verification link names (#devices?user_code=BCDF-GHJK), upper case. */
function wantedCode() {
  const m = /[?&]user_code=([A-Za-z]{4}-?[A-Za-z]{4})/.exec(location.hash);
  return m ? m[1].toUpperCase().replace(/^(....)-?(....)$/, '$1-$2') : null;
}

function renderDevices(list, err) {
  const code = wantedCode();
  $('devices-note').textContent = err ? `Devices: ${err.message}` :
    code ? `Approve only if ${code} is the code the person at the device read to you.` :
    list.length === 0 ? 'No device login in this tenant.' : '';
  const order = { pending: 0, approved: 1, denied: 2, revoked: 3 };
  const rows = [...list].sort((a, b) => order[a.status] - order[b.status]);
  patch($('device-list').tBodies[0], rows.map((d) => {
    const tr = el('tr');
    tr.dataset.device = d.device_id;
    tr.dataset.status = d.status;
    tr.dataset.code = d.user_code;
    if (code && d.user_code === code) {
      tr.className = 'sel';
    }
    const td = el('td');
    const button = (label, action, cls, fn) => {
      const b = el('button', label, cls);
      b.dataset.action = action;
      b.addEventListener('click', () => {
        devicesAt = 0; // show the new state at once
        act(fn);
      });
      td.append(b, ' ');
    };
    if (d.status === 'pending') {
      button('Approve', 'approve', '', () => client.post('/api/v1/admin/devices/approve', { user_code: d.user_code }));
      button('Deny', 'deny', 'danger', () => client.post('/api/v1/admin/devices/deny', { user_code: d.user_code }));
    } else if (d.status === 'approved') {
      button('Revoke', 'revoke', 'danger', () => client.post(`/api/v1/admin/devices/${enc(d.device_id)}/revoke`, {}));
    }
    tr.append(el('td', d.user_code), el('td', d.agent_id), el('td', d.name), el('td', d.address),
      el('td', d.scope_granted || d.scope_requested), el('td', d.status, d.status === 'revoked' ? 'off' : ''), td);
    return tr;
  }), 'device');
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
$('find-form').addEventListener('submit', (e) => {
  e.preventDefault();
  const q = $('find-q').value.trim();
  if (q) {
    act(() => find(q));
  }
});
$('event-close').addEventListener('click', closeEvent);
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
window.addEventListener('hashchange', () => {
  devicesAt = 0;
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
