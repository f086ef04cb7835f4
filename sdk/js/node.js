// SPDX-License-Identifier: MIT
// roost.js in Node ≥ 20: the same agent logic as in the browser (AgentEngine in roost.js) with
// the Node adapter: state in a directory (cursor, processed ids, outstanding leases: one JSON
// file written atomically and durably), one process per state directory (an exclusive lock
// file), the stream read through fetch (no EventSource), long polls while the stream is down,
// SIGINT/SIGTERM → release-all for this process's consumer id.
//
//   import Roost from 'roost-agent';        // resolves here under Node (conditional exports)
//   const agent = Roost.agent({server: 'http://127.0.0.1:8080', agentId: 'worker-1',
//     stateDir: './state', getToken: () => process.env.ROOST_TOKEN, handler: async (ev) => {}});
//   await agent.start();

import { closeSync, fsyncSync, mkdirSync, openSync, readFileSync, renameSync, unlinkSync,
  writeFileSync } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join, resolve } from 'node:path';
import {
  AgentEngine, Client, Quarantine, RetryLater, RoostError, VERSION, client, publish,
} from './roost.js';

export { Client, Quarantine, RetryLater, RoostError, VERSION, client, publish };

const ID_RE = /^[A-Za-z0-9._-]{1,128}$/;
const MAX_BACKOFF_MS = 30000;
const STATE_FILE = 'roost-agent.json';
const LOCK_FILE = 'roost-agent.lock';

function randomId(prefix) {
  const b = new Uint8Array(12);
  crypto.getRandomValues(b);
  return prefix + Array.from(b, (x) => x.toString(16).padStart(2, '0')).join('');
}

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return err.code === 'EPERM';
  }
}

/** Thrown by start() when another live process holds the state directory. */
export class StateDirLocked extends Error {
  constructor(dir, pid) {
    super(`roost: the state directory ${dir} is in use by process ${pid} (lock file ` +
      `${join(dir, LOCK_FILE)}); one agent process per state directory`);
    this.name = 'StateDirLocked';
    this.pid = pid;
  }
}

/**
 * The exclusive lock of a state directory: a file created with O_EXCL holding our pid. A lock
 * whose process is gone (SIGKILL, a crash) is taken over: renamed aside first, so two processes
 * taking over at once cannot both win.
 */
function lockDir(dir) {
  const path = join(dir, LOCK_FILE);
  for (let tries = 0; tries < 5; tries++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeFileSync(fd, `${process.pid}\n${hostname()}\n`);
      fsyncSync(fd);
      closeSync(fd);
      return path;
    } catch (err) {
      if (err.code !== 'EEXIST') {
        throw err;
      }
    }
    let pid = 0;
    try {
      pid = Number.parseInt(readFileSync(path, 'utf8'), 10);
    } catch {
      continue; // gone meanwhile: try again
    }
    if (pid > 0 && pidAlive(pid)) {
      throw new StateDirLocked(dir, pid);
    }
    const aside = `${path}.stale-${process.pid}-${tries}`;
    try {
      renameSync(path, aside);
    } catch {
      continue;
    }
    // What we moved aside must be the dead process's lock, not one a racer just created.
    const got = Number.parseInt(readFileSync(aside, 'utf8'), 10);
    if (got !== pid && pidAlive(got)) {
      renameSync(aside, path);
      throw new StateDirLocked(dir, got);
    }
    unlinkSync(aside);
  }
  throw new Error(`roost: cannot take the lock ${path}`);
}

/**
 * The state of one agent in its directory: {cursor, processed: [ids], leases: {id: token}},
 * kept in memory and written through on every change: a temporary file, fsync, rename over the
 * old one, fsync of the directory. Writes are serialized.
 */
class FileStore {
  constructor(dir) {
    this.dir = dir;
    this.path = join(dir, STATE_FILE);
    this.tracksLeases = true;
    this.value = null;
    this.chain = Promise.resolve();
  }

  readSync() {
    try {
      const v = JSON.parse(readFileSync(this.path, 'utf8'));
      this.value = { cursor: v.cursor ?? 0, processed: v.processed ?? [], leases: v.leases ?? {} };
    } catch (err) {
      if (err.code !== 'ENOENT') {
        throw new Error(`roost: cannot read ${this.path}: ${err.message}`);
      }
      this.value = { cursor: 0, processed: [], leases: {} };
    }
    return this.value;
  }

  async load() {
    return this.value ?? this.readSync();
  }

  update(fn) {
    const next = this.chain.then(async () => {
      const v = fn(this.value ?? this.readSync());
      this.value = v;
      await this.write(v);
    });
    this.chain = next.catch(() => {});
    return next;
  }

  async write(v) {
    const tmp = `${this.path}.tmp-${process.pid}`;
    const fh = await open(tmp, 'w', 0o600);
    try {
      await fh.writeFile(JSON.stringify({ version: 1, ...v }));
      await fh.sync();
    } finally {
      await fh.close();
    }
    await rename(tmp, this.path);
    const dh = await open(this.dir, 'r');
    try {
      await dh.sync();
    } finally {
      await dh.close();
    }
  }
}

