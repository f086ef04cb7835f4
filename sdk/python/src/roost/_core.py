# SPDX-License-Identifier: MIT
"""The sans-I/O core shared by :class:`roost.Client` and :class:`roost.AsyncClient`.

Everything that is not sending bytes lives here, once: what each route's request looks like
(:class:`Call`), the headers of one attempt (token, idempotency, signature), turning an answer
into a result or a typed exception, and whether and when to try again. The two clients only
send the request and sleep, one with ``httpx.Client`` and ``time.sleep``, the other with
``httpx.AsyncClient`` and ``asyncio.sleep``.
"""

from __future__ import annotations

import json
import os
import random
import urllib.parse
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Generic, List, Mapping, Optional, Sequence, Tuple, TypeVar

from ._errors import (
    ConnectionFailed,
    ProtocolError,
    RoostError,
    error_from_response,
    parse_retry_after,
)
from ._ids import new_idempotency_key
from ._models import (
    AckResult,
    AgentState,
    Event,
    InboxPage,
    Page,
    PublishResult,
    Ticket,
)
from ._signing import KeyLike, SigningKey
from ._tokens import TokenLike, TokenSource, token_source

T = TypeVar("T")

DEFAULT_SERVER = "http://127.0.0.1:8080"
DEFAULT_TIMEOUT_S = 30.0
#: A long poll's HTTP timeout is its ``wait_s`` plus this margin.
LONG_POLL_MARGIN_S = 15.0
#: Retries of a retryable call: attempts are 1 + max_retries.
DEFAULT_MAX_RETRIES = 5
RETRY_BASE_S = 0.5
RETRY_CAP_S = 8.0
#: The longest ``Retry-After`` honoured (roostd's are seconds).
RETRY_AFTER_CAP_S = 60.0
#: Answers after which a retryable call is sent again: roostd's 429 and 503, and the 502/504
#: of a proxy in front of it.
RETRY_STATUSES = frozenset({429, 502, 503, 504})

_PUBLISH_FIELDS = frozenset(
    {"recipients", "payload", "priority", "correlation_id", "idempotency_key", "delay_s",
     "available_at", "ttl_s", "expires_at", "state_patch"}
)


@dataclass
class Call(Generic[T]):
    """One API call, built once and sent one or more times.

    ``body`` is encoded once, so every retry sends the same bytes (the same idempotency keys).
    ``parse`` turns a success (status, decoded JSON) into the result. ``retry`` says the call
    may be repeated after a transport error, 429 or 503 without changing its effect.
    """

    method: str
    path: str
    parse: Callable[[int, Any], T]
    query: Optional[Dict[str, Any]] = None
    body: Optional[bytes] = None
    retry: bool = False
    timeout_s: Optional[float] = None
    idempotency_keys: List[str] = field(default_factory=list)

    def query_string(self) -> Optional[str]:
        if not self.query:
            return None
        items = [(k, _qv(v)) for k, v in self.query.items() if v is not None]
        return urllib.parse.urlencode(items, quote_via=urllib.parse.quote) if items else None


@dataclass(frozen=True)
class Again:
    """The core's answer "send it again after ``delay_s``" (the last error kept for the end)."""

    delay_s: float
    error: RoostError


