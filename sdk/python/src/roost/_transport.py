# SPDX-License-Identifier: MIT
"""httpx transports with ``TCP_NODELAY``.

h11 writes a request's head and body separately; without ``TCP_NODELAY`` Nagle's algorithm
holds the body until the server's delayed ACK, and every POST (publish, claim, ack) takes about
40 ms on loopback instead of one. httpx ≥ 0.24 takes ``socket_options``; older ones (Debian 12
ships 0.23 with httpcore 0.16) get the option set on each new connection's socket by a thin
wrapper around the pool's network backend. If neither works, the default transport is used.
"""

from __future__ import annotations

import socket
from typing import Any, Dict, Optional

import httpx

__all__ = ["sync_transport", "async_transport"]

_OPTS = [(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)]


def _new_kw() -> Dict[str, Any]:
    """``socket_options`` for httpx >= 0.24 (a TypeError on older ones)."""
    return {"socket_options": _OPTS}


def _nodelay(stream: Any) -> Any:
    try:
        sock = stream.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    except (OSError, AttributeError, TypeError):
        pass
    return stream


class _SyncBackend:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def connect_tcp(self, *a: Any, **kw: Any) -> Any:
        return _nodelay(self._inner.connect_tcp(*a, **kw))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _AsyncBackend:
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    async def connect_tcp(self, *a: Any, **kw: Any) -> Any:
        return _nodelay(await self._inner.connect_tcp(*a, **kw))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def sync_transport() -> Optional[httpx.HTTPTransport]:
    """A transport whose connections set TCP_NODELAY, or None (use httpx's default)."""
    try:
        return httpx.HTTPTransport(**_new_kw())
    except TypeError:
        pass
    try:
        t = httpx.HTTPTransport()
        pool = getattr(t, "_pool")
        pool._network_backend = _SyncBackend(pool._network_backend)
        return t
    except AttributeError:
        return None


def async_transport() -> Optional[httpx.AsyncHTTPTransport]:
    """As :func:`sync_transport`, for ``httpx.AsyncClient``."""
    try:
        return httpx.AsyncHTTPTransport(**_new_kw())
    except TypeError:
        pass
    try:
        t = httpx.AsyncHTTPTransport()
        pool = getattr(t, "_pool")
        pool._network_backend = _AsyncBackend(pool._network_backend)
        return t
    except AttributeError:
        return None
