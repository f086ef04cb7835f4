// SPDX-License-Identifier: MIT
// roost.js: Roost agents and producers in the browser, one dependency-free ES module.
//
//   import Roost from '/sdk/roost.js';
//   const agent = Roost.agent({server: '', agentId: 'inbox.alice', getToken, handler});
//   agent.addEventListener('statechange', () => console.log(agent.state));
//   agent.start();
//   await Roost.publish({server: '', getToken}, {recipients: ['inbox.alice'], payload: {x: 1}});
//
// One stream per agent per browser: every tab of the origin running the same agent shares it.
// A SharedWorker (this same file, loaded as a module worker) holds the stream where the browser
// allows it; otherwise the leader tab holds it. The leader is elected with Web Locks, runs the
// handlers (so two tabs never run one event) and tells the others its state over BroadcastChannel.
// When the leader's tab closes, its lock is released and another tab leads within milliseconds.
//
// Never missing work: the agent pulls before it trusts the stream, and again on every wake signal
// (a ping, online, visibilitychange to visible, pageshow, a clock jump after sleep, a missed
// heartbeat); while the stream is down it polls, adaptively. Its cursor and the ids of events
// whose handler finished (but whose ack may not have reached roostd) live in IndexedDB, so a new
// leader acks those instead of running them again. The stream is opened with a single-use ticket
// (POST …/subscribe/ticket); everything else goes through fetch with an Authorization header.

/** Version of this module; roostd serves the one it was built with (X-Roost-Version). */
export const VERSION = '0.1.0';

/**
 * @typedef {object} RoostEvent An inbox event as claimed (doc/API.md, "Event object").
 * @property {string} event_id
 * @property {string} agent_id
 * @property {number} sequence_number
 * @property {object|null} payload
 * @property {number} attempts
 * @property {string} lease_token
 * @property {string} claim_expires_at
 * @property {number} priority
 * @property {string|null} correlation_id
 * @property {string} created_at
 */

/**
 * Returns a bearer token (a JWT). Called when a token is first needed, when the last one
 * expires within 5 s (by its exp claim), and with `{refresh: true}` when roostd refused the last
 * one (expired, revoked): return a fresh one then.
 * @callback GetToken
 * @param {{refresh: boolean}} hint
 * @returns {string|Promise<string>}
 */

/**
 * @typedef {object} AgentOptions
 * @property {string} server Base URL of roostd ('' = the page's origin).
 * @property {string} agentId Agent id ([A-Za-z0-9._-]{1,128}).
 * @property {GetToken} getToken Token with agent:<id>:consume.
 * @property {(event: RoostEvent) => (unknown|Promise<unknown>)} handler Resolves: ack. Throws:
 *   release with backoff (the event comes back later; quarantined after claim.max_attempts).
 * @property {number} [concurrency=1] Handlers running at once.
 * @property {number} [lease_s=30] Lease asked for per claim; extended at half-life while the
 *   handler runs.
 * @property {number} [heartbeat_s=30] roostd's sse.heartbeat_s: no event for two heartbeats
 *   means the stream is dead (reconnect and pull).
 * @property {(state: object, cursor: number) => void} [onState] Called with the agent's state
 *   document after the cursor fell behind retention (410): the events in between are gone.
 * @property {boolean} [sharedWorker=true] Hold the stream in a SharedWorker when possible.
 */

/** @typedef {'streaming'|'polling'|'offline'|'stopped'} AgentState */

const ID_RE = /^[A-Za-z0-9._-]{1,128}$/;
const MAX_BACKOFF_MS = 30000;
const PROCESSED_KEEP = 1000;

const inSharedWorker =
  typeof SharedWorkerGlobalScope !== 'undefined' && globalThis instanceof SharedWorkerGlobalScope;

/** An error answer of roostd (or a transport failure: status 0). */
export class RoostError extends Error {
  /**
   * @param {number} status HTTP status, 0 when no answer came.
   * @param {string} code error.code of the body ('network' without an answer).
   * @param {string} message
   * @param {object|null} body
   */
  constructor(status, code, message, body = null) {
    super(message);
    this.name = 'RoostError';
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

function randomId(prefix) {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return prefix + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

function sleep(ms, signal) {
  return new Promise((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(t);
      resolve();
    });
  });
}

/** Seconds until a JWT's exp, or Infinity when it cannot be read (roostd will say). */
function tokenTtlS(token) {
  try {
    const part = token.split('.')[1].replace(/-/g, '+').replace(/_/g, '/');
    const claims = JSON.parse(atob(part + '='.repeat((4 - (part.length % 4)) % 4)));
    return typeof claims.exp === 'number' ? claims.exp - Date.now() / 1000 : Infinity;
  } catch {
    return Infinity;
  }
}

/**
 * A fetch client for roostd's REST API with the bearer token in Authorization: a refused token
 * (401) is refreshed through getToken once, and a token about to expire is refreshed first.
 */
export class Client {
  /** @param {{server: string, getToken: GetToken}} opts */
  constructor({ server, getToken }) {
    if (typeof getToken !== 'function') {
      throw new TypeError('getToken must be a function');
    }
    this.server = String(server ?? '').replace(/\/+$/, '');
    this.getToken = getToken;
    /** @type {string|null} */
    this.token = null;
  }