/**
 * The subscribe stream through fetch (Authorization header: no ticket needed), parsed here:
 * emits {type: 'ping', head, kind} for inbox_updated and heartbeats, {type: 'stream', up} on
 * changes, {type: 'wake'} when a silent stream is dropped. Reconnects with backoff; a stream
 * silent for two heartbeats is dead.
 */
class FetchStream {
  constructor({ client, path, heartbeat_s, emit }) {
    this.client = client;
    this.path = path;
    this.heartbeatMs = Math.max(1, heartbeat_s ?? 30) * 1000;
    this.emit = emit;
    this.up = false;
    this.stopped = false;
    this.failures = 0;
    this.lastSeen = 0;
    this.ctrl = null;
    this.retryTimer = null;
    this.watchdog = setInterval(() => this.check(), 500);
    this.watchdog.unref?.();
  }

  setUp(up) {
    if (this.up !== up) {
      this.up = up;
      this.emit({ type: 'stream', up });
    }
  }

  async connect() {
    if (this.stopped || this.ctrl) {
      return;
    }
    const ctrl = new AbortController();
    this.ctrl = ctrl;
    this.lastSeen = Date.now();
    let ok = false;
    try {
      const token = await this.client.bearer(this.failures > 0 && this.lastStatus === 401);
      const res = await fetch(this.client.server + this.path, {
        headers: { Authorization: `Bearer ${token}`, Accept: 'text/event-stream' },
        signal: ctrl.signal,
      });
      this.lastStatus = res.status;
      if (res.status !== 200 || !res.body) {
        throw new Error(`subscribe: ${res.status}`);
      }
      const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
      let buf = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) {
          break;
        }
        buf += value.replace(/\r\n?/g, '\n');
        let end;
        while ((end = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, end);
          buf = buf.slice(end + 2);
          if (this.onBlock(block) === 'token_expired') {
            ok = true; // a fresh token, at once
            ctrl.abort();
          }
        }
      }
      ok = true;
    } catch {
      // refused, dropped, aborted: below
    }
    if (this.ctrl === ctrl) {
      this.ctrl = null;
    }
    this.setUp(false);
    if (this.stopped) {
      return;
    }
    this.failures = ok ? 0 : this.failures + 1;
    const ms = ok ? 0 : Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(this.failures, 6));
    this.retryTimer = setTimeout(() => this.connect(), ms);
  }

  onBlock(block) {
    let event = 'message';
    let data = '';
    let id = null;
    for (const line of block.split('\n')) {
      const colon = line.indexOf(':');
      if (colon === 0) {
        continue;
      }
      const field = colon < 0 ? line : line.slice(0, colon);
      const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
      if (field === 'event') {
        event = value;
      } else if (field === 'data') {
        data += value;
      } else if (field === 'id') {
        id = value;
      }
    }
    this.lastSeen = Date.now();
    if (event === 'inbox_updated' || event === 'heartbeat') {
      this.failures = 0;
      this.setUp(true);
      let head = Number(id);
      try {
        head = JSON.parse(data).cursor_hint;
      } catch {
        // keep the id
      }
      this.emit({ type: 'ping', head, kind: event });
    }
    return event;
  }

  check() {
    if (this.ctrl && Date.now() - this.lastSeen > 2 * this.heartbeatMs + 1000) {
      this.emit({ type: 'wake', why: 'heartbeat' });
      this.ctrl.abort();
    }
  }

  stop() {
    this.stopped = true;
    clearInterval(this.watchdog);
    clearTimeout(this.retryTimer);
    this.ctrl?.abort();
    this.setUp(false);
  }
}

const STATES = new Set(['streaming', 'polling', 'offline', 'stopped']);

/**
 * A server-side agent. Events (EventTarget): 'statechange' {detail: {state, previous}}, 'sync'
 * {detail: {cursor, lastSync}}, 'error' {detail: {error}} — as in the browser.
 */
