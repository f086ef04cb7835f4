# SPDX-License-Identifier: MIT
"""``roost.Client`` (blocking, over ``httpx.Client``) and ``roost.AsyncClient`` (asyncio, over
``httpx.AsyncClient``): the same methods with the same names and answers.

Each method builds its request with the shared core (``_core.ClientCore``) and hands it to
``_send``, the only place that does I/O: send, ask the core what the answer means (a result,
a typed exception, or "again after N seconds"), sleep and repeat. The route methods below are
one line each, in the same order in both classes.
"""

from __future__ import annotations

import asyncio
import time
from types import TracebackType
from typing import (
    Any,
    AsyncIterator,
    Dict,
    Iterator,
    List,
    Mapping,
    Optional,
    Sequence,
    Tuple,
    Type,
    TypeVar,
    Union,
)

import httpx

from ._core import Again, Call, ClientCore
from ._errors import ConnectionFailed, RoostError, error_from_response
from ._models import (
    AckResult,
    AgentState,
    Event,
    InboxPage,
    Page,
    Ping,
    PublishResult,
    Ticket,
)
from ._signing import KeyLike, SigningKey
from ._sse import SSEParser, StreamBackoff, ping_of
from ._tokens import TokenLike
from ._transport import async_transport, sync_transport

__all__ = ["Client", "AsyncClient"]

T = TypeVar("T")

#: A stream silent this long (heartbeats come every 30 s) is taken as dead.
STREAM_SILENCE_S = 75.0
#: Page size of the iterating helpers.
ITER_PAGE = 100


def _stream_error(resp: httpx.Response, content: bytes) -> RoostError:
    import json

    try:
        body: Any = json.loads(content) if content else None
    except ValueError:
        body = None
    return error_from_response(resp.status_code, body,
                               retry_after=resp.headers.get("retry-after"),
                               request_id=resp.headers.get("x-request-id"))


def _fatal_stream_error(err: RoostError) -> bool:
    """Errors retrying cannot fix: a refused token or signature, a missing scope, bad input."""
    return err.status in (400, 401, 403, 404)


class _Base:
    def __init__(self, base_url: Optional[str], token: Optional[TokenLike],
                 signing_key: Optional[KeyLike], timeout_s: float, max_retries: int) -> None:
        self._core = ClientCore(base_url, token=token, signing_key=signing_key,
                                timeout_s=timeout_s, max_retries=max_retries)

    @property
    def base_url(self) -> str:
        """The roostd URL this client talks to."""
        return self._core.base_url

    @classmethod
    def _env_args(cls) -> Dict[str, Any]:
        import os

        token = os.environ.get("ROOST_TOKEN")
        return {"base_url": os.environ.get("ROOST_SERVER"), "token": token or None,
                "signing_key": SigningKey.from_env()}