  /** The current token, refreshed when `refresh` or when it expires within 5 s. */
  async bearer(refresh = false) {
    if (refresh || this.token === null || tokenTtlS(this.token) < 5) {
      const t = await this.getToken({ refresh });
      if (typeof t !== 'string' || t === '') {
        throw new RoostError(0, 'no_token', 'getToken returned no token');
      }
      this.token = t;
    }
    return this.token;
  }

  /**
   * One request; JSON in, JSON out.
   * @param {string} method
   * @param {string} path starting with /
   * @param {object} [body]
   * @param {{keepalive?: boolean, signal?: AbortSignal}} [opts]
   * @returns {Promise<any>} the parsed answer
   * @throws {RoostError}
   */
  async request(method, path, body, opts = {}) {
    for (let attempt = 0; ; attempt++) {
      const token = await this.bearer(attempt > 0);
      /** @type {Response} */
      let res;
      try {
        res = await fetch(this.server + path, {
          method,
          headers: {
            Authorization: `Bearer ${token}`,
            ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
          },
          body: body !== undefined ? JSON.stringify(body) : undefined,
          cache: 'no-store',
          keepalive: !!opts.keepalive,
          signal: opts.signal,
        });
      } catch (err) {
        throw new RoostError(0, 'network', `network error: ${err?.message ?? err}`);
      }
      if (res.status === 401 && attempt === 0) {
        continue; // refused token: ask getToken for a fresh one, once
      }
      const text = await res.text();
      let json = null;
      try {
        json = text ? JSON.parse(text) : null;
      } catch {
        json = null;
      }
      if (!res.ok) {
        const e = json?.error ?? {};
        throw new RoostError(res.status, e.code ?? `http_${res.status}`, e.message ?? text, json);
      }
      return json;
    }
  }

  get(path, opts) {
    return this.request('GET', path, undefined, opts);
  }

  post(path, body = {}, opts) {
    return this.request('POST', path, body, opts);
  }
}

/**
 * Publishes one event (or {events: [...]}) with POST /api/v1/events. An idempotency_key is
 * added when the event has none, so the retries of a 503 or a lost answer never publish twice.
 * @param {{server: string, getToken: GetToken}} conn
 * @param {object} event {recipients, payload, priority, correlation_id, delay_s, ttl_s, ...}
 * @returns {Promise<{events: {event_id: string, agent_id: string, sequence_number: number}[]}>}
 */
export async function publish(conn, event) {
  const client = conn instanceof Client ? conn : new Client(conn);
  const body = { ...event };
  if (Array.isArray(body.events)) {
    body.events = body.events.map((e) => ({ idempotency_key: randomId('rk_'), ...e }));
  } else if (body.idempotency_key == null) {
    body.idempotency_key = randomId('rk_');
  }
  for (let attempt = 0; ; attempt++) {
    try {
      return await client.post('/api/v1/events', body);
    } catch (err) {
      const retryable = err instanceof RoostError && (err.status === 0 || err.status === 503);
      if (!retryable || attempt >= 3) {
        throw err;
      }
      await sleep(250 * 2 ** attempt);
    }
  }
}

// ---- the agent logic, one copy for every platform ----

/**
 * Thrown (or returned) by a handler: try this event again later without counting a failure,
 * after `retryAfterS` seconds (default: 1 s doubling per attempt up to 300 s). From attempt
 * `tempfailMax` (10) on it counts as a failure, so a handler that only ever says "later" ends
 * quarantined (the C agent's ROOST_AGENT_RETRY_LATER).
 */
export class RetryLater extends Error {
  /**
   * @param {string} [message]
   * @param {{retryAfterS?: number}} [opts]
   */
  constructor(message = 'retry later', opts = {}) {
    super(message);
    this.name = 'RetryLater';
    this.retryAfterS = opts.retryAfterS;
  }
}

/** Thrown (or returned) by a handler: never retry this event; roostd quarantines it now. */
export class Quarantine extends Error {
  /** @param {string} [message] */
  constructor(message = 'quarantined by the handler') {
    super(message);
    this.name = 'Quarantine';
  }
}

/**
 * The agent logic shared by every platform (one copy): pull before trusting the stream, claim
 * up to `concurrency`, run the handler with its lease extended at half-life, record the id as
 * processed before the ack (batched), release on failure (backoff, retry-later, quarantine),
 * 410 → onState. The platform adapter gives it a store ({load, update}: the cursor, processed
 * ids and, where the store keeps them, outstanding leases), tells it when the stream is up and
 * kicks it on wake signals; the engine tells the adapter its state, syncs and errors.
 * @internal
 */
export class AgentEngine {
  /**
   * @param {object} p
   * @param {Client} p.client
   * @param {string} p.agentId
   * @param {string} p.consumer
   * @param {Required<Pick<AgentOptions, 'concurrency'|'lease_s'|'handler'>> & AgentOptions} p.opts
   * @param {{load: () => Promise<any>, update: (fn: (v: any) => any) => Promise<void>,
   *   tracksLeases?: boolean}} p.store
   * @param {(state: AgentState) => void} p.onState
   * @param {(cursor: number, lastSync: Date) => void} p.onSync
   * @param {(err: unknown) => void} p.onError
   * @param {number} [p.longPoll_s] wait_s of claims while the stream is down (0: sleep-poll)
   * @param {number} [p.longPollAfterMs] how long the stream must have been down first (3000)
   * @param {number} [p.ackDelayMs] how long an ack waits for others to share its request
   */
  constructor(p) {
    Object.assign(this, p);
    this.longPoll_s ??= 0;
    this.longPollAfterMs ??= 3000;
    this.ackDelayMs ??= 0;
    this.cursor = 0;
    this.processed = new Set();
    this.running = new Map(); // event_id -> promise
    this.streamUp = false;
    this.kicked = false;
    this.kickWaiter = null;
    this.idleRounds = 0;
    this.active = false;
    this.lastSync = null;
    this.ackQueue = [];
    this.ackTimer = null;
  }

