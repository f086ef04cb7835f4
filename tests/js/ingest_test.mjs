// SPDX-License-Identifier: MIT
// Inbound webhooks against a real roostd (issue 31, doc/INGEST.md):
//   node ingest_test.mjs URL ADMIN_TOKEN_T1 ADMIN_TOKEN_T2
// Every delivery is signed by the sender's own npm library (ingest_sign.mjs: standardwebhooks,
// @octokit/webhooks-methods, stripe); token and hmac sources are checked with what their
// senders send. Accepted deliveries land once in the right inbox; every forged, wrong-secret,
// expired, future-dated, truncated, oversized or body-swapped variant is refused (401/413) with
// nothing written and a receipt saying why; a retry is a duplicate (200, duplicate:true, no new
// event); rotation overlap; routing by JSON pointer and selector; tenant isolation; per-source
// rate limit (429, Retry-After); per-source metrics. Ends with "N passed, N failed".
import { createHmac } from 'node:crypto';
import { signHeaders } from './ingest_sign.mjs';

const [url, t1, t2] = process.argv.slice(2);
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

async function api(method, path, token, body) {
  const res = await fetch(url + path, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? JSON.parse(text) : null };
}

async function deliver(source, body, headers) {
  const res = await fetch(`${url}/ingest/${source}`, {
    method: 'POST', headers: { 'Content-Type': 'application/json', ...headers }, body,
  });
  const text = await res.text();
  let json = null;
  try {
    json = JSON.parse(text);
  } catch { /* not JSON */ }
  return { status: res.status, json, headers: res.headers };
}

// Every event in the agent's inbox (payloads), via the tenant admin token's read scope.
async function inbox(token, agent) {
  const r = await api('GET', `/api/v1/agents/${agent}/inbox?limit=1000`, token);
  return r.status === 200 ? r.json.events : [];
}

async function addSource(token, body) {
  const r = await api('POST', '/api/v1/admin/sources', token, body);
  check(r.status === 201, `source ${body.name} added: ${r.status} ${JSON.stringify(r.json)}`);
  return r.json;
}

async function receipts(token, id) {
  const r = await api('GET', `/api/v1/admin/sources/${id}/receipts?limit=100`, token);
  return r.status === 200 ? r.json.receipts : [];
}

const now = () => Math.floor(Date.now() / 1000);

