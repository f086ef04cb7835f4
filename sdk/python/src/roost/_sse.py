# SPDX-License-Identifier: MIT
"""An incremental Server-Sent Events parser (WHATWG rules) and the reconnect policy of the
wake-up stream, without I/O: both clients and the agent feed it the bytes they read.

roostd's stream (doc/API.md, "subscribe")::

    retry: 3000

    id: 1045
    event: inbox_updated
    data: {"cursor_hint":1045}
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from typing import List, Optional

from ._models import Ping

__all__ = ["SSEParser", "SSEMessage", "StreamBackoff", "ping_of"]

MAX_EVENT_BYTES = 64 * 1024


@dataclass(frozen=True)
class SSEMessage:
    event: str
    data: str
    id: Optional[str]


class SSEParser:
    """Feed bytes, get complete messages. ``last_id`` and ``retry_ms`` follow the stream."""

    def __init__(self) -> None:
        self._buf = b""
        self._event = ""
        self._data: List[str] = []
        self._size = 0
        self._bom_checked = False
        self.last_id: Optional[str] = None
        self.retry_ms: Optional[int] = None

    def feed(self, chunk: bytes) -> List[SSEMessage]:
        out: List[SSEMessage] = []
        self._buf += chunk
        if not self._bom_checked and len(self._buf) >= 3:
            if self._buf.startswith(b"\xef\xbb\xbf"):
                self._buf = self._buf[3:]
            self._bom_checked = True
        while True:
            i_lf = self._buf.find(b"\n")
            i_cr = self._buf.find(b"\r")
            if i_lf < 0 and i_cr < 0:
                break
            if i_cr >= 0 and (i_lf < 0 or i_cr < i_lf):
                if i_cr == len(self._buf) - 1:
                    break  # a CR at the end may be the first half of CRLF: wait for more
                end, nxt = i_cr, i_cr + (2 if self._buf[i_cr + 1:i_cr + 2] == b"\n" else 1)
            else:
                end, nxt = i_lf, i_lf + 1
            line = self._buf[:end].decode("utf-8", "replace")
            self._buf = self._buf[nxt:]
            msg = self._line(line)
            if msg is not None:
                out.append(msg)
        if len(self._buf) > MAX_EVENT_BYTES:
            raise ValueError("an SSE line is longer than 64 KiB")
        return out

    def _line(self, line: str) -> Optional[SSEMessage]:
        if line == "":
            if not self._data and not self._event:
                return None
            msg = SSEMessage(self._event or "message", "\n".join(self._data), self.last_id)
            self._event, self._data, self._size = "", [], 0
            return msg
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        if value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._event = value
        elif name == "data":
            self._size += len(value)
            if self._size > MAX_EVENT_BYTES:
                raise ValueError("an SSE event is larger than 64 KiB")
            self._data.append(value)
        elif name == "id":
            if "\0" not in value:
                self.last_id = value
        elif name == "retry" and value.isdigit():
            self.retry_ms = int(value)
        return None


def ping_of(msg: SSEMessage) -> Ping:
    """The :class:`Ping` of a stream message (``cursor_hint`` None when the data has none)."""
    hint: Optional[int] = None
    try:
        data = json.loads(msg.data) if msg.data else None
        if isinstance(data, dict) and isinstance(data.get("cursor_hint"), int):
            hint = data["cursor_hint"]
    except ValueError:
        pass
    return Ping(event=msg.event, cursor_hint=hint, id=msg.id)


class StreamBackoff:
    """Reconnect delays: 1 s doubling to 30 s with ±25 % jitter, never sooner than the
    server's ``retry:`` (bounded to 60 s); :meth:`reset` after a stream that worked."""

    def __init__(self, first_s: float = 1.0, cap_s: float = 30.0) -> None:
        self.first_s, self.cap_s = first_s, cap_s
        self._next = first_s

    def reset(self) -> None:
        self._next = self.first_s

    def next_delay(self, retry_ms: Optional[int]) -> float:
        delay = self._next * random.uniform(0.75, 1.25)
        self._next = min(self.cap_s, self._next * 2)
        if retry_ms is not None:
            delay = max(delay, min(retry_ms / 1000.0, 60.0))
        return delay