  path(suffix) {
    return `/api/v1/agents/${encodeURIComponent(this.agentId)}${suffix}`;
  }

  kick() {
    this.kicked = true;
    const w = this.kickWaiter;
    this.kickWaiter = null;
    w?.();
  }

  /** Waits for a kick, or ms (Infinity: only a kick). */
  waitKick(ms) {
    if (this.kicked) {
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const t = Number.isFinite(ms) ? setTimeout(resolve, ms) : null;
      this.kickWaiter = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  setStreamUp(up) {
    if (!up && this.streamUp) {
      this.streamDownSince = Date.now();
    }
    this.streamUp = up;
    if (up) {
      this.idleRounds = 0;
    }
    this.kick();
  }

  /** Loads the durable record: call before run(). */
  async load() {
    const rec = await this.store.load();
    this.cursor = rec.cursor ?? 0;
    this.processed = new Set(rec.processed ?? []);
    return rec;
  }

  /**
   * Leases a previous process left (a store that keeps them): a processed event is acked with
   * its old lease (its ack was lost), any other released at once (reason shutdown, no attempt
   * counted) instead of waiting for the lease to expire.
   */
  async recover(leases) {
    for (const [eventId, leaseToken] of Object.entries(leases ?? {})) {
      const id = encodeURIComponent(eventId);
      const route = this.processed.has(eventId) ? 'ack' : 'release';
      const body = route === 'ack' ? { lease_token: leaseToken }
        : { lease_token: leaseToken, reason: 'shutdown' };
      try {
        await this.client.post(this.path(`/inbox/${id}/${route}`), body);
      } catch (err) {
        if (!(err instanceof RoostError && (err.status === 409 || err.status === 404))) {
          throw err; // network: keep them for the next try
        }
      }
      await this.store.update((v) => {
        const l = { ...(v.leases ?? {}) };
        delete l[eventId];
        return { ...v, leases: l };
      });
    }
  }

  /** The leader's loop: runs until stop(). */
  async run() {
    this.active = true;
    this.streamDownSince = Date.now();
    let failures = 0;
    while (this.active) {
      this.kicked = false;
      try {
        await this.syncOnce();
        failures = 0;
        this.onState(this.streamUp ? 'streaming' : 'polling');
      } catch (err) {
        failures++;
        if (err instanceof RoostError && err.status === 0) {
          this.onState('offline');
        } else {
          this.onError(err);
        }
      }
      if (!this.active) {
        break;
      }
      // Streaming: a ping or another wake signal says when (the heartbeat watchdog covers a
      // silent stream). Otherwise poll (a long poll where the platform asks for it), backing
      // off while nothing comes and on failures.
      // Long polls only once the stream has had its chance (a stream about to come up would
      // leave a long poll waiting in flight for nothing).
      if (failures === 0 && !this.streamUp && this.longPoll_s > 0 &&
          Date.now() - this.streamDownSince > this.longPollAfterMs) {
        try {
          await this.longPoll();
        } catch (err) {
          if (!this.active) {
            break; // stopped: the long poll was aborted
          }
          failures++;
          this.onState(err instanceof RoostError && err.status === 0 ? 'offline' : 'polling');
        }
        if (failures === 0) {
          continue;
        }
      }
      const idle = Math.min(this.idleRounds, 5);
      const wait = failures > 0
        ? Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(failures, 6))
        : this.streamUp ? Infinity : Math.min(MAX_BACKOFF_MS, 1000 * 2 ** idle);
      await this.waitKick(wait);
    }
  }

  stop() {
    this.active = false;
    this.pollCtrl?.abort(); // what it may still claim comes back through the caller's release-all
    this.kick();
  }

  /** One claim with wait_s (the stream is down): what it brings runs like a pull's. */
  async longPoll() {
    while (this.running.size >= this.opts.concurrency && this.active) {
      await Promise.race(this.running.values());
    }
    if (!this.active || this.kicked) {
      return;
    }
    const free = this.opts.concurrency - this.running.size;
    this.pollCtrl = new AbortController();
    try {
      const r = await this.client.post(this.path('/inbox/claim'), {
        limit: free, lease_s: this.opts.lease_s, consumer: this.consumer, wait_s: this.longPoll_s,
      }, { signal: this.pollCtrl.signal });
      await this.started(r.events);
    } finally {
      this.pollCtrl = null;
    }
  }

  /** Starts the handlers of claimed events (or, after stop(), gives them back at once). */
  async started(events) {
    if (events.length === 0) {
      return;
    }
    if (this.store.tracksLeases) {
      await this.store.update((v) => {
        const l = { ...(v.leases ?? {}) };
        for (const ev of events) {
          l[ev.event_id] = ev.lease_token;
        }
        return { ...v, leases: l };
      });
    }
    for (const ev of events) {
      if (!this.active) {
        await this.release(ev, { reason: 'shutdown' });
        continue;
      }
      const p = this.runEvent(ev).finally(() => {
        this.running.delete(ev.event_id);
        this.kick(); // a slot is free: claim again
      });
      this.running.set(ev.event_id, p);
    }
  }

  /** One pull: learn the head (410 → state), then claim until nothing is claimable. */
  async syncOnce() {
    let head;
    try {
      const r = await this.client.get(this.path(`/inbox?after_cursor=${this.cursor}&limit=1`));
      head = r.head;
    } catch (err) {
      if (err instanceof RoostError && err.status === 410) {
        const st = await this.client.get(this.path('/state'));
        this.opts.onState?.(st.state, st.cursor);
        head = st.cursor;
      } else if (err instanceof RoostError && err.code === 'invalid_cursor') {
        head = err.body?.error?.head ?? 0; // the store went back in time: start again
      } else {
        throw err;
      }
    }
    let claimed = 0;
    let lastSeq = 0; // the highest sequence number claimed in this sync
    for (;;) {
      const free = this.opts.concurrency - this.running.size;
      if (free <= 0) {
        await Promise.race(this.running.values());
        continue;
      }
      if (!this.active) {
        return;
      }
      const r = await this.client.post(this.path('/inbox/claim'),
        { limit: free, lease_s: this.opts.lease_s, consumer: this.consumer });
      for (const ev of r.events) {
        claimed++;
        lastSeq = Math.max(lastSeq, ev.sequence_number ?? 0);
      }
      await this.started(r.events);
      if (r.events.length === 0 || (!r.has_more && r.events.length < free)) {
        break;
      }
    }
    this.idleRounds = claimed > 0 ? 0 : this.idleRounds + 1;
    // What this sync claimed is behind the cursor too: otherwise retention, deleting the rows
    // this agent itself just completed, would answer the next sync 410 and force a needless
    // second resync (onState) while the cursor still named the head learned before the claims.
    if (head !== undefined && lastSeq > head) {
      head = lastSeq;
    }
    if (head !== undefined && head !== this.cursor) {
      this.cursor = head;
      await this.store.update((v) => ({ ...v, cursor: head }));
    }
    this.lastSync = new Date();
    this.onSync(this.cursor, this.lastSync);
  }

  /** Runs the handler for one claimed event (or acks one whose handler already finished). */
  async runEvent(ev) {
    const known = (await this.store.load()).processed ?? [];
    if (this.processed.has(ev.event_id) || known.includes(ev.event_id)) {
      await this.ack(ev);
      return;
    }
    const id = encodeURIComponent(ev.event_id);
    // Lease extension at half-life while the handler runs.
    const halfMs = Math.max(500, (this.opts.lease_s * 1000) / 2);
    let extender = null;
    const extend = () => {
      extender = setTimeout(() => {
        this.client.post(this.path(`/inbox/${id}/extend`),
          { lease_token: ev.lease_token, lease_s: this.opts.lease_s })
          .then(extend, (err) => {
            if (!(err instanceof RoostError && err.status === 409)) {
              extend(); // transient: try again at the next half-life
            }
          });
      }, halfMs);
    };
    extend();
    let result;
    let failure = null;
    try {
      result = await this.opts.handler(ev);
    } catch (err) {
      failure = err;
    } finally {
      clearTimeout(extender);
    }
    if (failure === null && (result instanceof RetryLater || result instanceof Quarantine)) {
      failure = result; // returned instead of thrown: the same
    }
    if (failure === null) {
      // Done, durably, before the ack: if the ack is lost (or this agent stopped and released
      // the lease meanwhile), whoever claims the event next acks it without running it again.
      this.processed.add(ev.event_id);
      await this.store.update((v) => ({
        ...v, processed: [...(v.processed ?? []), ev.event_id].slice(-PROCESSED_KEEP),
      }));
      if (this.active) {
        await this.ack(ev);
      }
      return;
    }
    if (!this.active) {
      return; // stopping: release-all gives it back
    }
    const attempts = ev.attempts ?? 1;
    const message = String(failure?.message ?? failure).slice(0, 4096);
    if (failure instanceof Quarantine) {
      await this.release(ev, { reason: 'poison', error: message });
    } else if (failure instanceof RetryLater) {
      const delay_s = failure.retryAfterS ?? Math.min(300, 2 ** Math.min(attempts - 1, 9));
      const counts = attempts >= (this.opts.tempfailMax ?? 10);
      await this.release(ev, { reason: counts ? 'transient' : 'shutdown', delay_s, error: message });
    } else {
      this.onError(failure);
      const delay_s = Math.min(300, 2 ** Math.min(attempts, 8));
      await this.release(ev, { reason: 'transient', delay_s, error: message });
    }
  }

  async forgetLease(eventIds) {
    if (this.store.tracksLeases && eventIds.length > 0) {
      await this.store.update((v) => {
        const l = { ...(v.leases ?? {}) };
        for (const id of eventIds) {
          delete l[id];
        }
        return { ...v, leases: l };
      });
    }
  }

  async release(ev, body) {
    try {
      await this.client.post(this.path(`/inbox/${encodeURIComponent(ev.event_id)}/release`),
        { lease_token: ev.lease_token, ...body });
    } catch (err) {
      if (!(err instanceof RoostError && err.status === 409)) {
        this.onError(err);
        return; // the lease expires on its own; a store that keeps it releases it at restart
      }
    }
    await this.forgetLease([ev.event_id]);
  }

  /**
   * Acks one event: acks finishing within ackDelayMs of each other share one request (the batch
   * route). Retried while the answer does not come (a lost answer: a repeated ack with the same
   * lease is 200); 409 means the lease was lost, and the processed id covers it.
   */
  ack(ev) {
    return new Promise((resolve) => {
      this.ackQueue.push({ ev, resolve });
      if (this.ackTimer === null) {
        this.ackTimer = setTimeout(() => this.flushAcks(), this.ackDelayMs);
      }
    });
  }

  async flushAcks() {
    this.ackTimer = null;
    const batch = this.ackQueue.splice(0, 100);
    if (this.ackQueue.length > 0) {
      this.ackTimer = setTimeout(() => this.flushAcks(), 0);
    }
    const done = [];
    for (let attempt = 0; ; attempt++) {
      try {
        if (batch.length === 1) {
          const ev = batch[0].ev;
          await this.client.post(this.path(`/inbox/${encodeURIComponent(ev.event_id)}/ack`),
            { lease_token: ev.lease_token });
        } else {
          const r = await this.client.post(this.path('/inbox/ack'),
            { acks: batch.map(({ ev }) => ({ event_id: ev.event_id, lease_token: ev.lease_token })) });
          for (const res of r.results ?? []) {
            if (res.error && res.error.code !== 'lease_mismatch') {
              this.onError(new RoostError(409, res.error.code, res.error.message, res));
            }
          }
        }
        done.push(...batch.map(({ ev }) => ev.event_id));
        break;
      } catch (err) {
        const transient = err instanceof RoostError && (err.status === 0 || err.status >= 500 ||
          err.status === 429);
        if (transient && attempt < 5 && this.active) {
          await sleep(Math.min(MAX_BACKOFF_MS, 250 * 2 ** attempt));
          continue;
        }
        if (err instanceof RoostError && err.status === 409) {
          done.push(...batch.map(({ ev }) => ev.event_id));
        } else {
          this.onError(err);
        }
        break;
      }
    }
    await this.forgetLease(done).catch((err) => this.onError(err));
    for (const { resolve } of batch) {
      resolve();
    }
  }
}

// ---- IndexedDB: cursor and processed ids, shared by the tabs of the origin ----

const DB_NAME = 'roost';
const DB_STORE = 'agents';

function idbOpen() {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(DB_NAME, 1);
    req.onupgradeneeded = () => req.result.createObjectStore(DB_STORE);
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function idbDo(db, mode, fn) {
  return new Promise((resolve, reject) => {
    const tx = db.transaction(DB_STORE, mode);
    const req = fn(tx.objectStore(DB_STORE));
    tx.oncomplete = () => resolve(req?.result);
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error);
  });
}

/** The durable part of an agent: {cursor, processed: [event_id, ...]}. */
class AgentRecord {
  constructor(key) {
    this.key = key;
    this.db = null;
  }