// A scheme's accepted delivery, its retry, and every variant that must be refused.
async function scheme(name, { secret, options, sign, agent }) {
  const src = await addSource(t1, { name, scheme: name, agents: [agent], options, ...(secret ? { secret } : {}) });
  const key = src.secret;
  check(typeof key === 'string' && key.length >= 16, `${name}: the secret is shown at creation`);
  const shown = await api('GET', `/api/v1/admin/sources/${src.source_id}`, t1);
  check(shown.status === 200 && shown.json.secret === undefined, `${name}: show never carries the secret`);
  const body = JSON.stringify({ id: `evt_${name}_1`, type: `${name}.happened`, data: { n: 1 } });
  const good = await sign(key, body, { id: `${name}-d1`, ts: now() });
  const before = (await inbox(t1, agent)).length;

  const r1 = await deliver(src.source_id, body, good);
  check(r1.status === 200 && r1.json.duplicate === false && r1.json.events.length === 1,
    `${name}: a signed delivery is accepted: ${r1.status} ${JSON.stringify(r1.json)}`);
  const after = await inbox(t1, agent);
  check(after.length === before + 1, `${name}: one event in ${agent}'s inbox (${after.length - before})`);
  const ev = after[after.length - 1];
  check(ev && ev.payload.source_id === src.source_id && ev.payload.body.data.n === 1 &&
    ev.event_id === r1.json.events[0].event_id, `${name}: the event carries the parsed body`);
  const r2 = await deliver(src.source_id, body, good);
  check(r2.status === 200 && r2.json.duplicate === true && r2.json.events[0].event_id === r1.json.events[0].event_id,
    `${name}: the sender's retry is a duplicate: ${JSON.stringify(r2.json)}`);

  // Refusals: nothing written, a receipt each.
  const wrong = name === 'stripe' || name === 'standard-webhooks'
    ? `whsec_${Buffer.from('another secret of 32 bytes!!!!!!').toString('base64')}` : 'another-secret-of-enough-length';
  const variants = [
    ['wrong secret', body, await sign(wrong, body, { id: `${name}-d2`, ts: now() })],
    ['no signature headers', body, {}],
  ];
  if (name !== 'token') { // a shared token signs no body
    variants.push(['body swapped', body.replace('"n":1', '"n":2'), good]);
    variants.push(['truncated body', body.slice(0, body.length - 3), good]);
  }
  if (name === 'standard-webhooks' || name === 'stripe') { // the schemes with a signed timestamp
    variants.push(['expired (10 min old)', body, await sign(key, body, { id: `${name}-d3`, ts: now() - 600 })]);
    variants.push(['future-dated (10 min ahead)', body, await sign(key, body, { id: `${name}-d4`, ts: now() + 600 })]);
  }
  // Forged: one character of the signature changed (the last one before any padding).
  const flip = (v) => {
    const i = v.replace(/=+$/, '').length - 1;
    return v.slice(0, i) + (v[i] === 'a' ? 'b' : 'a') + v.slice(i + 1);
  };
  const forged = Object.fromEntries(Object.entries(good).map(([k, v]) =>
    [k, /signature|token/i.test(k) ? flip(v) : v]));
  variants.push(['forged signature', body, forged]);
  for (const [what, b, h] of variants) {
    const r = await deliver(src.source_id, b, h);
    check(r.status === 401 && r.json.error.code === 'delivery_refused' && !('reason' in r.json.error),
      `${name}: ${what} is refused with a generic 401: ${r.status} ${JSON.stringify(r.json)}`);
  }
  const big = JSON.stringify({ pad: 'x'.repeat(200000) });
  const rb = await deliver(src.source_id, big, await sign(key, big, { id: `${name}-big`, ts: now() }));
  check(rb.status === 413, `${name}: an oversized body is 413: ${rb.status}`);
  check((await inbox(t1, agent)).length === before + 1, `${name}: no refused variant wrote an event`);
  const rc = await receipts(t1, src.source_id);
  const count = (o) => rc.filter((x) => x.outcome === o).length;
  check(count('accepted') === 1 && count('duplicate') === 1 && count('refused') === variants.length + 1,
    `${name}: the receipt log has every delivery: ${JSON.stringify(rc.map((x) => [x.outcome, x.reason]))}`);
  check(rc.some((x) => x.reason === 'signature_mismatch' || x.reason === 'token_mismatch'), `${name}: a refusal says why`);
  return { src, key, body, good };
}

// ---- the senders ----

