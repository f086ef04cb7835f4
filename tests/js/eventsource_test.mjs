// SPDX-License-Identifier: MIT
// roostd's SSE stream through the npm `eventsource` package (a WHATWG EventSource for Node), with
// the token in the Authorization header: the connect-time inbox_updated carries the head, a
// publish (made with fetch) brings an inbox_updated with the new cursor_hint and id, the data is
// exactly {"cursor_hint":N}, and a missing or bad token fails the connection with 401 instead of
// retrying forever. Env: ROOST_URL (roostd's base URL), ROOST_TOKEN (read + publish on js.*).
import { EventSource } from 'eventsource';
import { check, run, waitUntil } from './check.mjs';

const url = process.env.ROOST_URL;
const token = process.env.ROOST_TOKEN;

// Polls `cond` every 10 ms until it holds or the deadline passes.
function isPing(ev, head) {
  let data;
  try {
    data = JSON.parse(ev.data);
  } catch {
    return false;
  }
  return (
    ev.data === `{"cursor_hint":${head}}` &&
    Object.keys(data).length === 1 &&
    data.cursor_hint === head
  );
}

function withToken(tok) {
  return (input, init) =>
    fetch(input, { ...init, headers: { ...init.headers, Authorization: `Bearer ${tok}` } });
}

async function publish(agent) {
  const res = await fetch(`${url}/api/v1/events`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ recipients: [agent], payload: { from: 'eventsource_test' } }),
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
  const agent = 'js.es';
  const events = [];
  const es = new EventSource(`${url}/api/v1/agents/${agent}/subscribe`, {
    fetch: withToken(token),
  });
  for (const type of ['inbox_updated', 'heartbeat']) {
    es.addEventListener(type, (e) => events.push({ type, id: e.lastEventId, data: e.data }));
  }
  let errors = 0;
  es.onerror = () => errors++;

  // At once: the head (0, the agent never received anything).
  check(
    await waitUntil(() => events.some((e) => e.type === 'inbox_updated'), 10000),
    'connect-time inbox_updated within 10 s',
  );
  check(es.readyState === EventSource.OPEN, 'stream open');
  check(events.length > 0 && isPing(events[0], 0) && events[0].id === '0', 'first event is head 0');

  // A publish: an inbox_updated with the new head, as cursor_hint and as id.
  for (let round = 0; round < 3; round++) {
    const seq = await publish(agent);
    check(
      await waitUntil(
        () => events.some((e) => e.type === 'inbox_updated' && isPing(e, seq)),
        10000,
      ),
      `inbox_updated with cursor_hint ${seq} within 10 s`,
    );
    const ev = events.find((e) => e.type === 'inbox_updated' && isPing(e, seq));
    check(ev && ev.id === String(seq), `id ${seq}`);
  }
  check(errors === 0, 'no error events on a healthy stream');
  es.close();

  // No token and a bad token: the connection fails (401) and is not retried.
  for (const [name, tok] of [
    ['no token', null],
    ['bad token', `${token}x`],
  ]) {
    let failure = null;
    const bad = new EventSource(
      `${url}/api/v1/agents/${agent}/subscribe`,
      tok ? { fetch: withToken(tok) } : {},
    );
    bad.onerror = (e) => {
      failure = e;
    };
    check(await waitUntil(() => failure !== null, 10000), `${name}: error event`);
    check(failure && failure.code === 401, `${name}: 401 (got ${failure && failure.code})`);
    check(bad.readyState === EventSource.CLOSED, `${name}: closed, not retrying`);
    bad.close();
  }

}

run(main);