  async load() {
    try {
      this.db ??= await idbOpen();
      const v = await idbDo(this.db, 'readonly', (s) => s.get(this.key));
      return { cursor: v?.cursor ?? 0, processed: v?.processed ?? [] };
    } catch {
      return { cursor: 0, processed: [] }; // private mode without IndexedDB: memory only
    }
  }

  /** Read-modify-write in one transaction, so two tabs never lose each other's ids. */
  async update(fn) {
    try {
      this.db ??= await idbOpen();
      await new Promise((resolve, reject) => {
        const tx = this.db.transaction(DB_STORE, 'readwrite');
        const store = tx.objectStore(DB_STORE);
        const get = store.get(this.key);
        get.onsuccess = () => {
          const v = get.result ?? { cursor: 0, processed: [] };
          store.put(fn(v), this.key);
        };
        tx.oncomplete = resolve;
        tx.onerror = () => reject(tx.error);
      });
    } catch {
      // Without IndexedDB the agent still works; it only forgets across reloads.
    }
  }
}

// ---- the stream: one EventSource opened with single-use tickets ----

/**
 * Holds one subscribe stream for one agent, reconnecting with a fresh ticket (never reusing one:
 * EventSource's own reconnect is stopped) and watching heartbeats. Runs in the SharedWorker or in
 * the leader tab. emit() gets {type: 'ping', head} for inbox_updated and heartbeats,
 * {type: 'stream', up} on changes and {type: 'wake', why} when the stream was found dead.
 */
class StreamHub {
  constructor({ server, agentId, heartbeat_s, needTicket, emit }) {
    this.server = server;
    this.agentId = agentId;
    this.heartbeatMs = Math.max(1, heartbeat_s ?? 30) * 1000;
    this.needTicket = needTicket;
    this.emit = emit;
    this.es = null;
    this.up = false;
    this.stopped = false;
    this.connecting = false;
    this.failures = 0;
    this.lastSeen = 0;
    this.retryTimer = null;
    this.watchdog = setInterval(() => this.check(), 500);
  }