const sw = await scheme('standard-webhooks', {
  agent: 'openai-agent',
  sign: (k, b, o) => signHeaders('standard-webhooks', k, b, o),
});
await scheme('github', { agent: 'gh-agent', sign: (k, b, o) => signHeaders('github', k, b, o) });
await scheme('stripe', {
  agent: 'billing',
  secret: `whsec_${Buffer.from('stripe dashboard secret 32 bytes').toString('base64')}`,
  sign: (k, b, o) => signHeaders('stripe', k, b, o),
});
// A2A push notifications with a shared token (X-A2A-Notification-Token), the task id as the
// delivery id.
await scheme('token', {
  agent: 'a2a-agent',
  options: { id_pointer: '/id' },
  sign: async (k, b, o) => ({ 'X-A2A-Notification-Token': k, 'X-Unused': o.id }),
});
// Generic HMAC: hex SHA-256 of "timestamp.body" with a prefix, as many senders do it.
const hmacSrc = await addSource(t1, {
  name: 'generic', scheme: 'hmac', agents: ['generic-agent'],
  options: { header: 'X-Signature', prefix: 'sha256=', timestamp_header: 'X-Timestamp', id_header: 'X-Delivery' },
});
{
  const body = '{"hello":"world"}';
  const sig = (k, ts, b) => `sha256=${createHmac('sha256', k).update(`${ts}.${b}`).digest('hex')}`;
  const ts = now();
  const ok = await deliver(hmacSrc.source_id, body, { 'X-Signature': sig(hmacSrc.secret, ts, body), 'X-Timestamp': String(ts), 'X-Delivery': 'g1' });
  check(ok.status === 200 && !ok.json.duplicate, `hmac: accepted: ${ok.status}`);
  const old = await deliver(hmacSrc.source_id, body, { 'X-Signature': sig(hmacSrc.secret, ts - 900, body), 'X-Timestamp': String(ts - 900), 'X-Delivery': 'g2' });
  check(old.status === 401, `hmac: an old timestamp is refused: ${old.status}`);
  const swapped = await deliver(hmacSrc.source_id, '{"hello":"mars"}', { 'X-Signature': sig(hmacSrc.secret, ts, body), 'X-Timestamp': String(ts), 'X-Delivery': 'g3' });
  check(swapped.status === 401, `hmac: a swapped body is refused: ${swapped.status}`);
  check((await inbox(t1, 'generic-agent')).length === 1, 'hmac: exactly one event');
}

// ---- rotation: both secrets during the overlap, only the new one after it ----
{
  const rot = await api('POST', `/api/v1/admin/sources/${sw.src.source_id}/rotate`, t1, { overlap_s: 2 });
  check(rot.status === 200 && rot.json.secret && rot.json.secret !== sw.key && rot.json.previous_secret_valid_until,
    `rotate: a new secret, the old one valid until ${rot.json && rot.json.previous_secret_valid_until}`);
  const b1 = JSON.stringify({ type: 'r', n: 'old' });
  const b2 = JSON.stringify({ type: 'r', n: 'new' });
  const oldOk = await deliver(sw.src.source_id, b1, await signHeaders('standard-webhooks', sw.key, b1, { id: 'rot-1' }));
  const newOk = await deliver(sw.src.source_id, b2, await signHeaders('standard-webhooks', rot.json.secret, b2, { id: 'rot-2' }));
  check(oldOk.status === 200 && newOk.status === 200, `rotate: both secrets verify during the overlap: ${oldOk.status} ${newOk.status}`);
  const until = Date.parse(rot.json.previous_secret_valid_until);
  while (Date.now() <= until + 50) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const b3 = JSON.stringify({ type: 'r', n: 'late' });
  const oldLate = await deliver(sw.src.source_id, b3, await signHeaders('standard-webhooks', sw.key, b3, { id: 'rot-3' }));
  const newLate = await deliver(sw.src.source_id, b3, await signHeaders('standard-webhooks', rot.json.secret, b3, { id: 'rot-4' }));
  check(oldLate.status === 401 && newLate.status === 200, `rotate: after the overlap only the new one: ${oldLate.status} ${newLate.status}`);
  const rc = await receipts(t1, sw.src.source_id);
  check(rc.some((x) => x.reason === 'ok_previous_secret'), 'rotate: the receipt says the old secret verified');
}

