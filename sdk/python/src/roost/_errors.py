# SPDX-License-Identifier: MIT
"""Typed exceptions for the Roost API.

roostd answers every error as ``{"error": {"code": ..., "message": ..., ...details}}``
(doc/API.md, "Errors"); the code comes from one table (``include/roost/roost_error.h``).
:func:`error_from_response` turns such an answer into the most specific exception class
below, so callers can ``except roost.LeaseMismatch`` instead of comparing strings.
"""

from __future__ import annotations

from typing import Any, Dict, Mapping, Optional, Type

__all__ = [
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
    "error_from_response",
]


class RoostError(Exception):
    """Base class of every error the SDK raises.

    Attributes:
        code: the API's stable snake_case error code (``"lease_mismatch"``), or an SDK code
            for errors without an HTTP answer (``"connect_failed"``, ``"protocol_error"``).
        message: the human text roostd sent (or the SDK's own).
        status: the HTTP status, 0 when there was no HTTP answer.
        details: every other field of the error object (``param``, ``index``, ...).
        request_id: roostd's ``X-Request-Id`` for this answer, when there was one.
    """

    def __init__(
        self,
        message: str,
        *,
        code: str = "error",
        status: int = 0,
        details: Optional[Mapping[str, Any]] = None,
        request_id: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.details: Dict[str, Any] = dict(details or {})
        self.request_id = request_id

    def __str__(self) -> str:
        where = f"HTTP {self.status} " if self.status else ""
        return f"{where}{self.code}: {self.message}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(code={self.code!r}, status={self.status}, "
            f"message={self.message!r})"
        )


class ConnectionFailed(RoostError):
    """roostd could not be reached, or the connection broke before an answer came."""


class ProtocolError(RoostError):
    """roostd answered something that is not what the API promises."""


class BadRequest(RoostError):
    """400: a parameter or the body was refused; ``details`` names it (``param``, ``field``)."""


class Unauthorized(RoostError):
    """401: the bearer token is missing, invalid or expired."""


class SignatureRejected(Unauthorized):
    """401 for a request signature (``signature_invalid``, ``nonce_reused``, ``key_unknown``...)."""


class Forbidden(RoostError):
    """403: the token lacks a scope; ``required_scope`` names it."""

    @property
    def required_scope(self) -> Optional[str]:
        value = self.details.get("required_scope")
        return value if isinstance(value, str) else None


class NotFound(RoostError):
    """404: no such route, key or endpoint."""


class EventNotFound(NotFound):
    """404 ``event_not_found``: no such event in this tenant."""


class MethodNotAllowed(RoostError):
    """405: the route exists with other methods (``details["allow"]``)."""


class Conflict(RoostError):
    """409: the request does not fit the current state."""


class LeaseMismatch(Conflict):
    """409 ``lease_mismatch``: the lease token is stale or wrong, or the event is not claimed."""


class InvalidState(Conflict):
    """409 ``invalid_state``: the event is not in a state that allows this."""


class LeaseCapReached(Conflict):
    """409 ``lease_cap_reached``: the lease cannot be extended past ``lease.max_total_s``."""


class AlreadyExists(Conflict):
    """409 ``key_exists`` / ``endpoint_exists``."""


class CursorExpired(RoostError):
    """410 ``cursor_expired``: the cursor is older than retention; resync from the state.

    Attributes:
        oldest_cursor: the oldest cursor roostd still serves.
        resync: the path of the state document to resync from.
    """

    @property
    def oldest_cursor(self) -> Optional[int]:
        value = self.details.get("oldest_cursor")
        return value if isinstance(value, int) else None

    @property
    def resync(self) -> Optional[str]:
        value = self.details.get("resync")
        return value if isinstance(value, str) else None


class PayloadTooLarge(RoostError):
    """413: the body, a payload or the resulting state is over a configured limit."""


class UnsupportedMediaType(RoostError):
    """415: the body was not sent as application/json."""


class VerificationFailed(RoostError):
    """422 ``endpoint_verification_failed``: a webhook endpoint failed the challenge."""


class RateLimited(RoostError):
    """429 ``too_many_requests``; ``retry_after`` is roostd's ``Retry-After`` in seconds."""

    def __init__(self, message: str, *, retry_after: Optional[float] = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class ServerError(RoostError):
    """500: roostd failed (``internal_error``, ``out_of_memory``)."""


class Unavailable(RoostError):
    """503 (``unavailable``, ``shutting_down``, ``scan_budget_exceeded``); ``retry_after``."""

    def __init__(self, message: str, *, retry_after: Optional[float] = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.retry_after = retry_after


class StateLocked(RoostError):
    """Another running agent holds this state directory's lock (one process per state dir)."""


_BY_CODE: Dict[str, Type[RoostError]] = {
    "event_not_found": EventNotFound,
    "lease_mismatch": LeaseMismatch,
    "invalid_state": InvalidState,
    "lease_cap_reached": LeaseCapReached,
    "key_exists": AlreadyExists,
    "endpoint_exists": AlreadyExists,
    "cursor_expired": CursorExpired,
    "unauthenticated": Unauthorized,
    "forbidden": Forbidden,
    "method_not_allowed": MethodNotAllowed,
    "endpoint_verification_failed": VerificationFailed,
    "unsupported_media_type": UnsupportedMediaType,
    "too_many_requests": RateLimited,
}

_BY_STATUS: Dict[int, Type[RoostError]] = {
    400: BadRequest,
    401: Unauthorized,
    403: Forbidden,
    404: NotFound,
    405: MethodNotAllowed,
    409: Conflict,
    410: CursorExpired,
    413: PayloadTooLarge,
    415: UnsupportedMediaType,
    422: VerificationFailed,
    429: RateLimited,
    431: BadRequest,
    500: ServerError,
    503: Unavailable,
}


def parse_retry_after(value: Optional[str]) -> Optional[float]:
    """Seconds from a ``Retry-After`` header (delay-seconds form only; roostd sends that)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if seconds >= 0 else None


def error_from_response(
    status: int,
    body: Any,
    *,
    retry_after: Optional[str] = None,
    request_id: Optional[str] = None,
) -> RoostError:
    """The exception for an error answer: ``body`` is the decoded JSON (or None)."""
    err = body.get("error") if isinstance(body, dict) else None
    if not isinstance(err, dict) or not isinstance(err.get("code"), str):
        return ProtocolError(
            f"HTTP {status} without a Roost error body",
            code="protocol_error",
            status=status,
            request_id=request_id,
        )
    code: str = err["code"]
    message = err.get("message")
    if not isinstance(message, str):
        message = code
    details = {k: v for k, v in err.items() if k not in ("code", "message")}
    cls = _BY_CODE.get(code)
    if cls is None and status == 401:
        cls = SignatureRejected
    if cls is None:
        cls = _BY_STATUS.get(status, ServerError if status >= 500 else RoostError)
    kw: Dict[str, Any] = {
        "code": code,
        "status": status,
        "details": details,
        "request_id": request_id,
    }
    if cls is RateLimited:
        return RateLimited(message, retry_after=parse_retry_after(retry_after), **kw)
    if cls is Unavailable:
        return Unavailable(message, retry_after=parse_retry_after(retry_after), **kw)
    return cls(message, **kw)