  setUp(up) {
    if (this.up !== up) {
      this.up = up;
      this.emit({ type: 'stream', up });
    }
  }

  async connect() {
    if (this.stopped || this.connecting || this.es) {
      return;
    }
    this.connecting = true;
    clearTimeout(this.retryTimer);
    let ticket = null;
    try {
      ticket = await this.needTicket();
    } catch {
      ticket = null;
    }
    this.connecting = false;
    if (this.stopped) {
      return;
    }
    if (!ticket) {
      this.failures++;
      this.retry();
      return;
    }
    const url = `${this.server}/api/v1/agents/${encodeURIComponent(this.agentId)}/subscribe` +
      `?ticket=${encodeURIComponent(ticket)}`;
    const es = new EventSource(url);
    this.es = es;
    this.lastSeen = Date.now();
    const onPing = (e) => {
      this.lastSeen = Date.now();
      this.failures = 0;
      this.setUp(true);
      let head = Number(e.lastEventId);
      try {
        head = JSON.parse(e.data).cursor_hint;
      } catch {
        // keep the id
      }
      this.emit({ type: 'ping', head, kind: e.type });
    };
    es.addEventListener('inbox_updated', onPing);
    es.addEventListener('heartbeat', onPing);
    es.addEventListener('token_expired', () => this.drop(false));
    es.onerror = () => this.drop(true);
  }