// ---- routing by JSON pointer, limited by the selector ----
{
  const src = await addSource(t1, { name: 'routed', scheme: 'standard-webhooks', agent_pointer: '/metadata/agent', agent_selector: 'support-*' });
  const send = async (agent, id) => {
    const b = JSON.stringify({ type: 'x', metadata: { agent } });
    return deliver(src.source_id, b, await signHeaders('standard-webhooks', src.secret, b, { id }));
  };
  const ok = await send('support-7', 'p1');
  check(ok.status === 200 && ok.json.events[0].agent_id === 'support-7', `pointer: routed to support-7: ${JSON.stringify(ok.json)}`);
  const no = await send('billing', 'p2');
  check(no.status === 422 && no.json.error.code === 'delivery_unroutable', `pointer: an agent outside the selector is 422: ${no.status}`);
  check((await inbox(t1, 'billing')).length === 1, 'pointer: nothing reached the agent outside the selector');
  const bad = await api('POST', '/api/v1/admin/sources', t1, { name: 'x', scheme: 'github', agent_pointer: '/a' });
  check(bad.status === 400 && bad.json.error.code === 'invalid_source', `a pointer without a selector is 400: ${bad.status}`);
  const both = await api('POST', '/api/v1/admin/sources', t1, { name: 'x', scheme: 'github', agents: ['a'], agent_pointer: '/a', agent_selector: '*' });
  check(both.status === 400, `agents and a pointer together are 400: ${both.status}`);
  const stripeNoSecret = await api('POST', '/api/v1/admin/sources', t1, { name: 'x', scheme: 'stripe', agents: ['a'] });
  check(stripeNoSecret.status === 400, `a stripe source needs the sender's secret: ${stripeNoSecret.status}`);
}

// ---- tenant isolation ----
{
  const other = await api('GET', `/api/v1/admin/sources/${sw.src.source_id}`, t2);
  check(other.status === 404, `another tenant's admin cannot see the source: ${other.status}`);
  const rr = await api('GET', `/api/v1/admin/sources/${sw.src.source_id}/receipts`, t2);
  check(rr.status === 404, `another tenant's admin cannot read its receipts: ${rr.status}`);
  const rm = await api('DELETE', `/api/v1/admin/sources/${sw.src.source_id}`, t2);
  check(rm.status === 404, `another tenant's admin cannot delete it: ${rm.status}`);
  const list = await api('GET', '/api/v1/admin/sources', t2);
  check(list.status === 200 && list.json.sources.length === 0, 'another tenant lists none of them');
  const t2src = await addSource(t2, { name: 'mine', scheme: 'github', agents: ['openai-agent'] });
  const b = JSON.stringify({ n: 't2' });
  const r = await deliver(t2src.source_id, b, await signHeaders('github', t2src.secret, b, { id: 'iso-1' }));
  check(r.status === 200, `tenant 2's source accepts: ${r.status}`);
  check((await inbox(t2, 'openai-agent')).length === 1, "tenant 2's delivery is in tenant 2's agent");
  check(!(await inbox(t1, 'openai-agent')).some((e) => e.payload.source_id === t2src.source_id),
    "tenant 1's agent of the same name got nothing");
}

// ---- an unknown source, and the rate limit ----
{
  const r = await deliver('src_0000000000000000000000000X', '{}', {});
  check(r.status === 404, `an unknown source is 404: ${r.status}`);
  const src = await addSource(t1, { name: 'flood', scheme: 'github', agents: ['flood'] });
  let limited = null;
  for (let i = 0; i < 400 && !limited; i++) {
    const res = await deliver(src.source_id, '{}', {});
    if (res.status === 429) {
      limited = res;
    }
  }
  check(limited && Number(limited.headers.get('retry-after')) >= 1, 'a flood of one source gets 429 with Retry-After');
  const other = await deliver(hmacSrc.source_id, '{}', {});
  check(other.status === 401, `another source is not limited by it: ${other.status}`);
}

// ---- per-source metrics ----
{
  const m = await (await fetch(`${url}/metrics`)).text();
  const line = m.split('\n').find((l) => l.startsWith(`roost_ingest_deliveries_total{tenant="t1",source="${sw.src.source_id}",outcome="accepted"}`));
  check(line && Number(line.split(' ').pop()) >= 3, `metrics count the source's accepted deliveries: ${line}`);
}

// ---- delete ----
{
  const rm = await api('DELETE', `/api/v1/admin/sources/${hmacSrc.source_id}`, t1);
  check(rm.status === 200, `delete: ${rm.status}`);
  const r = await deliver(hmacSrc.source_id, '{}', {});
  check(r.status === 404, `a deleted source's URL is 404: ${r.status}`);
}

console.log(`${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
