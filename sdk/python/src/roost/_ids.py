# SPDX-License-Identifier: MIT
"""Identifiers the SDK makes: idempotency keys (``rk_`` + ULID, as libroost) and consumer ids."""

from __future__ import annotations

import os
import secrets
import socket
import time

__all__ = ["new_idempotency_key", "default_consumer"]

_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def _ulid() -> str:
    value = (int(time.time() * 1000) << 80) | secrets.randbits(80)
    return "".join(_CROCKFORD[(value >> (5 * i)) & 31] for i in range(25, -1, -1))


def new_idempotency_key() -> str:
    """A fresh idempotency key: ``rk_`` followed by a ULID (what libroost generates)."""
    return "rk_" + _ulid()


def default_consumer() -> str:
    """``<hostname>-<pid>``, the consumer id ``roost agent run`` uses, made fit for the API."""
    host = "".join(c if c.isalnum() or c in "._-" else "-" for c in socket.gethostname())
    return f"{host[:100] or 'host'}-{os.getpid()}"