  /** Closes the stream and opens another with a new ticket (at once, or after a backoff). */
  drop(failed) {
    if (this.es) {
      this.es.close();
      this.es = null;
    }
    this.setUp(false);
    if (failed) {
      this.failures++;
      this.retry();
    } else {
      this.connect();
    }
  }

  retry() {
    if (this.stopped) {
      return;
    }
    clearTimeout(this.retryTimer);
    const ms = Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(this.failures, 6));
    this.retryTimer = setTimeout(() => this.connect(), ms);
  }

  /** A stream silent for two heartbeats is dead even if the socket looks open (sleep, NAT). */
  check() {
    if (this.es && Date.now() - this.lastSeen > 2 * this.heartbeatMs + 1000) {
      this.emit({ type: 'wake', why: 'heartbeat' });
      this.drop(false);
    }
  }

  stop() {
    this.stopped = true;
    clearInterval(this.watchdog);
    clearTimeout(this.retryTimer);
    if (this.es) {
      this.es.close();
      this.es = null;
    }
    this.setUp(false);
  }
}

// ---- the SharedWorker side: this file, loaded with new SharedWorker(import.meta.url) ----

function runSharedWorker() {
  /** @type {Set<MessagePort>} */
  const ports = new Set();
  let hub = null;
  let ticketWaiter = null;
  let last = null;
  const broadcast = (msg) => {
    if (msg.type === 'ping') {
      last = msg;
    }
    for (const p of ports) {
      p.postMessage(msg);
    }
  };
  // Only the leader tab answers with a ticket; the hub waits for it (a new leader is asked again).
  const needTicket = () =>
    new Promise((resolve) => {
      ticketWaiter = resolve;
      broadcast({ type: 'need-ticket' });
      setTimeout(() => ticketWaiter === resolve && ((ticketWaiter = null), resolve(null)), 5000);
    });
  globalThis.onconnect = (e) => {
    const port = e.ports[0];
    ports.add(port);
    port.onmessage = (m) => {
      const msg = m.data ?? {};
      if (msg.type === 'hello' && hub === null) {
        hub = new StreamHub({ ...msg, needTicket, emit: broadcast });
      }
      if (msg.type === 'hello' || msg.type === 'leader') {
        port.postMessage({ type: 'stream', up: !!hub?.up });
        if (last) {
          port.postMessage(last);
        }
        if (msg.type === 'leader' && ticketWaiter) {
          port.postMessage({ type: 'need-ticket' });
        }
        hub?.connect();
      } else if (msg.type === 'ticket' && ticketWaiter) {
        const w = ticketWaiter;
        ticketWaiter = null;
        w(msg.ticket);
      } else if (msg.type === 'reconnect') {
        hub?.drop(false);
      } else if (msg.type === 'bye') {
        ports.delete(port);
      }
    };
    port.start();
  };
}

if (inSharedWorker) {
  runSharedWorker();
}

// ---- the agent (tab side) ----

const STATES = new Set(['streaming', 'polling', 'offline', 'stopped']);

/**
 * An agent: start() joins the tabs of this agent; the leader claims, runs the handler and acks.
 * Events (EventTarget): 'statechange' {detail: {state, previous}}, 'sync' {detail: {cursor,
 * lastSync}}, 'error' {detail: {error}}.
 */
export class Agent extends EventTarget {
  /** @param {AgentOptions} opts */
  constructor(opts) {
    super();
    if (!opts || !ID_RE.test(opts.agentId ?? '')) {
      throw new TypeError('agentId must match [A-Za-z0-9._-]{1,128}');
    }
    if (typeof opts.handler !== 'function') {
      throw new TypeError('handler must be a function');
    }
    this.opts = {
      concurrency: 1,
      lease_s: 30,
      heartbeat_s: 30,
      sharedWorker: true,
      ...opts,
      server: String(opts.server ?? '').replace(/\/+$/, ''),
    };
    this.client = new Client(this.opts);
    this.agentId = opts.agentId;
    /** @type {AgentState} */
    this.state = 'stopped';
    /** @type {Date|null} time of the last complete pull */
    this.lastSync = null;
    /** Is this tab the one running handlers? */
    this.isLeader = false;
    /** 'shared-worker' or 'leader-tab': where the stream lives (in every tab once started; null
     * before start). */
    this.mode = null;
    /** The consumer id of this tab's claims. */
    this.consumer = randomId('tab-');
    const key = `${this.opts.server || location.origin}|${this.agentId}`;
    this.name = `roost:${key}`;
    this.record = new AgentRecord(key);
    this.engine = new AgentEngine({
      client: this.client, agentId: this.agentId, consumer: this.consumer, opts: this.opts,
      store: this.record,
      onState: (state) => this.setState(state),
      onSync: (cursor, lastSync) => {
        this.lastSync = lastSync;
        this.bc?.postMessage({ type: 'sync', cursor, lastSync: lastSync.getTime() });
        this.dispatchEvent(new CustomEvent('sync', { detail: { cursor, lastSync } }));
      },
      onError: (err) => this.error(err),
    });
  }