def _qv(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _seg(value: str, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{what} must be a non-empty string")
    return urllib.parse.quote(value, safe="")


def _json_body(obj: Mapping[str, Any]) -> bytes:
    return json.dumps({k: v for k, v in obj.items() if v is not None},
                      separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _empty(status: int, body: Any) -> Dict[str, Any]:
    return body if isinstance(body, dict) else {}


def _page(key: str) -> Callable[[int, Any], Page]:
    def parse(status: int, body: Any) -> Page:
        if not isinstance(body, dict) or not isinstance(body.get(key), list):
            raise ProtocolError(f"the answer has no {key} list", code="protocol_error",
                                status=status)
        nxt = body.get("next")
        return Page(items=list(body[key]), next=nxt if isinstance(nxt, str) else None, raw=body)
    return parse


def _field(name: str) -> Callable[[int, Any], Any]:
    def parse(status: int, body: Any) -> Any:
        if not isinstance(body, dict) or name not in body:
            raise ProtocolError(f"the answer has no {name}", code="protocol_error", status=status)
        return body[name]
    return parse


class ClientCore:
    """Configuration plus every route, as :class:`Call` builders. Thread-safe once built."""

    def __init__(
        self,
        base_url: Optional[str] = None,
        *,
        token: Optional[TokenLike] = None,
        signing_key: Optional[KeyLike] = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        max_retries: int = DEFAULT_MAX_RETRIES,
        user_agent: str = "roost-python",
    ) -> None:
        url = base_url or os.environ.get("ROOST_SERVER") or DEFAULT_SERVER
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http(s) URL, not {url!r}")
        self.base_url = url.rstrip("/")
        self.prefix = parts.path.rstrip("/")
        host = parts.hostname.lower()
        if ":" in host:
            host = f"[{host}]"
        default_port = {"http": 80, "https": 443}[parts.scheme]
        port = parts.port
        #: host[:port] as the request's Host header and the signature's @authority.
        self.authority = host if port in (None, default_port) else f"{host}:{port}"
        self.tokens: Optional[TokenSource] = token_source(token)
        self.signing_key = signing_key
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.user_agent = user_agent

    # ---- one attempt ---------------------------------------------------------------------

    def url(self, call: Call[Any]) -> str:
        q = call.query_string()
        return self.base_url + call.path + ("?" + q if q else "")

    def headers(self, call: Call[Any]) -> Dict[str, str]:
        """Headers of one attempt: a fresh token and, with a key, a fresh signature."""
        h: Dict[str, str] = {"Accept": "application/json", "User-Agent": self.user_agent}
        authz = None
        if self.tokens is not None:
            authz = "Bearer " + self.tokens.get()
            h["Authorization"] = authz
        if call.body is not None:
            h["Content-Type"] = "application/json"
        key = self.signing_key() if callable(self.signing_key) else self.signing_key
        if key is not None:
            h.update(key.headers(call.method, self.authority,
                                              self.prefix + call.path, call.query_string(),
                                              authz, call.body))
        return h

    def timeout(self, call: Call[Any]) -> float:
        return call.timeout_s if call.timeout_s is not None else self.timeout_s

    # ---- answers ---------------------------------------------------------------------------

    def backoff(self, attempt: int) -> float:
        """The pause before attempt ``attempt + 1``: 0.5 s doubling to 8 s, ±25 % jitter."""
        base = min(RETRY_CAP_S, RETRY_BASE_S * (2 ** (attempt - 1)))
        return float(base * random.uniform(0.75, 1.25))

    def on_answer(self, call: Call[T], attempt: int, status: int, headers: Mapping[str, str],
                  content: bytes) -> "T | Again":
        """The result of an answer, or :class:`Again`; raises the typed error otherwise."""
        body: Any = None
        if content:
            try:
                body = json.loads(content)
            except ValueError:
                body = None
        if 200 <= status < 300:
            if content and body is None:
                raise ProtocolError("the answer is not JSON", code="protocol_error",
                                    status=status, request_id=headers.get("x-request-id"))
            return call.parse(status, body)
        err = error_from_response(status, body, retry_after=headers.get("retry-after"),
                                  request_id=headers.get("x-request-id"))
        if call.retry and attempt <= self.max_retries and status in RETRY_STATUSES:
            delay = self.backoff(attempt)
            after = parse_retry_after(headers.get("retry-after"))
            if after is not None:
                delay = max(delay, min(after, RETRY_AFTER_CAP_S))
            return Again(delay, err)
        raise err

    def on_transport_error(self, call: Call[Any], attempt: int, exc: BaseException) -> Again:
        """After a connection error: :class:`Again`, or raises :class:`ConnectionFailed`."""
        err = ConnectionFailed(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__,
                               code="connect_failed")
        if call.retry and attempt <= self.max_retries:
            return Again(self.backoff(attempt), err)
        raise err from exc

    # ---- producer -----------------------------------------------------------------------

    def publish(self, recipients: Sequence[str] | str, payload: Optional[Mapping[str, Any]] = None,
                **fields: Any) -> Call[PublishResult]:
        if isinstance(recipients, str):
            recipients = [recipients]
        return self.publish_batch([dict(fields, recipients=list(recipients), payload=payload)])

    def publish_batch(self, events: Sequence[Mapping[str, Any]]) -> Call[PublishResult]:
        if not events:
            raise ValueError("publish_batch needs at least one event")
        items: List[Dict[str, Any]] = []
        keys: List[str] = []
        for i, ev in enumerate(events):
            unknown = set(ev) - _PUBLISH_FIELDS
            if unknown:
                raise ValueError(f"events[{i}]: unknown field(s) {sorted(unknown)}")
            item = {k: v for k, v in ev.items() if v is not None}
            if isinstance(item.get("recipients"), str):
                item["recipients"] = [item["recipients"]]
            key = item.get("idempotency_key") or new_idempotency_key()
            item["idempotency_key"] = key
            keys.append(key)
            items.append(item)
        body = items[0] if len(items) == 1 else {"events": items}
        return Call("POST", "/api/v1/events",
                    lambda st, b: PublishResult.from_json(b, keys, st),
                    body=_json_body(body), retry=True, idempotency_keys=keys)

    # ---- agent: reading ---------------------------------------------------------------------

    def _agent(self, agent_id: str, rest: str = "") -> str:
        return f"/api/v1/agents/{_seg(agent_id, 'agent_id')}{rest}"

    def inbox(self, agent_id: str, after_cursor: int = 0, limit: Optional[int] = None,
              wait_s: Optional[int] = None) -> Call[InboxPage]:
        return Call("GET", self._agent(agent_id, "/inbox"), lambda st, b: InboxPage.from_json(b),
                    query={"after_cursor": after_cursor, "limit": limit, "wait_s": wait_s},
                    retry=True, timeout_s=self._poll_timeout(wait_s))

    def peek(self, agent_id: str) -> Call[Optional[Event]]:
        def parse(st: int, b: Any) -> Optional[Event]:
            d = _empty(st, b)
            if "event" not in d or not (d["event"] is None or isinstance(d["event"], dict)):
                raise ProtocolError("the peek answer has no event member", code="protocol_error")
            return Event.from_json(d["event"]) if d["event"] is not None else None
        return Call("GET", self._agent(agent_id, "/inbox/peek"), parse, retry=True)

    def state(self, agent_id: str) -> Call[AgentState]:
        return Call("GET", self._agent(agent_id, "/state"),
                    lambda st, b: AgentState.from_json(b), retry=True)

    def subscribe_ticket(self, agent_id: str) -> Call[Ticket]:
        def parse(st: int, b: Any) -> Ticket:
            d = _empty(st, b)
            return Ticket(ticket=str(d.get("ticket", "")), expires_at=str(d.get("expires_at", "")),
                          expires_in_s=int(d.get("expires_in_s", 0)))
        return Call("POST", self._agent(agent_id, "/subscribe/ticket"), parse, body=b"{}")

    def subscribe_request(self, agent_id: str, last_event_id: Optional[str]) -> Tuple[str, Dict[str, str]]:
        """URL and headers of one SSE (re)connection."""
        call: Call[None] = Call("GET", self._agent(agent_id, "/subscribe"), lambda st, b: None)
        h = self.headers(call)
        h["Accept"] = "text/event-stream"
        h["Cache-Control"] = "no-cache"
        if last_event_id is not None:
            h["Last-Event-ID"] = last_event_id
        return self.url(call), h

    # ---- agent: consuming ------------------------------------------------------------------

    def claim(self, agent_id: str, limit: Optional[int] = None, lease_s: Optional[int] = None,
              wait_s: Optional[int] = None, consumer: Optional[str] = None) -> Call[List[Event]]:
        def parse(st: int, b: Any) -> List[Event]:
            d = _empty(st, b)
            evs = d.get("events")
            if not isinstance(evs, list):
                raise ProtocolError("the claim answer has no events list", code="protocol_error")
            return [Event.from_json(e) for e in evs]
        return Call("POST", self._agent(agent_id, "/inbox/claim"), parse,
                    body=_json_body({"limit": limit, "lease_s": lease_s, "wait_s": wait_s,
                                     "consumer": consumer}),
                    timeout_s=self._poll_timeout(wait_s))

    def ack(self, agent_id: str, event_id: str, lease_token: str) -> Call[str]:
        return Call("POST", self._agent(agent_id, f"/inbox/{_seg(event_id, 'event_id')}/ack"),
                    _field("status"), body=_json_body({"lease_token": lease_token}), retry=True)

    def ack_batch(self, agent_id: str, acks: Sequence[Tuple[str, str]]) -> Call[List[AckResult]]:
        def parse(st: int, b: Any) -> List[AckResult]:
            out = []
            for r in _field("results")(st, b):
                r = r if isinstance(r, dict) else {}
                e = r.get("error")
                err = _item_error(e) if isinstance(e, dict) else None
                out.append(AckResult(event_id=str(r.get("event_id", "")),
                                     status=r.get("status") if isinstance(r.get("status"), str)
                                     else None, error=err))
            return out
        return Call("POST", self._agent(agent_id, "/inbox/ack"), parse,
                    body=_json_body({"acks": [{"event_id": e, "lease_token": t}
                                              for e, t in acks]}), retry=True)

    def release(self, agent_id: str, event_id: str, lease_token: str, *,
                delay_s: Optional[int] = None, reason: Optional[str] = None,
                error: Optional[str] = None) -> Call[str]:
        return Call("POST", self._agent(agent_id, f"/inbox/{_seg(event_id, 'event_id')}/release"),
                    _field("status"),
                    body=_json_body({"lease_token": lease_token, "delay_s": delay_s,
                                     "reason": reason, "error": error}))

    def extend(self, agent_id: str, event_id: str, lease_token: str,
               lease_s: int) -> Call[str]:
        return Call("POST", self._agent(agent_id, f"/inbox/{_seg(event_id, 'event_id')}/extend"),
                    _field("claim_expires_at"),
                    body=_json_body({"lease_token": lease_token, "lease_s": lease_s}))

    def release_all(self, agent_id: str, consumer: Optional[str] = None) -> Call[int]:
        return Call("POST", self._agent(agent_id, "/inbox/release-all"), _field("released"),
                    body=_json_body({"consumer": consumer}))

    # ---- webhook endpoints of an agent ----------------------------------------------------

    def register_callback(self, agent_id: str, url: str, secret: str) -> Call[Dict[str, Any]]:
        return Call("POST", self._agent(agent_id, "/callbacks"), _empty,
                    body=_json_body({"url": url, "secret": secret}))

    def list_callbacks(self, agent_id: str) -> Call[Page]:
        return Call("GET", self._agent(agent_id, "/callbacks"), _page("endpoints"), retry=True)

    def delete_callback(self, agent_id: str, endpoint_id: str) -> Call[Dict[str, Any]]:
        return Call("DELETE", self._agent(agent_id, f"/callbacks/{_seg(endpoint_id, 'endpoint_id')}"),
                    _empty)

    # ---- operator (tenant:admin) ------------------------------------------------------------

    def list_agents(self, sort: Optional[str] = None, limit: Optional[int] = None,
                    next: Optional[str] = None) -> Call[Page]:
        return Call("GET", "/api/v1/admin/agents", _page("agents"),
                    query={"sort": sort, "limit": limit, "next": next}, retry=True)

    def stats(self) -> Call[Dict[str, Any]]:
        return Call("GET", "/api/v1/admin/stats", _empty, retry=True)

    def list_quarantine(self, agent_id: Optional[str] = None, limit: Optional[int] = None,
                        next: Optional[str] = None) -> Call[Page]:
        return Call("GET", "/api/v1/admin/quarantine", _page("events"),
                    query={"agent_id": agent_id, "limit": limit, "next": next}, retry=True)

    def get_quarantined(self, event_id: str) -> Call[Event]:
        return Call("GET", f"/api/v1/admin/quarantine/{_seg(event_id, 'event_id')}",
                    lambda st, b: Event.from_json(b), retry=True)

    def requeue(self, event_id: str) -> Call[Dict[str, Any]]:
        return Call("POST", f"/api/v1/admin/quarantine/{_seg(event_id, 'event_id')}/requeue",
                    _empty)

    def requeue_all(self, agent_id: Optional[str] = None,
                    limit: Optional[int] = None) -> Call[Dict[str, Any]]:
        return Call("POST", "/api/v1/admin/quarantine/requeue", _empty,
                    body=_json_body({"agent_id": agent_id, "limit": limit}))

    def purge_quarantined(self, event_id: str) -> Call[Dict[str, Any]]:
        return Call("POST", f"/api/v1/admin/quarantine/{_seg(event_id, 'event_id')}/purge", _empty)

    def purge_quarantine(self, agent_id: Optional[str] = None,
                         limit: Optional[int] = None) -> Call[Dict[str, Any]]:
        return Call("POST", "/api/v1/admin/quarantine/purge", _empty,
                    body=_json_body({"agent_id": agent_id, "limit": limit}))

    def add_key(self, key_id: str, agent_id: str, alg: str, *, public_key: Any = None,
                secret: Optional[str] = None) -> Call[Dict[str, Any]]:
        return Call("POST", "/api/v1/admin/keys", _empty,
                    body=_json_body({"key_id": key_id, "agent_id": agent_id, "alg": alg,
                                     "public_key": public_key, "secret": secret}))

    def list_keys(self, limit: Optional[int] = None, next: Optional[str] = None) -> Call[Page]:
        return Call("GET", "/api/v1/admin/keys", _page("keys"),
                    query={"limit": limit, "next": next}, retry=True)

    def revoke_key(self, key_id: str) -> Call[Dict[str, Any]]:
        return Call("POST", f"/api/v1/admin/keys/{_seg(key_id, 'key_id')}/revoke", _empty)

    def list_endpoints(self, agent_id: Optional[str] = None, limit: Optional[int] = None,
                       next: Optional[str] = None) -> Call[Page]:
        return Call("GET", "/api/v1/admin/endpoints", _page("endpoints"),
                    query={"agent_id": agent_id, "limit": limit, "next": next}, retry=True)

    def get_endpoint(self, endpoint_id: str) -> Call[Dict[str, Any]]:
        return Call("GET", f"/api/v1/admin/endpoints/{_seg(endpoint_id, 'endpoint_id')}", _empty,
                    retry=True)

    def set_endpoint_enabled(self, endpoint_id: str, enabled: bool) -> Call[Dict[str, Any]]:
        action = "enable" if enabled else "disable"
        return Call("POST", f"/api/v1/admin/endpoints/{_seg(endpoint_id, 'endpoint_id')}/{action}",
                    _empty)

    def endpoint_attempts(self, endpoint_id: str, event_id: Optional[str] = None,
                          limit: Optional[int] = None, next: Optional[str] = None) -> Call[Page]:
        return Call("GET", f"/api/v1/admin/endpoints/{_seg(endpoint_id, 'endpoint_id')}/attempts",
                    _page("attempts"), query={"event_id": event_id, "limit": limit, "next": next},
                    retry=True)

    def replay_endpoint(self, endpoint_id: str, *, event_id: Optional[str] = None,
                        since: Optional[str] = None) -> Call[Dict[str, Any]]:
        return Call("POST", f"/api/v1/admin/endpoints/{_seg(endpoint_id, 'endpoint_id')}/replay",
                    _empty, body=_json_body({"event_id": event_id, "since": since}))

    def server_keys(self) -> Call[Dict[str, Any]]:
        return Call("GET", "/api/v1/keys/server", _empty, retry=True)

    def _poll_timeout(self, wait_s: Optional[int]) -> Optional[float]:
        if wait_s:
            return max(self.timeout_s, wait_s + LONG_POLL_MARGIN_S)
        return None


def _item_error(e: Dict[str, Any]) -> RoostError:
    code = e.get("code")
    status = {"lease_mismatch": 409, "event_not_found": 404}.get(str(code), 400)
    return error_from_response(status, {"error": e})
