# SPDX-License-Identifier: MIT
"""Roost for Python: durable inboxes for AI agents.

* :class:`Client` / :class:`AsyncClient`: every agent, producer and operator route of the
  Roost API, with typed errors, idempotent publish retries, token sources and RFC 9421 signing.
* :class:`Agent`: the agent loop with the guarantees of ``roost agent run``: nothing lost,
  finished work never run again, leases extended, crash recovery, 410 resync.

See doc/PYTHON.md.
"""

from __future__ import annotations

from ._agent import Agent, AgentStatus, Quarantine, Retry, read_status
from ._client import AsyncClient, Client
from ._errors import (
    AlreadyExists,
    BadRequest,
    Conflict,
    ConnectionFailed,
    CursorExpired,
    EventNotFound,
    Forbidden,
    InvalidState,
    LeaseCapReached,
    LeaseMismatch,
    MethodNotAllowed,
    NotFound,
    PayloadTooLarge,
    ProtocolError,
    RateLimited,
    RoostError,
    ServerError,
    SignatureRejected,
    StateLocked,
    Unauthorized,
    Unavailable,
    UnsupportedMediaType,
    VerificationFailed,
)
from ._ids import new_idempotency_key
from ._models import (
    AckResult,
    AgentState,
    Event,
    InboxPage,
    Page,
    Ping,
    PublishedEvent,
    PublishResult,
    Ticket,
)
from ._device import DeviceLogin
from ._signing import SigningKey
from ._tokens import TokenCommand, TokenFile, TokenSource

__version__ = "0.1.0"

__all__ = [
    # clients
    "Client",
    "AsyncClient",
    # the agent loop
    "Agent",
    "AgentStatus",
    "Retry",
    "Quarantine",
    "read_status",
    # credentials
    "SigningKey",
    "DeviceLogin",
    "TokenSource",
    "TokenFile",
    "TokenCommand",
    "new_idempotency_key",
    # results
    "Event",
    "PublishResult",
    "PublishedEvent",
    "InboxPage",
    "AckResult",
    "AgentState",
    "Ping",
    "Ticket",
    "Page",
    # errors
    "RoostError",
    "ConnectionFailed",
    "ProtocolError",
    "BadRequest",
    "Unauthorized",
    "SignatureRejected",
    "Forbidden",
    "NotFound",
    "EventNotFound",
    "MethodNotAllowed",
    "Conflict",
    "LeaseMismatch",
    "InvalidState",
    "LeaseCapReached",
    "AlreadyExists",
    "CursorExpired",
    "PayloadTooLarge",
    "UnsupportedMediaType",
    "VerificationFailed",
    "RateLimited",
    "ServerError",
    "Unavailable",
    "StateLocked",
]