  /** The cursor of the last complete pull (the leader's). */
  get cursor() {
    return this.engine.cursor;
  }

  kick() {
    this.engine.kick();
  }

  setState(state) {
    if (!STATES.has(state) || state === this.state) {
      return;
    }
    const previous = this.state;
    this.state = state;
    this.dispatchEvent(new CustomEvent('statechange', { detail: { state, previous } }));
    if (this.isLeader) {
      this.bc?.postMessage({ type: 'state', state, lastSync: this.lastSync?.getTime() ?? null });
    }
  }

  error(err) {
    this.dispatchEvent(new CustomEvent('error', { detail: { error: err } }));
  }

  /** Joins the agent's tabs; resolves at once (leadership comes when the lock is granted). */
  start() {
    if (this.abort) {
      return Promise.resolve();
    }
    this.abort = new AbortController();
    const signal = this.abort.signal;
    this.setState(navigator.onLine === false ? 'offline' : 'polling');
    if (typeof BroadcastChannel !== 'undefined') {
      this.bc = new BroadcastChannel(this.name);
      this.bc.onmessage = (m) => this.onPeer(m.data ?? {});
      this.bc.postMessage({ type: 'query' });
    }
    this.openWorker();
    // Without a worker the stream lives in the leader tab: followers say so too (they learn no
    // mode from the leader).
    this.mode = this.port ? 'shared-worker' : 'leader-tab';
    this.onWake = () => this.kick();
    this.onVisible = () => document.visibilityState === 'visible' && this.kick();
    this.onOnline = () => {
      this.kick();
      // The old socket may be dead: a fresh stream.
      this.hub?.drop(false);
      this.port?.postMessage({ type: 'reconnect' });
    };
    this.onOffline = () => {
      if (this.isLeader) {
        this.setState('offline');
        // A sync already in flight may still answer and report 'streaming'; one that starts
        // now says what holds.
        this.kick();
      }
    };
    this.onPageHide = (e) => {
      this.leave(true);
      // Into the back/forward cache: the page may come back as it was; it rejoins then.
      if (e.persisted) {
        addEventListener('pageshow', (ev) => ev.persisted && this.start(), { once: true });
      }
    };
    addEventListener('online', this.onOnline);
    addEventListener('offline', this.onOffline);
    addEventListener('pageshow', this.onWake);
    addEventListener('pagehide', this.onPageHide);
    document.addEventListener('visibilitychange', this.onVisible);
    // A timer that notices the clock jumped (the machine slept): pull at once.
    let lastTick = Date.now();
    this.clockTimer = setInterval(() => {
      const now = Date.now();
      // Background tabs' timers are throttled, so a late tick only pulls; whether the stream
      // survived is the heartbeat watchdog's call.
      if (now - lastTick > 3000) {
        this.kick();
      }
      lastTick = now;
    }, 1000);
    if (navigator.locks?.request) {
      navigator.locks
        .request(this.name, { signal }, () => this.lead())
        .catch((err) => err?.name !== 'AbortError' && this.error(err));
    } else {
      this.lead(); // no Web Locks: this tab acts alone
    }
    return Promise.resolve();
  }

  /** Stops this tab: gives up leadership (releasing its claims) and closes the stream. */
  async stop() {
    this.leave(false);
    this.setState('stopped');
  }