class Client(_Base):
    """A blocking client. Thread-safe; use it as a context manager or call :meth:`close`.

    Args:
        base_url: roostd's URL (default ``$ROOST_SERVER``, else ``http://127.0.0.1:8080``).
        token: a bearer token string, a :class:`TokenFile`, a :class:`TokenCommand`, or a
            callable returning the token (asked before every request).
        signing_key: a :class:`SigningKey`: every request is then signed (RFC 9421); or a
            callable answering the current key (one that rotates: ``DeviceLogin.signing_key``).
        timeout_s: per-request timeout (long polls get their ``wait_s`` on top).
        max_retries: how often a retryable call (publish, reads, acks) is repeated after a
            connection error, 503 or 429.
        http: an ``httpx.Client`` of your own (its base URL and auth are not used).
    """

    def __init__(self, base_url: Optional[str] = None, *, token: Optional[TokenLike] = None,
                 signing_key: Optional[KeyLike] = None, timeout_s: float = 30.0,
                 max_retries: int = 5, http: Optional[httpx.Client] = None) -> None:
        super().__init__(base_url, token, signing_key, timeout_s, max_retries)
        self._http = http or httpx.Client(transport=sync_transport())
        self._own_http = http is None

    @classmethod
    def from_env(cls, **kw: Any) -> "Client":
        """A client configured as the CLI is: ``ROOST_SERVER``, ``ROOST_TOKEN`` and
        ``ROOST_KEY_FILE``/``ROOST_KEY_ID``/``ROOST_KEY_ALG``; keyword arguments win."""
        return cls(**{**cls._env_args(), **kw})

    def close(self) -> None:
        """Closes the connections (only those of an ``httpx.Client`` this client made)."""
        if self._own_http:
            self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, exc_type: Optional[Type[BaseException]], exc: Optional[BaseException],
                 tb: Optional[TracebackType]) -> None:
        self.close()

    def _send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            attempt += 1
            try:
                resp = self._http.request(call.method, self._core.url(call),
                                          headers=self._core.headers(call), content=call.body,
                                          timeout=self._core.timeout(call))
            except httpx.TransportError as e:
                again = self._core.on_transport_error(call, attempt, e)
                time.sleep(again.delay_s)
                continue
            outcome = self._core.on_answer(call, attempt, resp.status_code, resp.headers,
                                           resp.content)
            if isinstance(outcome, Again):
                time.sleep(outcome.delay_s)
                continue
            return outcome

    def iter_inbox(self, agent_id: str, after_cursor: int = 0, *,
                   page_size: int = ITER_PAGE) -> Iterator[Event]:
        """Every event after ``after_cursor``, page by page, until the head."""
        while True:
            page = self.inbox(agent_id, after_cursor, limit=page_size)
            yield from page.events
            after_cursor = page.next_cursor
            if not page.has_more:
                return

    def subscribe(self, agent_id: str, *, last_event_id: Optional[str] = None,
                  reconnect: bool = True) -> Iterator[Ping]:
        """The wake-up stream as an iterator of :class:`Ping` (``inbox_updated``,
        ``heartbeat``), reconnecting with backoff (sending ``Last-Event-ID``) when it breaks.

        A ping carries no events: pull with :meth:`inbox` or :meth:`claim`. A refused token
        or scope raises; with ``reconnect=False`` any end of the stream ends the iterator.
        """
        parser = SSEParser()
        parser.last_id = last_event_id
        backoff = StreamBackoff()
        while True:
            url, headers = self._core.subscribe_request(agent_id, parser.last_id)
            timeout = httpx.Timeout(self._core.timeout_s, read=STREAM_SILENCE_S)
            try:
                with self._http.stream("GET", url, headers=headers, timeout=timeout) as resp:
                    if resp.status_code != 200:
                        err = _stream_error(resp, resp.read())
                        if _fatal_stream_error(err) or not reconnect:
                            raise err
                    else:
                        for chunk in resp.iter_raw():
                            for msg in parser.feed(chunk):
                                if msg.event in ("inbox_updated", "heartbeat"):
                                    backoff.reset()
                                    yield ping_of(msg)
            except httpx.TransportError as e:
                if not reconnect:
                    raise ConnectionFailed(str(e) or type(e).__name__,
                                           code="connect_failed") from e
            if not reconnect:
                return
            time.sleep(backoff.next_delay(parser.retry_ms))

    def publish(
        self,
        recipients: Union[str, Sequence[str]],
        payload: Optional[Mapping[str, Any]] = None,
        *,
        priority: Optional[int] = None,
        correlation_id: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        delay_s: Optional[int] = None,
        available_at: Optional[str] = None,
        ttl_s: Optional[int] = None,
        expires_at: Optional[str] = None,
        state_patch: Optional[Mapping[str, Any]] = None,
    ) -> PublishResult:
        """Publish one event to one or more recipients (fan-out).

        An idempotency key is generated when none is given; connection errors, 503 and 429 are
        retried (honouring ``Retry-After``) with the same key, so a retry never makes a second event.
        """
        return self._send(
            self._core.publish(
                recipients,
                payload,
                priority=priority,
                correlation_id=correlation_id,
                idempotency_key=idempotency_key,
                delay_s=delay_s,
                available_at=available_at,
                ttl_s=ttl_s,
                expires_at=expires_at,
                state_patch=state_patch,
            )
        )

    def publish_batch(self, events: Sequence[Mapping[str, Any]]) -> PublishResult:
        """Publish several events in one transaction (all or nothing); each item takes the fields of
        :meth:`publish` (``recipients``, ``payload``, ...). Keys are generated per item when absent.
        """
        return self._send(self._core.publish_batch(events))

    def inbox(
        self,
        agent_id: str,
        after_cursor: int = 0,
        *,
        limit: Optional[int] = None,
        wait_s: Optional[int] = None,
    ) -> InboxPage:
        """One page of the read-only cursor sync (``GET .../inbox``); raises :class:`CursorExpired`
        (410) when the cursor is behind retention.
        """
        return self._send(self._core.inbox(agent_id, after_cursor, limit, wait_s))

    def peek(self, agent_id: str) -> Optional[Event]:
        """The event the next :meth:`claim` would take (highest priority, then oldest; pending,
        not scheduled, not expired), payload included, without claiming it (``GET
        .../inbox/peek``): no lease, no attempt counted, so another consumer may claim it first.
        ``None`` when nothing is claimable. Needs the agent's read scope.
        """
        return self._send(self._core.peek(agent_id))

    def state(self, agent_id: str) -> AgentState:
        """The agent's state document and the cursor it is consistent with (``GET .../state``)."""
        return self._send(self._core.state(agent_id))

    def claim(
        self,
        agent_id: str,
        *,
        limit: Optional[int] = None,
        lease_s: Optional[int] = None,
        wait_s: Optional[int] = None,
        consumer: Optional[str] = None,
    ) -> List[Event]:
        """Claim up to ``limit`` events with a lease; ``wait_s`` long-polls while none is claimable."""
        return self._send(self._core.claim(agent_id, limit, lease_s, wait_s, consumer))

    def ack(self, agent_id: str, event_id: str, lease_token: str) -> str:
        """Complete a claimed event; returns ``"completed"``. Safe to repeat with the same token."""
        return self._send(self._core.ack(agent_id, event_id, lease_token))

    def ack_batch(self, agent_id: str, acks: Sequence[Tuple[str, str]]) -> List[AckResult]:
        """Complete several events: ``acks`` is (event_id, lease_token) pairs; one result per item."""
        return self._send(self._core.ack_batch(agent_id, acks))

    def release(
        self,
        agent_id: str,
        event_id: str,
        lease_token: str,
        *,
        delay_s: Optional[int] = None,
        reason: Optional[str] = None,
        error: Optional[str] = None,
    ) -> str:
        """Give a claimed event back (``reason`` transient, shutdown or poison); returns
        ``"released"`` or ``"quarantined"``.
        """
        return self._send(
            self._core.release(
                agent_id,
                event_id,
                lease_token,
                delay_s=delay_s,
                reason=reason,
                error=error,
            )
        )

    def extend(self, agent_id: str, event_id: str, lease_token: str, lease_s: int) -> str:
        """Extend a lease to now + ``lease_s``; returns the new ``claim_expires_at``."""
        return self._send(self._core.extend(agent_id, event_id, lease_token, lease_s))

    def release_all(self, agent_id: str, consumer: Optional[str] = None) -> int:
        """Release every lease ``consumer`` holds (reason shutdown); returns how many."""
        return self._send(self._core.release_all(agent_id, consumer))

    def subscribe_ticket(self, agent_id: str) -> Ticket:
        """A single-use ticket to open the stream without a token (``?ticket=``)."""
        return self._send(self._core.subscribe_ticket(agent_id))

    def register_callback(self, agent_id: str, url: str, secret: str) -> Dict[str, Any]:
        """Register the agent's webhook endpoint (verified by a challenge before it is stored)."""
        return self._send(self._core.register_callback(agent_id, url, secret))

    def list_callbacks(self, agent_id: str) -> Page:
        """The agent's webhook endpoints."""
        return self._send(self._core.list_callbacks(agent_id))

    def delete_callback(self, agent_id: str, endpoint_id: str) -> Dict[str, Any]:
        """Delete the agent's webhook endpoint."""
        return self._send(self._core.delete_callback(agent_id, endpoint_id))

    def list_agents(
        self,
        *,
        sort: Optional[str] = None,
        limit: Optional[int] = None,
        next: Optional[str] = None,
    ) -> Page:
        """Operator: one page of the tenant's agents (``sort`` agent, depth or age)."""
        return self._send(self._core.list_agents(sort, limit, next))

    def stats(self) -> Dict[str, Any]:
        """Operator: the tenant's counts from the metrics snapshot."""
        return self._send(self._core.stats())

    def list_quarantine(
        self,
        *,
        agent_id: Optional[str] = None,
        limit: Optional[int] = None,
        next: Optional[str] = None,
    ) -> Page:
        """Operator: one page of quarantined events."""
        return self._send(self._core.list_quarantine(agent_id, limit, next))

    def get_quarantined(self, event_id: str) -> Event:
        """Operator: one quarantined event with ``attempts``, ``nacks``, ``last_error`` (in ``raw``)."""
        return self._send(self._core.get_quarantined(event_id))

    def requeue(self, event_id: str) -> Dict[str, Any]:
        """Operator: make a quarantined (or expired) event pending again, same id."""
        return self._send(self._core.requeue(event_id))

    def requeue_all(
        self,
        *,
        agent_id: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> Dict[str, Any]:
        """Operator: requeue up to ``limit`` quarantined events (``more`` says call again)."""
        return self._send(self._core.requeue_all(agent_id, limit))

    def purge_quarantined(self, event_id: str) -> Dict[str, Any]:
        """Operator: delete one quarantined event for good."""
        return self._send(self._core.purge_quarantined(event_id))

    def purge_quarantine(
        self,
        *,
        agent_id: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> Dict[str, Any]:
        """Operator: delete up to ``limit`` quarantined events."""
        return self._send(self._core.purge_quarantine(agent_id, limit))

    def add_key(
        self,
        key_id: str,
        agent_id: str,
        alg: str,
        *,
        public_key: Any = None,
        secret: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Operator: register a request-signing key (``agent_id`` ``"*"`` for a producer key)."""
        return self._send(
            self._core.add_key(
                key_id,
                agent_id,
                alg,
                public_key=public_key,
                secret=secret,
            )
        )

    def list_keys(self, *, limit: Optional[int] = None, next: Optional[str] = None) -> Page:
        """Operator: one page of signing keys (metadata only)."""
        return self._send(self._core.list_keys(limit, next))

    def revoke_key(self, key_id: str) -> Dict[str, Any]:
        """Operator: revoke a signing key."""
        return self._send(self._core.revoke_key(key_id))

    def list_endpoints(
        self,
        *,
        agent_id: Optional[str] = None,
        limit: Optional[int] = None,
        next: Optional[str] = None,
    ) -> Page:
        """Operator: one page of webhook endpoints."""
        return self._send(self._core.list_endpoints(agent_id, limit, next))

    def get_endpoint(self, endpoint_id: str) -> Dict[str, Any]:
        """Operator: one webhook endpoint."""
        return self._send(self._core.get_endpoint(endpoint_id))

    def set_endpoint_enabled(self, endpoint_id: str, enabled: bool) -> Dict[str, Any]:
        """Operator: enable or disable a webhook endpoint."""
        return self._send(self._core.set_endpoint_enabled(endpoint_id, enabled))

    def endpoint_attempts(
        self,
        endpoint_id: str,
        *,
        event_id: Optional[str] = None,
        limit: Optional[int] = None,
        next: Optional[str] = None,
    ) -> Page:
        """Operator: one page of an endpoint's delivery attempts."""
        return self._send(self._core.endpoint_attempts(endpoint_id, event_id, limit, next))

    def replay_endpoint(
        self,
        endpoint_id: str,
        *,
        event_id: Optional[str] = None,
        since: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Operator: deliver quarantined events again (one, or all since a time)."""
        return self._send(self._core.replay_endpoint(endpoint_id, event_id=event_id, since=since))

    def server_keys(self) -> Dict[str, Any]:
        """roostd's public signing keys (JWK Set), for verifying its webhook deliveries."""
        return self._send(self._core.server_keys())


class AsyncClient(_Base):
    """The asyncio client: :class:`Client`'s methods as coroutines, same names and answers.

    Use ``async with roost.AsyncClient(...) as c:`` or ``await c.aclose()``.
    """

    def __init__(self, base_url: Optional[str] = None, *, token: Optional[TokenLike] = None,
                 signing_key: Optional[KeyLike] = None, timeout_s: float = 30.0,
                 max_retries: int = 5, http: Optional[httpx.AsyncClient] = None) -> None:
        super().__init__(base_url, token, signing_key, timeout_s, max_retries)
        self._http = http or httpx.AsyncClient(transport=async_transport())
        self._own_http = http is None

    @classmethod
    def from_env(cls, **kw: Any) -> "AsyncClient":
        """As :meth:`Client.from_env`."""
        return cls(**{**cls._env_args(), **kw})

    async def aclose(self) -> None:
        """Closes the connections (only those of an ``httpx.AsyncClient`` this client made)."""
        if self._own_http:
            await self._http.aclose()

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, exc_type: Optional[Type[BaseException]],
                        exc: Optional[BaseException], tb: Optional[TracebackType]) -> None:
        await self.aclose()

    async def _send(self, call: Call[T]) -> T:
        attempt = 0
        while True:
            attempt += 1
            try:
                resp = await self._http.request(call.method, self._core.url(call),
                                                headers=self._core.headers(call),
                                                content=call.body,
                                                timeout=self._core.timeout(call))
            except httpx.TransportError as e:
                again = self._core.on_transport_error(call, attempt, e)
                await asyncio.sleep(again.delay_s)
                continue
            outcome = self._core.on_answer(call, attempt, resp.status_code, resp.headers,
                                           resp.content)
            if isinstance(outcome, Again):
                await asyncio.sleep(outcome.delay_s)
                continue
            return outcome

    async def iter_inbox(self, agent_id: str, after_cursor: int = 0, *,
                         page_size: int = ITER_PAGE) -> AsyncIterator[Event]:
        """Every event after ``after_cursor``, page by page, until the head."""
        while True:
            page = await self.inbox(agent_id, after_cursor, limit=page_size)
            for ev in page.events:
                yield ev
            after_cursor = page.next_cursor
            if not page.has_more:
                return

    async def subscribe(self, agent_id: str, *, last_event_id: Optional[str] = None,
                        reconnect: bool = True) -> AsyncIterator[Ping]:
        """As :meth:`Client.subscribe`, an async iterator."""
        parser = SSEParser()
        parser.last_id = last_event_id
        backoff = StreamBackoff()
        while True:
            url, headers = self._core.subscribe_request(agent_id, parser.last_id)
            timeout = httpx.Timeout(self._core.timeout_s, read=STREAM_SILENCE_S)
            try:
                async with self._http.stream("GET", url, headers=headers,
                                             timeout=timeout) as resp:
                    if resp.status_code != 200:
                        err = _stream_error(resp, await resp.aread())
                        if _fatal_stream_error(err) or not reconnect:
                            raise err
                    else:
                        async for chunk in resp.aiter_raw():
                            for msg in parser.feed(chunk):
                                if msg.event in ("inbox_updated", "heartbeat"):
                                    backoff.reset()
                                    yield ping_of(msg)
            except httpx.TransportError as e:
                if not reconnect:
                    raise ConnectionFailed(str(e) or type(e).__name__,
                                           code="connect_failed") from e
            if not reconnect:
                return
            await asyncio.sleep(backoff.next_delay(parser.retry_ms))

    async def publish(
        self,
        recipients: Union[str, Sequence[str]],
        payload: Optional[Mapping[str, Any]] = None,
        *,
        priority: Optional[int] = None,
        correlation_id: Optional[str] = None,
        idempotency_key: Optional[str] = None,
        delay_s: Optional[int] = None,
        available_at: Optional[str] = None,
        ttl_s: Optional[int] = None,
        expires_at: Optional[str] = None,
        state_patch: Optional[Mapping[str, Any]] = None,
    ) -> PublishResult:
        """Publish one event to one or more recipients (fan-out).

        An idempotency key is generated when none is given; connection errors, 503 and 429 are
        retried (honouring ``Retry-After``) with the same key, so a retry never makes a second event.
        """
        return await self._send(
            self._core.publish(
                recipients,
                payload,
                priority=priority,
                correlation_id=correlation_id,
                idempotency_key=idempotency_key,
                delay_s=delay_s,
                available_at=available_at,
                ttl_s=ttl_s,
                expires_at=expires_at,
                state_patch=state_patch,
            )
        )

    async def publish_batch(self, events: Sequence[Mapping[str, Any]]) -> PublishResult:
        """Publish several events in one transaction (all or nothing); each item takes the fields of
        :meth:`publish` (``recipients``, ``payload``, ...). Keys are generated per item when absent.
        """
        return await self._send(self._core.publish_batch(events))

    async def inbox(
        self,
        agent_id: str,
        after_cursor: int = 0,
        *,
        limit: Optional[int] = None,
        wait_s: Optional[int] = None,
    ) -> InboxPage:
        """One page of the read-only cursor sync (``GET .../inbox``); raises :class:`CursorExpired`
        (410) when the cursor is behind retention.
        """
        return await self._send(self._core.inbox(agent_id, after_cursor, limit, wait_s))

    async def peek(self, agent_id: str) -> Optional[Event]:
        """The event the next :meth:`claim` would take (highest priority, then oldest; pending,
        not scheduled, not expired), payload included, without claiming it (``GET
        .../inbox/peek``): no lease, no attempt counted, so another consumer may claim it first.
        ``None`` when nothing is claimable. Needs the agent's read scope.
        """
        return await self._send(self._core.peek(agent_id))

    async def state(self, agent_id: str) -> AgentState:
        """The agent's state document and the cursor it is consistent with (``GET .../state``)."""
        return await self._send(self._core.state(agent_id))

    async def claim(
        self,
        agent_id: str,
        *,
        limit: Optional[int] = None,
        lease_s: Optional[int] = None,
        wait_s: Optional[int] = None,
        consumer: Optional[str] = None,
    ) -> List[Event]:
        """Claim up to ``limit`` events with a lease; ``wait_s`` long-polls while none is claimable."""
        return await self._send(self._core.claim(agent_id, limit, lease_s, wait_s, consumer))

    async def ack(self, agent_id: str, event_id: str, lease_token: str) -> str:
        """Complete a claimed event; returns ``"completed"``. Safe to repeat with the same token."""
        return await self._send(self._core.ack(agent_id, event_id, lease_token))

    async def ack_batch(self, agent_id: str, acks: Sequence[Tuple[str, str]]) -> List[AckResult]:
        """Complete several events: ``acks`` is (event_id, lease_token) pairs; one result per item."""
        return await self._send(self._core.ack_batch(agent_id, acks))

    async def release(
        self,
        agent_id: str,
        event_id: str,
        lease_token: str,
        *,
        delay_s: Optional[int] = None,
        reason: Optional[str] = None,
        error: Optional[str] = None,
    ) -> str:
        """Give a claimed event back (``reason`` transient, shutdown or poison); returns
        ``"released"`` or ``"quarantined"``.
        """
        return await self._send(
            self._core.release(
                agent_id,
                event_id,
                lease_token,
                delay_s=delay_s,
                reason=reason,
                error=error,
            )
        )

    async def extend(self, agent_id: str, event_id: str, lease_token: str, lease_s: int) -> str:
        """Extend a lease to now + ``lease_s``; returns the new ``claim_expires_at``."""
        return await self._send(self._core.extend(agent_id, event_id, lease_token, lease_s))

    async def release_all(self, agent_id: str, consumer: Optional[str] = None) -> int:
        """Release every lease ``consumer`` holds (reason shutdown); returns how many."""
        return await self._send(self._core.release_all(agent_id, consumer))

    async def subscribe_ticket(self, agent_id: str) -> Ticket:
        """A single-use ticket to open the stream without a token (``?ticket=``)."""
        return await self._send(self._core.subscribe_ticket(agent_id))

    async def register_callback(self, agent_id: str, url: str, secret: str) -> Dict[str, Any]:
        """Register the agent's webhook endpoint (verified by a challenge before it is stored)."""
        return await self._send(self._core.register_callback(agent_id, url, secret))

    async def list_callbacks(self, agent_id: str) -> Page:
        """The agent's webhook endpoints."""
        return await self._send(self._core.list_callbacks(agent_id))

    async def delete_callback(self, agent_id: str, endpoint_id: str) -> Dict[str, Any]:
        """Delete the agent's webhook endpoint."""
        return await self._send(self._core.delete_callback(agent_id, endpoint_id))

    async def list_agents(
        self,
        *,
        sort: Optional[str] = None,
        limit: Optional[int] = None,
        next: Optional[str] = None,
    ) -> Page:
        """Operator: one page of the tenant's agents (``sort`` agent, depth or age)."""
        return await self._send(self._core.list_agents(sort, limit, next))

    async def stats(self) -> Dict[str, Any]:
        """Operator: the tenant's counts from the metrics snapshot."""
        return await self._send(self._core.stats())

    async def list_quarantine(
        self,
        *,
        agent_id: Optional[str] = None,
        limit: Optional[int] = None,
        next: Optional[str] = None,
    ) -> Page:
        """Operator: one page of quarantined events."""
        return await self._send(self._core.list_quarantine(agent_id, limit, next))

    async def get_quarantined(self, event_id: str) -> Event:
        """Operator: one quarantined event with ``attempts``, ``nacks``, ``last_error`` (in ``raw``)."""
        return await self._send(self._core.get_quarantined(event_id))

    async def requeue(self, event_id: str) -> Dict[str, Any]:
        """Operator: make a quarantined (or expired) event pending again, same id."""
        return await self._send(self._core.requeue(event_id))

    async def requeue_all(
        self,
        *,
        agent_id: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> Dict[str, Any]:
        """Operator: requeue up to ``limit`` quarantined events (``more`` says call again)."""
        return await self._send(self._core.requeue_all(agent_id, limit))

    async def purge_quarantined(self, event_id: str) -> Dict[str, Any]:
        """Operator: delete one quarantined event for good."""
        return await self._send(self._core.purge_quarantined(event_id))

    async def purge_quarantine(
        self,
        *,
        agent_id: Optional[str] = None,
        limit: Optional[int] = None,
    ) -> Dict[str, Any]:
        """Operator: delete up to ``limit`` quarantined events."""
        return await self._send(self._core.purge_quarantine(agent_id, limit))

    async def add_key(
        self,
        key_id: str,
        agent_id: str,
        alg: str,
        *,
        public_key: Any = None,
        secret: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Operator: register a request-signing key (``agent_id`` ``"*"`` for a producer key)."""
        return await self._send(
            self._core.add_key(
                key_id,
                agent_id,
                alg,
                public_key=public_key,
                secret=secret,
            )
        )

    async def list_keys(self, *, limit: Optional[int] = None, next: Optional[str] = None) -> Page:
        """Operator: one page of signing keys (metadata only)."""
        return await self._send(self._core.list_keys(limit, next))

    async def revoke_key(self, key_id: str) -> Dict[str, Any]:
        """Operator: revoke a signing key."""
        return await self._send(self._core.revoke_key(key_id))

    async def list_endpoints(
        self,
        *,
        agent_id: Optional[str] = None,
        limit: Optional[int] = None,
        next: Optional[str] = None,
    ) -> Page:
        """Operator: one page of webhook endpoints."""
        return await self._send(self._core.list_endpoints(agent_id, limit, next))

    async def get_endpoint(self, endpoint_id: str) -> Dict[str, Any]:
        """Operator: one webhook endpoint."""
        return await self._send(self._core.get_endpoint(endpoint_id))

    async def set_endpoint_enabled(self, endpoint_id: str, enabled: bool) -> Dict[str, Any]:
        """Operator: enable or disable a webhook endpoint."""
        return await self._send(self._core.set_endpoint_enabled(endpoint_id, enabled))

    async def endpoint_attempts(
        self,
        endpoint_id: str,
        *,
        event_id: Optional[str] = None,
        limit: Optional[int] = None,
        next: Optional[str] = None,
    ) -> Page:
        """Operator: one page of an endpoint's delivery attempts."""
        return await self._send(self._core.endpoint_attempts(endpoint_id, event_id, limit, next))

    async def replay_endpoint(
        self,
        endpoint_id: str,
        *,
        event_id: Optional[str] = None,
        since: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Operator: deliver quarantined events again (one, or all since a time)."""
        return await self._send(
            self._core.replay_endpoint(
                endpoint_id,
                event_id=event_id,
                since=since,
            )
        )

    async def server_keys(self) -> Dict[str, Any]:
        """roostd's public signing keys (JWK Set), for verifying its webhook deliveries."""
        return await self._send(self._core.server_keys())

