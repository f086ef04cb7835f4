// SPDX-License-Identifier: MIT
// TypeScript declarations of roost.js (browser: roost.js; Node >= 20: node.js). Written by hand
// from the JSDoc of both files; the same API on both platforms, with the Node-only options
// (stateDir, longPoll_s, handleSignals) and error (StateDirLocked) marked as such.

export declare const VERSION: string;

/** An inbox event (doc/openapi.json, components/schemas/Event; doc/API.md, "Event object"). */
export interface InboxEvent<P = any> {
  event_id: string;
  agent_id: string;
  sequence_number: number;
  status: 'scheduled' | 'pending' | 'claimed' | 'completed' | 'quarantined' | 'expired';
  priority: number;
  correlation_id: string | null;
  payload: P;
  created_at: string;
  available_at: string;
  expires_at: string | null;
  [field: string]: unknown;
}

/** An inbox event as claimed, with its lease (components/schemas/ClaimedEvent). */
export interface RoostEvent<P = any> extends InboxEvent<P> {
  lease_token: string;
  claim_expires_at: string;
  /** The claims of this event so far, this one included. */
  attempts: number;
}

/** GET /api/v1/agents/{agent}/inbox: a page of the inbox, oldest first. */
export interface InboxPage<P = any> {
  events: InboxEvent<P>[];
  next_cursor: number;
  has_more: boolean;
  head: number;
}

/** POST /api/v1/agents/{agent}/inbox/claim: the events claimed. */
export interface ClaimResult<P = any> {
  events: RoostEvent<P>[];
  has_more: boolean;
}

/** roostd's error answer (components/schemas/Error): RoostError's body when roostd answered. */
export interface ErrorBody {
  error: {
    /** A stable code (doc/openapi.json lists every one), e.g. 'invalid_agent_id'. */
    code: string;
    message: string;
    [field: string]: unknown;
  };
}

/**
 * Returns a bearer token (a JWT): called when one is first needed, when the last one expires
 * within 5 s, and with `{refresh: true}` when roostd refused the last one.
 */
export type GetToken = (hint: { refresh: boolean }) => string | Promise<string>;

export interface Connection {
  /** roostd's base URL ('' = the page's origin, browser only). */
  server: string;
  getToken: GetToken;
}

export type AgentState = 'streaming' | 'polling' | 'offline' | 'stopped';

/** What a handler may return (or throw) besides resolving (ack) or throwing (retry with backoff). */
export type HandlerResult = void | undefined | unknown | RetryLater | Quarantine;

export interface AgentOptions<P = any> extends Connection {
  /** Agent id ([A-Za-z0-9._-]{1,128}). */
  agentId: string;
  /** Resolves: ack. Throws: release with backoff. RetryLater / Quarantine: see those. */
  handler: (event: RoostEvent<P>) => HandlerResult | Promise<HandlerResult>;
  /** Handlers running at once (default 1). */
  concurrency?: number;
  /** Lease per claim, extended at half-life while the handler runs (default 30). */
  lease_s?: number;
  /** roostd's sse.heartbeat_s: a stream silent for two heartbeats is dead (default 30). */
  heartbeat_s?: number;
  /** Called after a 410 (the cursor fell behind retention) with the agent's state document. */
  onState?: (state: Record<string, unknown> | null, cursor: number) => void;
  /** From this attempt on, RetryLater counts as a failure toward claim.max_attempts (default 10). */
  tempfailMax?: number;
  /** Browser: hold the stream in a SharedWorker when possible (default true). */
  sharedWorker?: boolean;
  /** Node (required there): the directory of the agent's state; one process per directory. */
  stateDir?: string;
  /** Node: wait_s of the claims while the stream is down (default 20; 0: sleep between polls). */
  longPoll_s?: number;
  /** Node: SIGINT/SIGTERM stop the agent (release-all) and then the process (default true). */
  handleSignals?: boolean;
}

export interface StateChangeDetail {
  state: AgentState;
  previous: AgentState;
}
export interface SyncDetail {
  cursor: number;
  lastSync: Date;
}
export interface ErrorDetail {
  error: unknown;
}

interface AgentEventMap {
  statechange: CustomEvent<StateChangeDetail>;
  sync: CustomEvent<SyncDetail>;
  error: CustomEvent<ErrorDetail>;
}