  leave(unloading) {
    if (!this.abort) {
      return;
    }
    if (this.isLeader) {
      // Our claims go back at once (reason shutdown counts no attempt): the next leader need
      // not wait for the leases to expire. keepalive lets the request outlive the page.
      this.client
        .post(`/api/v1/agents/${encodeURIComponent(this.agentId)}/inbox/release-all`,
          { consumer: this.consumer }, { keepalive: true })
        .catch(() => {});
    }
    this.abort.abort();
    this.abort = null;
    this.isLeader = false;
    this.engine.stop();
    this.hub?.stop();
    this.hub = null;
    this.port?.postMessage({ type: 'bye' });
    this.port?.close();
    this.port = null;
    this.bc?.close();
    this.bc = null;
    clearInterval(this.clockTimer);
    removeEventListener('online', this.onOnline);
    removeEventListener('offline', this.onOffline);
    removeEventListener('pageshow', this.onWake);
    removeEventListener('pagehide', this.onPageHide);
    document.removeEventListener('visibilitychange', this.onVisible);
    if (unloading) {
      this.state = 'stopped';
    }
  }

  openWorker() {
    if (!this.opts.sharedWorker || typeof SharedWorker === 'undefined') {
      return;
    }
    try {
      // The worker must be same-origin: importing roost.js from another origin lands here in
      // the catch, and the leader tab holds the stream instead.
      const w = new SharedWorker(new URL(import.meta.url), { type: 'module', name: this.name });
      // A worker that cannot load (a CSP without worker-src for it): the leader tab holds the
      // stream after all.
      w.onerror = () => this.workerFailed();
      this.port = w.port;
      this.port.onmessage = (m) => this.onWorker(m.data ?? {});
      this.port.start();
      this.port.postMessage({
        type: 'hello', server: this.opts.server || location.origin, agentId: this.agentId,
        heartbeat_s: this.opts.heartbeat_s,
      });
      this.mode = 'shared-worker';
    } catch {
      this.port = null;
    }
  }

  workerFailed() {
    this.port?.close();
    this.port = null;
    this.mode = 'leader-tab';
    if (this.isLeader && !this.hub) {
      this.startHub();
    }
  }

  startHub() {
    this.mode = 'leader-tab';
    this.hub = new StreamHub({
      server: this.opts.server, agentId: this.agentId, heartbeat_s: this.opts.heartbeat_s,
      needTicket: () => this.ticket(), emit: (m) => this.onStream(m),
    });
    this.hub.connect();
  }

  onWorker(msg) {
    if (msg.type === 'need-ticket' && this.isLeader) {
      this.ticket().then(
        (ticket) => this.port?.postMessage({ type: 'ticket', ticket }),
        () => this.port?.postMessage({ type: 'ticket', ticket: null }),
      );
    } else {
      this.onStream(msg);
    }
  }

  /** Messages of the stream (from the worker or the tab's own hub). */
  onStream(msg) {
    if (msg.type === 'stream') {
      this.engine.setStreamUp(msg.up);
    } else if (msg.type === 'ping' || msg.type === 'wake') {
      // A heartbeat whose head we have already is no news.
      if (msg.kind !== 'heartbeat' || !(msg.head <= this.cursor)) {
        this.kick();
      }
    }
  }

  /** Messages of the other tabs. */
  onPeer(msg) {
    if (msg.type === 'query' && this.isLeader) {
      this.bc?.postMessage({ type: 'state', state: this.state,
        lastSync: this.lastSync?.getTime() ?? null });
    } else if (msg.type === 'state' && !this.isLeader) {
      if (msg.lastSync) {
        this.lastSync = new Date(msg.lastSync);
      }
      this.setState(msg.state === 'stopped' ? 'polling' : msg.state);
    } else if (msg.type === 'sync' && !this.isLeader) {
      this.lastSync = new Date(msg.lastSync);
      this.dispatchEvent(new CustomEvent('sync', { detail: { cursor: msg.cursor,
        lastSync: this.lastSync } }));
    }
  }

  async ticket() {
    const r = await this.client.post(
      `/api/v1/agents/${encodeURIComponent(this.agentId)}/subscribe/ticket`, {});
    return r.ticket;
  }

  /** The leader's life: holds the Web Lock until this tab stops or closes. */
  async lead() {
    if (!this.abort) {
      return;
    }
    this.isLeader = true;
    /** When this tab became the leader (ms since the epoch). */
    this.leaderSince = Date.now();
    await this.engine.load();
    if (!this.abort) {
      return; // stopped while the record loaded
    }
    if (this.port) {
      this.port.postMessage({ type: 'leader' });
    } else {
      this.startHub();
    }
    await this.engine.run();
  }
}

/**
 * Creates an agent (not started).
 * @param {AgentOptions} opts
 * @returns {Agent}
 */
export function agent(opts) {
  return new Agent(opts);
}

/**
 * A REST client for other routes (the dashboard uses it for the operator API).
 * @param {{server: string, getToken: GetToken}} opts
 * @returns {Client}
 */
export function client(opts) {
  return new Client(opts);
}

const Roost = { VERSION, agent, publish, client, Agent, Client, RoostError, RetryLater, Quarantine };
export default Roost;
