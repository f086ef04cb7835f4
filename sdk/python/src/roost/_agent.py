# SPDX-License-Identifier: MIT
"""``roost.Agent``: the agent loop of DESIGN §7 with the guarantees of ``roost agent run``.

One asyncio task set drives everything (doc/AGENT.md, "The loop", mirrored here)::

    run ── recovery ── cursor sync ── claim ──► handler tasks (≤ concurrency) ── extend at
     ▲  long polls while the stream is down        │ outcome                       half-life
     │ need_sync                                   ▼
    stream ─ GET …/subscribe, every ping        keeper: batched acks, releases

Plain-function handlers run on a thread pool of ``concurrency`` threads, ``async def``
handlers on the loop. The state file (``_state.StateFile``) is written before the network
learns anything: a lease before its handler runs, a processed id before its ack is sent.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import os
import random
import signal
import sqlite3
import threading
import time
import traceback
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import (
    Any,
    Callable,
    Dict,
    List,
    Optional,
    Set,
    Tuple,
    TypeVar,
    Union,
)

from ._client import AsyncClient
from ._errors import (
    BadRequest,
    ConnectionFailed,
    CursorExpired,
    Forbidden,
    RateLimited,
    RoostError,
    Unauthorized,
    Unavailable,
)
from ._ids import default_consumer
from ._models import AgentState, Event
from ._signing import KeyLike, SigningKey
from ._state import StateFile, now_ms
from ._tokens import TokenLike

__all__ = ["Agent", "AgentStatus", "Retry", "Quarantine", "read_status"]

log = logging.getLogger("roost.agent")

#: The longest error text sent with a release (roostd keeps up to 4096 bytes).
MAX_ERROR_BYTES = 2048
#: Acks per batch request.
ACK_BATCH = 100
#: How long stop waits for roostd to take the last acks and releases.
FLUSH_DEADLINE_S = 10.0
#: The longest release delay the loop's own backoff gives.
MAX_BACKOFF_S = 300

Handler = Callable[[Event], Any]
StateCallback = Callable[[AgentState], Any]
ConnCallback = Callable[[str], Any]
F = TypeVar("F", bound=Handler)


class Retry(Exception):
    """Raise (or return) from a handler to try the event again later without a penalty.

    ``after`` is the delay in seconds (default: the loop's backoff, 1, 2, 4 … 300 s). Only
    ``tempfail_max`` retries are free; after that they count as failures, so an event that is
    never ready ends up quarantined by roostd's ``claim.max_attempts`` instead of spinning.
    """

    def __init__(self, after: Optional[float] = None, reason: str = "") -> None:
        super().__init__(reason or "retry later")
        self.after = after
        self.reason = reason


class Quarantine(Exception):
    """Raise (or return) from a handler to quarantine the event now (it is poison).

    ``reason`` becomes the event's ``last_error``, shown by the quarantine views.
    """

    def __init__(self, reason: str = "") -> None:
        super().__init__(reason or "quarantined by the handler")
        self.reason = reason


@dataclass(frozen=True)
class AgentStatus:
    """What ``agent.status()`` and :func:`read_status` report (the fields of
    ``roost agent status``, plus counters of this process when it is the one running).

    ``last_sync`` is the wall time (epoch seconds) of the last successful exchange with roostd.
    """

    agent_id: str
    running: bool
    connection: str
    consumer: Optional[str]
    pid: Optional[int]
    cursor: int
    last_sync: Optional[float]
    outstanding_leases: int
    processed_ids: int
    handled: int = 0
    failed: int = 0
    in_flight: int = 0


def read_status(state_dir: str) -> AgentStatus:
    """The status recorded in a state dir, whether or not its agent runs (it tries the lock)."""
    running = False
    try:
        import fcntl

        with open(os.path.join(state_dir, "agent.lock"), "ab") as f:
            try:
                fcntl.flock(f.fileno(), fcntl.LOCK_SH | fcntl.LOCK_NB)
                fcntl.flock(f.fileno(), fcntl.LOCK_UN)
            except OSError:
                running = True
    except OSError:
        pass
    path = os.path.join(state_dir, "agent.db")
    if not os.path.exists(path):
        raise RoostError(f"no agent state in {state_dir}", code="io_error")
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=5.0)
    try:
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
        leases = int(db.execute("SELECT COUNT(*) FROM leases").fetchone()[0])
        processed = int(db.execute("SELECT COUNT(*) FROM processed").fetchone()[0])
    finally:
        db.close()
    last = meta.get("last_sync_ms")
    pid = meta.get("pid")
    return AgentStatus(
        agent_id=str(meta.get("agent_id", "")),
        running=running,
        connection=str(meta.get("conn", "stopped")) if running else "stopped",
        consumer=meta.get("consumer"),
        pid=int(pid) if pid and pid.isdigit() else None,
        cursor=int(meta.get("cursor", 0) or 0),
        last_sync=int(last) / 1000.0 if last and last.isdigit() else None,
        outstanding_leases=leases,
        processed_ids=processed,
    )


@dataclass
class _Outcome:
    kind: str  # "ack", "release"
    event: Event
    delay_s: int = 0
    reason: str = "transient"
    error: Optional[str] = None


def _jitter(s: float) -> float:
    return s * random.uniform(0.75, 1.25)


def _bounded(text: str, limit: int = MAX_ERROR_BYTES) -> str:
    """The LAST ``limit`` bytes of ``text`` (a traceback's end says what failed)."""
    raw = text.encode("utf-8", "replace")
    if len(raw) <= limit:
        return text
    return "…" + raw[-(limit - 3):].decode("utf-8", "ignore")


class Agent:
    """A durable agent: claims its events, runs ``handler`` on each, acks or releases.

    Args:
        handler: ``def handle(event: roost.Event) -> None`` (run on a thread pool) or
            ``async def`` (run on the loop). Returning normally acks the event; raising
            :class:`Retry` or :class:`Quarantine` does what they say; any other exception
            releases the event with backoff and the traceback's last lines as the reason.
            May also be set with the :meth:`handler` decorator.
        agent_id: the agent identity to consume.
        state_dir: local state (cursor, processed ids, outstanding leases); one process each.
        base_url, token, signing_key: as for :class:`roost.Client`.
        concurrency: handlers running at once.
        lease_s: the lease asked for each claim (extended at half-life while a handler runs).
        long_poll_s: the claim's ``wait_s`` while the stream is down.
        poll_ceiling_s: the longest pause between polls after failures.
        stream_resync_s: a safety sync this often while streaming.
        tempfail_max: free :class:`Retry` outcomes per event (then they count as failures).
        consumer: this process's consumer id (default ``<hostname>-<pid>``).
        on_state: called with the :class:`roost.AgentState` after a 410 (cursor behind
            retention); the loop then continues from its cursor. May be ``async``.
        on_conn: called with the new connection state (``starting``, ``streaming``,
            ``polling``, ``offline``, ``stopped``).
        handle_signals: SIGINT/SIGTERM stop the agent gracefully (main thread only).
    """

    def __init__(
        self,
        handler: Optional[Handler] = None,
        *,
        agent_id: str,
        state_dir: str,
        base_url: Optional[str] = None,
        token: Optional[TokenLike] = None,
        signing_key: Optional[KeyLike] = None,
        concurrency: int = 1,
        lease_s: int = 60,
        long_poll_s: int = 25,
        poll_ceiling_s: float = 300.0,
        stream_resync_s: float = 60.0,
        tempfail_max: int = 10,
        consumer: Optional[str] = None,
        on_state: Optional[StateCallback] = None,
        on_conn: Optional[ConnCallback] = None,
        processed_max: int = 100_000,
        processed_max_age_s: int = 7 * 86400,
        handle_signals: bool = True,
        timeout_s: float = 30.0,
    ) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        if lease_s < 1:
            raise ValueError("lease_s must be at least 1")
        self._handler = handler
        self.agent_id = agent_id
        self.state_dir = os.fspath(state_dir)
        self._client_args: Dict[str, Any] = {"base_url": base_url, "token": token,
                                             "signing_key": signing_key, "timeout_s": timeout_s}
        self.concurrency = concurrency
        self.lease_s = lease_s
        self.long_poll_s = long_poll_s
        self.poll_ceiling_s = poll_ceiling_s
        self.stream_resync_s = stream_resync_s
        self.tempfail_max = tempfail_max
        self.consumer = consumer
        self.on_state = on_state
        self.on_conn = on_conn
        self.processed_max = processed_max
        self.processed_max_age_s = processed_max_age_s
        self.handle_signals = handle_signals
        self._loop: Optional[asyncio.AbstractEventLoop] = None
        self._stop_requested = threading.Event()
        self._running = False
        self._conn = "stopped"
        self._last_sync: Optional[float] = None
        self._handled = 0
        self._failed = 0
        self._in_flight_n = 0

    def handler(self, fn: F) -> F:
        """Decorator form: ``@agent.handler`` sets the handler and returns it unchanged."""
        self._handler = fn
        return fn

    # ---- public control ----------------------------------------------------------------

    def run(self) -> None:
        """Runs the agent until :meth:`stop` (or SIGINT/SIGTERM); blocks."""
        asyncio.run(self.run_async())

    def stop(self) -> None:
        """Asks the agent to stop; thread-safe and safe from a signal handler. Claimed work
        not started is released, running handlers are waited for, acks flushed, then
        ``release-all`` returns whatever this consumer still holds."""
        self._stop_requested.set()
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(self._on_stop)
            except RuntimeError:
                pass

    def status(self) -> AgentStatus:
        """Connection state, last sync, cursor, leases and counters (see :class:`AgentStatus`)."""
        try:
            st = read_status(self.state_dir)
        except (RoostError, sqlite3.Error, OSError):
            st = AgentStatus(self.agent_id, False, "stopped", None, None, 0, None, 0, 0)
        return AgentStatus(
            agent_id=self.agent_id,
            running=self._running,
            connection=self._conn,
            consumer=st.consumer,
            pid=st.pid,
            cursor=st.cursor,
            last_sync=self._last_sync if self._last_sync is not None else st.last_sync,
            outstanding_leases=st.outstanding_leases,
            processed_ids=st.processed_ids,
            handled=self._handled,
            failed=self._failed,
            in_flight=self._in_flight_n,
        )

    async def run_async(self) -> None:
        """Runs the agent on the current event loop until :meth:`stop`; composes with an
        application's own tasks. Raises :class:`roost.Unauthorized`/:class:`roost.Forbidden`
        when roostd refuses the token or signature (retrying cannot help), and
        :class:`roost.StateLocked` when another process holds the state dir."""
        if self._handler is None:
            raise ValueError("no handler: pass one to Agent() or use @agent.handler")
        if self._running:
            raise RuntimeError("this agent is already running")
        self._loop = asyncio.get_running_loop()
        self._stopping = asyncio.Event()
        self._kick = asyncio.Event()
        self._need_sync = True
        self._streaming = False
        self._head: Optional[int] = None
        self._synced_head: Optional[int] = None
        self._more = False
        self._fatal: Optional[BaseException] = None
        self._tasks: Set["asyncio.Task[None]"] = set()
        self._outbox: List[_Outcome] = []
        self._keeper_kick = asyncio.Event()
        self._single_acks = False
        self._last_sync_write = 0.0
        self._state = StateFile(self.state_dir, self.agent_id, processed_max=self.processed_max,
                                processed_max_age_s=self.processed_max_age_s)
        self._client = AsyncClient(max_retries=0, **self._client_args)
        self._executor = ThreadPoolExecutor(max_workers=self.concurrency,
                                            thread_name_prefix="roost-handler")
        self._running = True
        installed = self._install_signals()
        if self._stop_requested.is_set():
            self._stopping.set()
        keeper: Optional["asyncio.Task[None]"] = None
        try:
            self._set_conn("starting")
            if await self._recover():
                self._consumer = self.consumer or default_consumer()
                self._state.set_meta("consumer", self._consumer)
                self._state.set_meta("pid", os.getpid())
                keeper = asyncio.ensure_future(self._keeper())
                threading.Thread(target=self._stream_thread, name="roost-stream",
                                 daemon=True).start()
                await self._main()
        finally:
            await self._shutdown(keeper)
            for sig in installed:
                self._loop.remove_signal_handler(sig)
            self._running = False
            self._loop = None
        if self._fatal is not None:
            raise self._fatal

    # ---- plumbing --------------------------------------------------------------------------

    def _install_signals(self) -> List[int]:
        if not self.handle_signals or threading.current_thread() is not threading.main_thread():
            return []
        assert self._loop is not None
        done: List[int] = []
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._loop.add_signal_handler(sig, self._on_stop)
                done.append(sig)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        return done

    def _on_stop(self) -> None:
        if not self._stop_requested.is_set():
            log.info("agent %s: stopping", self.agent_id)
        self._stop_requested.set()
        self._stopping.set()
        self._kick.set()
        self._keeper_kick.set()

    def _set_conn(self, conn: str) -> None:
        if conn == self._conn:
            return
        self._conn = conn
        try:
            self._state.set_meta("conn", conn)
        except sqlite3.Error:
            pass
        log.info("agent %s: connection %s", self.agent_id, conn)
        if self.on_conn is not None:
            try:
                self.on_conn(conn)
            except Exception:  # a callback's failure is not the loop's
                log.exception("on_conn callback failed")

    def _synced(self) -> None:
        self._last_sync = time.time()
        if time.monotonic() - self._last_sync_write >= 1.0:
            self._last_sync_write = time.monotonic()
            self._state.set_meta("last_sync_ms", now_ms())

    async def _pause(self, delay_s: float, *, ping_cancels: bool = True) -> None:
        """Waits ``delay_s``, less when stopping (or, with ``ping_cancels``, on a ping)."""
        self._kick.clear()
        waiter = self._kick if ping_cancels else self._stopping
        try:
            await asyncio.wait_for(waiter.wait(), timeout=max(0.0, delay_s))
        except asyncio.TimeoutError:
            pass

    # ---- 1. recovery ---------------------------------------------------------------------------

    async def _recover(self) -> bool:
        """Settles what a previous run left: acks for leases whose handler finished, then
        release-all for the previous consumer, then a release for every lease left. Retried
        with backoff while roostd is unreachable. False when stopped first."""
        delay = 1.0
        while not self._stopping.is_set():
            try:
                leases = self._state.leases()
                done = [(e, t) for e, t in leases if self._state.is_processed(e)]
                if done:
                    for i in range(0, len(done), ACK_BATCH):
                        part = done[i:i + ACK_BATCH]
                        await self._client.ack_batch(self.agent_id, part)
                        for e, _ in part:
                            self._state.remove_lease(e)
                    log.info("recovery: acked %d processed event(s) whose ack was lost", len(done))
                prev = self._state.meta("consumer")
                if prev:
                    n = await self._client.release_all(self.agent_id, prev)
                    if n:
                        log.info("recovery: released %d lease(s) of consumer %s", n, prev)
                for e, t in self._state.leases():
                    try:
                        await self._client.release(self.agent_id, e, t, reason="shutdown")
                    except RoostError as err:
                        if err.status in (0, 429) or err.status >= 500:
                            raise
                    self._state.remove_lease(e)
                self._synced()
                return True
            except (Unauthorized, Forbidden) as err:
                self._fatal = err
                return False
            except RoostError as err:
                self._set_conn("offline" if isinstance(err, ConnectionFailed) else "polling")
                log.warning("recovery: %s; again in %.1f s", err, delay)
                await self._pause(delay, ping_cancels=False)
                delay = min(self.poll_ceiling_s, delay * 2)
        return False

    # ---- 2. the run loop ----------------------------------------------------------------------

    async def _main(self) -> None:
        fail_delay = 1.0
        idle_delay = 1.0
        long_poll = self.long_poll_s
        while not self._stopping.is_set():
            if not (self._need_sync or not self._streaming):
                # Streaming and nothing new: wait for a ping, a free slot or the safety sync.
                self._kick.clear()
                try:
                    await asyncio.wait_for(self._kick.wait(), timeout=self.stream_resync_s)
                except asyncio.TimeoutError:
                    self._need_sync = True
                continue
            self._need_sync = False
            try:
                await self._sync_cursor()
                free = self.concurrency - len(self._tasks)  # after the await: handlers end
                if free <= 0:
                    self._more = True
                    self._kick.clear()  # no await between the check and the clear
                    await self._kick.wait()  # a handler finishing, a ping or stop
                    self._need_sync = True
                    continue
                streaming = self._streaming
                wait_s = 0 if streaming else max(1, min(long_poll, self.lease_s // 2))
                sent = time.monotonic()
                if wait_s:
                    finished, events = await self._long_poll(
                        limit=free, lease_s=self.lease_s, wait_s=wait_s, consumer=self._consumer)
                    if not finished:
                        return
                else:
                    events = await self._client.claim(self.agent_id, limit=free,
                                                      lease_s=self.lease_s,
                                                      consumer=self._consumer)
                self._synced()
                if not self._streaming:
                    self._set_conn("polling")
                fail_delay = 1.0
                self._start(events, sent)
                self._more = len(events) >= free
                if self._more:
                    self._need_sync = True
                    continue
                if events:
                    idle_delay = 1.0
                elif not self._streaming and time.monotonic() - sent < min(1.0, wait_s / 2):
                    # An empty answer that came at once: a server that does not long-poll.
                    await self._pause(_jitter(idle_delay))
                    idle_delay = min(self.poll_ceiling_s, idle_delay * 2)
            except (Unauthorized, Forbidden) as err:
                self._fatal = err
                return
            except BadRequest as err:
                if err.code == "invalid_wait_s" and long_poll > 1:
                    long_poll = max(1, long_poll // 2)  # roostd's claim.max_wait_s is lower
                    self._need_sync = True
                    continue
                if err.code == "invalid_cursor":
                    head = err.details.get("head")
                    self._state.set_meta("cursor", head if isinstance(head, int) else 0)
                    self._need_sync = True
                    continue
                self._fatal = err
                return
            except RoostError as err:
                self._need_sync = True
                self._set_conn("offline" if isinstance(err, ConnectionFailed) else
                               ("streaming" if self._streaming else "polling"))
                delay = fail_delay
                if isinstance(err, (RateLimited, Unavailable)) and err.retry_after:
                    delay = max(delay, min(err.retry_after, 3600.0))
                log.warning("agent %s: %s; again in %.1f s", self.agent_id, err, delay)
                # A ping cancels the backoff: work published after an outage runs at once.
                await self._pause(_jitter(delay))
                fail_delay = min(self.poll_ceiling_s, fail_delay * 2)

    async def _sync_cursor(self) -> None:
        """The cursor sync: proves the cursor is still kept (else 410: the state callback)
        and moves it to the head; skipped when the stream's head shows nothing new."""
        cursor = int(self._state.meta("cursor") or 0)
        if self._head is not None and self._head == self._synced_head and self._head <= cursor:
            return
        try:
            page = await self._client.inbox(self.agent_id, cursor, limit=1)
        except CursorExpired:
            st = await self._client.state(self.agent_id)
            log.warning("state resync after 410: continuing at cursor %d", st.cursor)
            if self.on_state is not None:
                r = self.on_state(st)
                if inspect.isawaitable(r):
                    await r
            self._state.set_meta("cursor", st.cursor)
            return
        if page.head != cursor:
            self._state.set_meta("cursor", page.head)
        self._synced_head = self._head

    # ---- 3. the stream -----------------------------------------------------------------------

    def _stream_thread(self) -> None:
        """The wake-up stream, read on a daemon thread with a blocking client.

        A thread, not a task: stopping must never cancel an httpx request in flight (httpcore
        0.16, which Debian 12 ships, can leave its pool stuck after such a cancellation), and
        a daemon thread blocked in a read is simply left behind at exit. Every ping is handed
        to the loop with ``call_soon_threadsafe``."""
        from ._client import Client
        from ._sse import StreamBackoff

        loop = self._loop
        assert loop is not None
        backoff = StreamBackoff()
        with Client(max_retries=0, **self._client_args) as client:
            while not self._stop_requested.is_set():
                err: Optional[RoostError] = None
                try:
                    for ping in client.subscribe(self.agent_id, reconnect=False):
                        if self._stop_requested.is_set():
                            return
                        backoff.reset()
                        self._post(self._on_ping, ping)
                except (Unauthorized, Forbidden) as e:
                    self._post(self._on_stream_fatal, e)
                    return
                except RoostError as e:
                    err = e
                except Exception as e:  # a broken stream of any kind: reconnect
                    err = RoostError(f"{type(e).__name__}: {e}", code="stream_error")
                self._post(self._on_stream_down, err)
                self._stop_requested.wait(backoff.next_delay(None))

    def _post(self, fn: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is not None and not loop.is_closed():
            try:
                loop.call_soon_threadsafe(fn, *args)
            except RuntimeError:
                pass  # the loop closed meanwhile

    def _on_ping(self, ping: Any) -> None:
        if not self._running:
            return
        if not self._streaming:
            self._streaming = True
            self._set_conn("streaming")
        self._synced()
        if ping.event == "inbox_updated" or ping.cursor_hint != self._head:
            self._head = ping.cursor_hint
            self._need_sync = True
            self._kick.set()  # also cancels a failure backoff

    def _on_stream_down(self, err: Optional[RoostError]) -> None:
        if not self._running:
            return
        if self._streaming:
            self._streaming = False
            self._set_conn("polling")
        self._kick.set()  # the run loop switches to long polls
        if err is not None:
            log.info("agent %s: stream: %s", self.agent_id, err)

    def _on_stream_fatal(self, err: RoostError) -> None:
        if self._running:
            self._fatal = err  # a refused token or signature: retrying cannot help
            self._on_stop()

    async def _long_poll(self, **kw: Any) -> Tuple[bool, Any]:
        """A long-poll claim on a daemon thread with a blocking client, so that stop never
        cancels it (see :meth:`_stream_thread`): (finished, events). Stop returns at once;
        an abandoned poll that still claims something leaves leases that expire, or that
        the next start's recovery releases (``release-all`` of this consumer)."""
        from ._client import Client

        loop = asyncio.get_running_loop()
        fut: "asyncio.Future[Any]" = loop.create_future()

        def deliver(ok: bool, value: Any) -> None:
            if not fut.done():
                (fut.set_result if ok else fut.set_exception)(value)

        def work() -> None:
            try:
                with Client(max_retries=0, **self._client_args) as c:
                    r: Any = c.claim(self.agent_id, **kw)
                ok = True
            except BaseException as e:  # handed to the loop, raised there
                r, ok = e, False
            self._post(deliver, ok, r)

        threading.Thread(target=work, name="roost-long-poll", daemon=True).start()
        stop = asyncio.ensure_future(self._stopping.wait())
        try:
            await asyncio.wait({fut, stop}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stop.cancel()
        if not fut.done():
            return False, None
        return True, fut.result()

    # ---- 4. handlers -------------------------------------------------------------------------

    def _start(self, events: List[Event], sent: float) -> None:
        if not events:
            return
        self._state.add_leases([(e.event_id, e.lease_token or "") for e in events])
        arrival = time.monotonic()
        left = self.lease_s - (arrival - sent)
        floor = min(max(1.0, 0.1 * self.lease_s), self.lease_s / 4)
        if left < floor:
            # A late answer: the lease may have expired and a sibling run the event.
            log.warning("claim answered %.1f s late: releasing %d event(s) unrun",
                        arrival - sent, len(events))
            for e in events:
                self._queue(_Outcome("release", e, 0, "shutdown", "claim answered too late"))
            return
        deadline = arrival + left
        for e in events:
            task = asyncio.ensure_future(self._handle(e, deadline))
            self._tasks.add(task)
            self._in_flight_n = len(self._tasks)
            task.add_done_callback(self._handler_done)

    def _handler_done(self, task: "asyncio.Task[None]") -> None:
        self._tasks.discard(task)
        self._in_flight_n = len(self._tasks)
        if self._more:
            self._need_sync = True
        self._kick.set()
        if not task.cancelled() and task.exception() is not None:
            log.error("agent %s: handler task failed", self.agent_id, exc_info=task.exception())

    async def _handle(self, ev: Event, deadline: float) -> None:
        if self._state.is_processed(ev.event_id):
            log.info("event %s: already processed, acking without running it", ev.event_id)
            self._queue(_Outcome("ack", ev))
            return
        started = time.monotonic()
        extender = asyncio.ensure_future(self._extend(ev, deadline))
        try:
            outcome = await self._run_handler(ev)
        finally:
            extender.cancel()
        ms = int((time.monotonic() - started) * 1000)
        if outcome.kind == "ack":
            self._state.add_processed(ev.event_id)  # recorded BEFORE the ack is sent
            self._handled += 1
            log.info("event %s attempt %d: ack after %d ms", ev.event_id, ev.attempts, ms)
        else:
            self._failed += 1
            first = (outcome.error or "").strip().splitlines()
            log.warning("event %s attempt %d: %s, retry in %d s after %d ms%s", ev.event_id,
                        ev.attempts, "quarantine" if outcome.reason == "poison" else "release",
                        outcome.delay_s, ms, (": " + first[-1]) if first else "")
        self._queue(outcome)

    async def _run_handler(self, ev: Event) -> _Outcome:
        handler = self._handler
        assert handler is not None
        backoff = min(MAX_BACKOFF_S, 2 ** max(0, ev.attempts - 1))
        try:
            if inspect.iscoroutinefunction(handler):
                result = await handler(ev)
            else:
                assert self._loop is not None
                result = await self._loop.run_in_executor(self._executor, handler, ev)
                if inspect.isawaitable(result):
                    result = await result
            if isinstance(result, (Retry, Quarantine)):
                raise result
            return _Outcome("ack", ev)
        except Retry as r:
            delay = backoff if r.after is None else max(0, math.ceil(r.after))
            reason = "shutdown" if ev.attempts < self.tempfail_max else "transient"
            return _Outcome("release", ev, delay, reason, _bounded(r.reason or "retry later"))
        except Quarantine as q:
            return _Outcome("release", ev, 0, "poison", _bounded(q.reason or "quarantined"))
        except Exception as e:
            tb = "".join(traceback.format_exception(type(e), e, e.__traceback__))
            return _Outcome("release", ev, backoff, "transient", _bounded(tb))

    async def _extend(self, ev: Event, deadline: float) -> None:
        """Extends the lease at half of what is left, for as long as the handler runs."""
        while True:
            await asyncio.sleep(max(0.05, (deadline - time.monotonic()) / 2))
            sent = time.monotonic()
            try:
                await self._client.extend(self.agent_id, ev.event_id, ev.lease_token or "",
                                          self.lease_s)
                deadline = sent + self.lease_s
            except RoostError as err:
                if err.status in (404, 409):
                    log.warning("event %s: lease extension refused (%s)", ev.event_id, err.code)
                    return
                await asyncio.sleep(1.0)  # roostd unreachable: try again soon

    # ---- 5. the keeper: acks and releases -----------------------------------------------------

    def _queue(self, outcome: _Outcome) -> None:
        self._outbox.append(outcome)
        self._keeper_kick.set()

    async def _keeper(self) -> None:
        delay = 0.5
        while True:
            if not self._outbox:
                if self._stopping.is_set() and not self._tasks:
                    return
                self._keeper_kick.clear()
                try:
                    await asyncio.wait_for(self._keeper_kick.wait(), timeout=1.0)
                except asyncio.TimeoutError:
                    pass
                continue
            try:
                await self._flush_once()
                delay = 0.5
            except RoostError as err:
                if isinstance(err, (Unauthorized, Forbidden)):
                    log.error("agent %s: acks refused: %s", self.agent_id, err)
                log.warning("agent %s: acks/releases: %s; again in %.1f s", self.agent_id, err,
                            delay)
                await asyncio.sleep(delay)
                delay = min(5.0, delay * 2)

    async def _flush_once(self) -> None:
        acks = [o for o in self._outbox if o.kind == "ack"][:ACK_BATCH]
        if acks:
            if not self._single_acks:
                try:
                    results = await self._client.ack_batch(
                        self.agent_id, [(o.event.event_id, o.event.lease_token or "") for o in acks])
                except RoostError as err:
                    if err.status not in (404, 405) or err.code not in ("not_found",
                                                                        "method_not_allowed"):
                        raise
                    self._single_acks = True  # an older roostd without the batch route
                    return
                for o, r in zip(acks, results):
                    if r.error is not None:
                        log.warning("event %s: ack refused (%s)", o.event.event_id,
                                    getattr(r.error, "code", r.error))
                    self._settle(o)
            else:
                o = acks[0]
                try:
                    await self._client.ack(self.agent_id, o.event.event_id,
                                           o.event.lease_token or "")
                except RoostError as err:
                    if err.status not in (404, 409):
                        raise
                    log.warning("event %s: ack refused (%s)", o.event.event_id, err.code)
                self._settle(o)
            self._synced()
            return
        o = next(o for o in self._outbox if o.kind == "release")
        try:
            status = await self._client.release(self.agent_id, o.event.event_id,
                                                o.event.lease_token or "", delay_s=o.delay_s,
                                                reason=o.reason, error=o.error)
            if status == "quarantined":
                log.warning("event %s: quarantined", o.event.event_id)
        except RoostError as err:
            if err.status not in (404, 409):
                raise
            log.warning("event %s: release refused (%s)", o.event.event_id, err.code)
        self._settle(o)
        self._synced()

    def _settle(self, o: _Outcome) -> None:
        self._state.remove_lease(o.event.event_id)
        try:
            self._outbox.remove(o)
        except ValueError:
            pass

    # ---- 6. stop ---------------------------------------------------------------------------------

    async def _shutdown(self, keeper: Optional["asyncio.Task[None]"]) -> None:
        self._on_stop()
        # Running handlers are waited for (without a deadline, as libroost).
        log.debug("shutdown: %d handler(s)", len(self._tasks))
        while self._tasks:
            await asyncio.wait(set(self._tasks))
        log.debug("shutdown: keeper")
        if keeper is not None:
            try:
                await asyncio.wait_for(keeper, timeout=FLUSH_DEADLINE_S)
            except (asyncio.TimeoutError, Exception):
                log.warning("agent %s: roostd did not take the last acks/releases within %.0f s",
                            self.agent_id, FLUSH_DEADLINE_S)
        consumer = getattr(self, "_consumer", None)
        if consumer is not None:
            try:
                await asyncio.wait_for(self._client.release_all(self.agent_id, consumer),
                                       timeout=FLUSH_DEADLINE_S)
                if not self._outbox:
                    for e, _ in self._state.leases():
                        self._state.remove_lease(e)
            except (RoostError, asyncio.TimeoutError) as err:
                log.warning("agent %s: release-all at stop: %s", self.agent_id, err)
        self._set_conn("stopped")
        self._executor.shutdown(wait=False)
        await self._client.aclose()
        self._state.close()