export class Agent extends EventTarget {
  /** @param {import('./roost.js').AgentOptions & {stateDir: string}} opts */
  constructor(opts) {
    super();
    if (!opts || !ID_RE.test(opts.agentId ?? '')) {
      throw new TypeError('agentId must match [A-Za-z0-9._-]{1,128}');
    }
    if (typeof opts.handler !== 'function') {
      throw new TypeError('handler must be a function');
    }
    if (typeof opts.stateDir !== 'string' || opts.stateDir === '') {
      throw new TypeError('stateDir is required in Node (a directory for the agent\'s state)');
    }
    if (!/^https?:\/\//.test(opts.server ?? '')) {
      throw new TypeError('server must be roostd\'s absolute URL in Node (http://host:port)');
    }
    this.opts = {
      concurrency: 1,
      lease_s: 30,
      heartbeat_s: 30,
      longPoll_s: 20,
      handleSignals: true,
      ...opts,
      server: String(opts.server).replace(/\/+$/, ''),
    };
    this.client = new Client(this.opts);
    this.agentId = opts.agentId;
    /** @type {import('./roost.js').AgentState} */
    this.state = 'stopped';
    this.lastSync = null;
    this.isLeader = false;
    this.leaderSince = null;
    this.mode = 'node';
    this.consumer = randomId('node-');
    this.stateDir = resolve(opts.stateDir);
    this.store = new FileStore(this.stateDir);
    this.engine = new AgentEngine({
      client: this.client, agentId: this.agentId, consumer: this.consumer, opts: this.opts,
      store: this.store, longPoll_s: this.opts.longPoll_s, ackDelayMs: 10,
      onState: (s) => this.setState(s),
      onSync: (cursor, lastSync) => {
        this.lastSync = lastSync;
        this.dispatchEvent(new CustomEvent('sync', { detail: { cursor, lastSync } }));
      },
      onError: (err) => this.error(err),
    });
    this.lockPath = null;
    this.running = null;
  }

  get cursor() {
    return this.engine.cursor;
  }

  setState(state) {
    if (!STATES.has(state) || state === this.state) {
      return;
    }
    const previous = this.state;
    this.state = state;
    this.dispatchEvent(new CustomEvent('statechange', { detail: { state, previous } }));
  }

  error(err) {
    this.dispatchEvent(new CustomEvent('error', { detail: { error: err } }));
  }

  /**
   * Locks the state directory (throws StateDirLocked when another process holds it), loads the
   * state, gives back what a previous process left claimed, then pulls and opens the stream.
   * Resolves once running; the agent runs until stop() (or SIGINT/SIGTERM).
   */
  async start() {
    if (this.running) {
      return;
    }
    mkdirSync(this.stateDir, { recursive: true, mode: 0o700 });
    this.lockPath = lockDir(this.stateDir);
    this.isLeader = true;
    this.leaderSince = Date.now();
    const rec = await this.engine.load();
    this.setState('polling');
    try {
      await this.engine.recover(rec.leases);
    } catch (err) {
      this.error(err); // the leases expire on their own; recovery is tried at the next start
    }
    this.stream = new FetchStream({
      client: this.client,
      path: `/api/v1/agents/${encodeURIComponent(this.agentId)}/subscribe`,
      heartbeat_s: this.opts.heartbeat_s,
      emit: (m) => this.onStream(m),
    });
    if (this.opts.handleSignals) {
      this.onSignal = (sig) => {
        this.stop().finally(() => {
          process.removeListener('SIGINT', this.onSignal);
          process.removeListener('SIGTERM', this.onSignal);
          if (process.listenerCount(sig) === 0) {
            process.kill(process.pid, sig); // the default action: exit by the signal
          }
        });
      };
      process.on('SIGINT', this.onSignal);
      process.on('SIGTERM', this.onSignal);
    }
    // Pull first (run() syncs before anything else), and open the stream beside it.
    this.running = this.engine.run();
    this.stream.connect();
  }

  onStream(msg) {
    if (msg.type === 'stream') {
      this.engine.setStreamUp(msg.up);
    } else if (msg.type === 'ping' || msg.type === 'wake') {
      if (msg.kind !== 'heartbeat' || !(msg.head <= this.engine.cursor)) {
        this.engine.kick();
      }
    }
  }

  /** Resolves when the agent stopped (stop() or a signal). */
  async done() {
    await this.running;
  }

  /**
   * Stops claiming, gives this process's claims back (release-all for its consumer id: reason
   * shutdown, no attempt counted), closes the stream and unlocks the state directory. A handler
   * still running may finish: its id is recorded, so whoever claims the event acks it.
   */
  async stop() {
    if (!this.running) {
      return;
    }
    this.engine.stop();
    this.stream?.stop();
    try {
      await this.client.post(
        `/api/v1/agents/${encodeURIComponent(this.agentId)}/inbox/release-all`,
        { consumer: this.consumer });
    } catch (err) {
      this.error(err);
    }
    // A long poll in flight gives back what it brings (the engine releases it once stopped);
    // the process need not wait for it.
    await Promise.race([this.running, new Promise((r) => setTimeout(r, 2000).unref?.())]);
    await this.store.chain;
    try {
      unlinkSync(this.lockPath);
    } catch {
      // already gone
    }
    this.running = null;
    this.isLeader = false;
    this.setState('stopped');
  }
}

/**
 * Creates a Node agent (not started).
 * @param {import('./roost.js').AgentOptions & {stateDir: string}} opts
 * @returns {Agent}
 */
export function agent(opts) {
  return new Agent(opts);
}

const Roost = {
  VERSION, agent, publish, client, Agent, Client, RoostError, RetryLater, Quarantine,
  StateDirLocked,
};
export default Roost;
