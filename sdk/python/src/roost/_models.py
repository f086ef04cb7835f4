# SPDX-License-Identifier: MIT
"""The objects the API returns, as small typed dataclasses over the JSON.

Each keeps the answer it was built from in ``raw``, so a field roostd adds later is never
out of reach.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional

from ._errors import ProtocolError

__all__ = [
    "Event",
    "PublishedEvent",
    "PublishResult",
    "InboxPage",
    "AckResult",
    "AgentState",
    "Ping",
    "Ticket",
    "Page",
]


def _obj(value: Any, what: str) -> Dict[str, Any]:
    if not isinstance(value, dict):
        raise ProtocolError(f"{what} is not a JSON object", code="protocol_error")
    return value


def _int(d: Mapping[str, Any], key: str, default: Optional[int] = None) -> int:
    v = d.get(key, default)
    if not isinstance(v, int) or isinstance(v, bool):
        raise ProtocolError(f"{key} is not an integer", code="protocol_error")
    return v


def _opt_str(d: Mapping[str, Any], key: str) -> Optional[str]:
    v = d.get(key)
    return v if isinstance(v, str) else None


def _list(d: Mapping[str, Any], key: str) -> List[Any]:
    v = d.get(key)
    if not isinstance(v, list):
        raise ProtocolError(f"{key} is not a list", code="protocol_error")
    return v


@dataclass(frozen=True)
class Event:
    """One event of an agent's inbox (doc/API.md, "Event object").

    Claimed events also carry ``lease_token``, ``claim_expires_at`` and ``attempts``.
    """

    event_id: str
    agent_id: str
    sequence_number: int
    payload: Optional[Dict[str, Any]]
    priority: int = 0
    status: Optional[str] = None
    correlation_id: Optional[str] = None
    created_at: Optional[str] = None
    available_at: Optional[str] = None
    expires_at: Optional[str] = None
    lease_token: Optional[str] = None
    claim_expires_at: Optional[str] = None
    attempts: int = 0
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, value: Any) -> "Event":
        d = _obj(value, "an event")
        payload = d.get("payload")
        attempts = d.get("attempts")
        priority = d.get("priority")
        return cls(
            event_id=str(d.get("event_id", "")),
            agent_id=str(d.get("agent_id", "")),
            sequence_number=_int(d, "sequence_number", 0),
            payload=payload if isinstance(payload, dict) else None,
            priority=priority if isinstance(priority, int) else 0,
            status=_opt_str(d, "status"),
            correlation_id=_opt_str(d, "correlation_id"),
            created_at=_opt_str(d, "created_at"),
            available_at=_opt_str(d, "available_at"),
            expires_at=_opt_str(d, "expires_at"),
            lease_token=_opt_str(d, "lease_token"),
            claim_expires_at=_opt_str(d, "claim_expires_at"),
            attempts=attempts if isinstance(attempts, int) else 0,
            raw=d,
        )


@dataclass(frozen=True)
class PublishedEvent:
    """One (event, recipient) row a publish made, or found again (``duplicate``)."""

    event_id: str
    agent_id: str
    sequence_number: int
    duplicate: bool = False


@dataclass(frozen=True)
class PublishResult:
    """The answer to a publish: one entry per (event, recipient) in request order.

    ``idempotency_keys`` holds the key each event was sent with (generated when none was given),
    in request order, so a caller can publish again with the same keys later.
    """

    events: List[PublishedEvent]
    idempotency_keys: List[str]
    status: int

    @property
    def duplicate(self) -> bool:
        """True when every row already existed (roostd answered 200, nothing written)."""
        return bool(self.events) and all(e.duplicate for e in self.events)

    @classmethod
    def from_json(cls, value: Any, keys: List[str], status: int) -> "PublishResult":
        d = _obj(value, "the publish answer")
        rows = []
        for item in _list(d, "events"):
            e = _obj(item, "a published event")
            rows.append(
                PublishedEvent(
                    event_id=str(e.get("event_id", "")),
                    agent_id=str(e.get("agent_id", "")),
                    sequence_number=_int(e, "sequence_number", 0),
                    duplicate=e.get("duplicate") is True,
                )
            )
        return cls(events=rows, idempotency_keys=keys, status=status)


@dataclass(frozen=True)
class InboxPage:
    """One page of a cursor read: read on from ``next_cursor`` while ``has_more``."""

    events: List[Event]
    next_cursor: int
    has_more: bool
    head: int

    @classmethod
    def from_json(cls, value: Any) -> "InboxPage":
        d = _obj(value, "the inbox page")
        return cls(
            events=[Event.from_json(e) for e in _list(d, "events")],
            next_cursor=_int(d, "next_cursor", 0),
            has_more=d.get("has_more") is True,
            head=_int(d, "head", 0),
        )


@dataclass(frozen=True)
class AckResult:
    """One item of a batch ack: ``ok`` with ``status``, or the item's ``error`` (an exception)."""

    event_id: str
    status: Optional[str]
    error: Optional[Exception]

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class AgentState:
    """The agent's state document and the cursor (head) it is consistent with."""

    state: Dict[str, Any]
    cursor: int

    @classmethod
    def from_json(cls, value: Any) -> "AgentState":
        d = _obj(value, "the state answer")
        state = d.get("state")
        return cls(state=state if isinstance(state, dict) else {}, cursor=_int(d, "cursor", 0))


@dataclass(frozen=True)
class Ping:
    """A wake-up ping from the SSE stream: ``inbox_updated`` or ``heartbeat`` with the head.

    A ping carries no events: pull (``inbox`` or ``claim``) when one arrives.
    """

    event: str
    cursor_hint: Optional[int]
    id: Optional[str] = None


@dataclass(frozen=True)
class Ticket:
    """A single-use subscribe ticket (``POST .../subscribe/ticket``)."""

    ticket: str
    expires_at: str
    expires_in_s: int


@dataclass(frozen=True)
class Page:
    """One page of an operator listing: ``items`` and the opaque ``next`` token (None at the end)."""

    items: List[Dict[str, Any]]
    next: Optional[str]
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
