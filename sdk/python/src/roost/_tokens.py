# SPDX-License-Identifier: MIT
"""Where the bearer token comes from: a string, a file re-read when it changes or nears its
expiry, a command run again before expiry, or any callable.

The client asks its token source before every request (and every stream connection), so a
long-running agent never sends an expired token when a fresher one is available.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
import time
from typing import Callable, List, Optional, Sequence, Union

from ._errors import RoostError

__all__ = ["TokenSource", "StaticToken", "TokenFile", "TokenCommand", "TokenLike", "token_source"]

#: Refresh a token this many seconds before its ``exp``.
REFRESH_BEFORE_S = 60.0
#: A command's token without ``exp`` is fetched again after this long.
NO_EXP_REFRESH_S = 300.0
#: Longest token accepted (roostd refuses larger ones anyway).
MAX_TOKEN_BYTES = 8192


def token_expiry(token: str) -> Optional[float]:
    """The ``exp`` claim of a JWT (not verified: only to know when to refresh), or None."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    try:
        raw = base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4))
        claims = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    exp = claims.get("exp") if isinstance(claims, dict) else None
    return float(exp) if isinstance(exp, (int, float)) and not isinstance(exp, bool) else None


def _clean(text: str, origin: str) -> str:
    token = text.strip()
    if not token or len(token) > MAX_TOKEN_BYTES or any(c.isspace() for c in token):
        raise RoostError(f"{origin} holds no usable token", code="invalid_token")
    return token


class TokenSource:
    """Base class of token sources: :meth:`get` returns the token to send now."""

    def get(self) -> str:
        raise NotImplementedError


class StaticToken(TokenSource):
    """A fixed token string."""

    def __init__(self, token: str) -> None:
        self._token = _clean(token, "the token string")

    def get(self) -> str:
        return self._token


class TokenFile(TokenSource):
    """A token read from a file, read again when the file changes or the token nears ``exp``.

    If a re-read fails (the file is being replaced), the last good token is kept.
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._token: Optional[str] = None
        self._stamp: Optional[tuple[int, int, int]] = None
        self._exp: Optional[float] = None
        self.get()

    def get(self) -> str:
        with self._lock:
            try:
                st = os.stat(self.path)
                stamp = (st.st_mtime_ns, st.st_size, st.st_ino)
            except OSError as e:
                if self._token is not None:
                    return self._token
                raise RoostError(f"cannot read the token file {self.path}: {e}", code="io_error")
            near_exp = self._exp is not None and time.time() > self._exp - REFRESH_BEFORE_S
            if self._token is None or stamp != self._stamp or near_exp:
                try:
                    with open(self.path, encoding="utf-8") as f:
                        token = _clean(f.read(MAX_TOKEN_BYTES + 64), f"the token file {self.path}")
                except (OSError, UnicodeDecodeError, RoostError) as e:
                    if self._token is not None:
                        return self._token
                    if isinstance(e, RoostError):
                        raise
                    raise RoostError(f"cannot read the token file {self.path}: {e}",
                                     code="io_error") from e
                self._token, self._stamp, self._exp = token, stamp, token_expiry(token)
            return self._token


class TokenCommand(TokenSource):
    """A token printed by a command (like kubectl's exec credentials), run again before ``exp``.

    ``command`` is a shell string (run with ``/bin/sh -c``) or an argument list.
    """

    def __init__(self, command: Union[str, Sequence[str]], timeout_s: float = 30.0) -> None:
        self.command: Union[str, List[str]] = (
            command if isinstance(command, str) else list(command)
        )
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._token: Optional[str] = None
        self._refresh_at = 0.0
        self.get()

    def get(self) -> str:
        with self._lock:
            if self._token is not None and time.time() < self._refresh_at:
                return self._token
            try:
                out = subprocess.run(
                    self.command,
                    shell=isinstance(self.command, str),
                    stdout=subprocess.PIPE,
                    check=True,
                    timeout=self.timeout_s,
                ).stdout.decode("utf-8")
                token = _clean(out, "the token command's output")
            except (OSError, subprocess.SubprocessError, UnicodeDecodeError, RoostError) as e:
                if self._token is not None:
                    return self._token  # keep the token we had, as libroost does
                raise RoostError(f"the token command failed: {e}", code="invalid_token") from e
            exp = token_expiry(token)
            now = time.time()
            self._refresh_at = (exp - REFRESH_BEFORE_S) if exp is not None else now + NO_EXP_REFRESH_S
            self._token = token
            return token


class _CallableToken(TokenSource):
    def __init__(self, fn: Callable[[], str]) -> None:
        self._fn = fn

    def get(self) -> str:
        return _clean(self._fn(), "the token callable's answer")


#: What ``token=`` accepts: a string, a :class:`TokenSource`, or a callable returning a string.
TokenLike = Union[str, TokenSource, Callable[[], str]]


def token_source(token: Optional[TokenLike]) -> Optional[TokenSource]:
    """Wraps ``token`` in a :class:`TokenSource` (None stays None)."""
    if token is None or isinstance(token, TokenSource):
        return token
    if isinstance(token, str):
        return StaticToken(token)
    if callable(token):
        return _CallableToken(token)
    raise TypeError("token must be a str, a roost.TokenSource or a callable returning a str")