/** An agent: start() begins (the browser's leader tab, or the Node process) claiming. */
export declare class Agent<P = any> extends EventTarget {
  constructor(opts: AgentOptions<P>);
  readonly agentId: string;
  readonly state: AgentState;
  /** Time of the last complete pull. */
  readonly lastSync: Date | null;
  /** The cursor of the last complete pull. */
  readonly cursor: number;
  /** This tab (browser) or process (Node) runs the handlers. */
  readonly isLeader: boolean;
  readonly leaderSince?: number | null;
  /** 'shared-worker' | 'leader-tab' (browser, in every tab), 'node'; null before start(). */
  readonly mode: string | null;
  /** The consumer id of this tab's or process's claims. */
  readonly consumer: string;
  /** Node: the state directory. */
  readonly stateDir?: string;
  /** Browser: joins the tabs (resolves at once). Node: locks the state dir (rejects with
   * StateDirLocked), recovers, then runs until stop() or a signal. */
  start(): Promise<void>;
  /** Gives this tab's / process's claims back (release-all) and stops. */
  stop(): Promise<void>;
  /** Node: resolves when the agent stopped. */
  done?(): Promise<void>;
  addEventListener<K extends keyof AgentEventMap>(type: K,
    listener: (ev: AgentEventMap[K]) => void, options?: boolean | AddEventListenerOptions): void;
  addEventListener(type: string, listener: EventListenerOrEventListenerObject | null,
    options?: boolean | AddEventListenerOptions): void;
  removeEventListener<K extends keyof AgentEventMap>(type: K,
    listener: (ev: AgentEventMap[K]) => void, options?: boolean | EventListenerOptions): void;
  removeEventListener(type: string, listener: EventListenerOrEventListenerObject | null,
    options?: boolean | EventListenerOptions): void;
}

/** An error answer of roostd (or a transport failure: status 0, code 'network'). */
export declare class RoostError extends Error {
  constructor(status: number, code: string, message: string, body?: unknown);
  readonly status: number;
  readonly code: string;
  readonly body: unknown;
}

/** Try the event again later, without a failure counted (up to tempfailMax attempts). */
export declare class RetryLater extends Error {
  constructor(message?: string, opts?: { retryAfterS?: number });
  readonly retryAfterS: number | undefined;
}

/** Never retry the event: roostd quarantines it now (release reason poison). */
export declare class Quarantine extends Error {
  constructor(message?: string);
}

/** Node: another live process holds the state directory (Roost.StateDirLocked, Node only). */
declare class StateDirLocked extends Error {
  readonly pid: number;
}

export interface RequestOptions {
  keepalive?: boolean;
  signal?: AbortSignal;
}

/** A fetch client for roostd's REST API (bearer token, refreshed once on 401). */
export declare class Client {
  constructor(opts: Connection);
  readonly server: string;
  bearer(refresh?: boolean): Promise<string>;
  request<T = any>(method: string, path: string, body?: object, opts?: RequestOptions): Promise<T>;
  get<T = any>(path: string, opts?: RequestOptions): Promise<T>;
  post<T = any>(path: string, body?: object, opts?: RequestOptions): Promise<T>;
}

export interface PublishEvent {
  recipients: string[];
  payload?: unknown;
  priority?: number;
  correlation_id?: string;
  idempotency_key?: string;
  delay_s?: number;
  ttl_s?: number;
  available_at?: string;
  expires_at?: string;
  state_patch?: Record<string, unknown>;
  [field: string]: unknown;
}

export interface PublishResult {
  /** duplicate: an earlier publish with the same idempotency_key made this event. */
  events: { event_id: string; agent_id: string; sequence_number: number; duplicate?: boolean }[];
}

/** POST /api/v1/events with an idempotency key added, retried on 503 and lost answers. */
export declare function publish(conn: Connection | Client,
  event: PublishEvent | { events: PublishEvent[] }): Promise<PublishResult>;

/** Creates an agent (not started). */
export declare function agent<P = any>(opts: AgentOptions<P>): Agent<P>;

/** A REST client for other routes (the operator API). */
export declare function client(opts: Connection): Client;

declare const Roost: {
  VERSION: typeof VERSION;
  agent: typeof agent;
  publish: typeof publish;
  client: typeof client;
  Agent: typeof Agent;
  Client: typeof Client;
  RoostError: typeof RoostError;
  RetryLater: typeof RetryLater;
  Quarantine: typeof Quarantine;
  StateDirLocked?: typeof StateDirLocked;
};
export default Roost;
