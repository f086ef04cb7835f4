# SPDX-License-Identifier: MIT
"""Test harness for the Python SDK: the real roostd on 127.0.0.1:0 with a ready file (on
SQLite, or on the private MariaDB named by ROOST_TEST_MYSQL_URL with a fresh database per data
dir, as tests/harness/harness.c does), tokens minted with roostd's own key, an HTTP-aware TCP
proxy to break things, and helpers to run agent processes. Nothing here mocks the server."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
SDK_SRC = os.path.join(REPO, "sdk", "python", "src")
if SDK_SRC not in sys.path:
    sys.path.insert(0, SDK_SRC)

TENANT = "py"
#: Every deadline is what an idle machine needs times this factor, as in the C harness
#: (ROOST_TEST_PATIENCE, default 6): the suite must pass on a busy 2-core machine.
SLOW = float(os.environ.get("ROOST_TEST_PATIENCE", os.environ.get("ROOST_TEST_SLOWDOWN", "6")))


def _bin(env: str, name: str) -> str:
    path = os.environ.get(env)
    if path:
        return path
    for build in ("build", "build-py"):
        cand = os.path.join(REPO, build, "bin", name)
        if os.path.exists(cand):
            return cand
    raise RuntimeError(f"set {env} to the {name} binary")


def roostd_bin() -> str:
    return _bin("ROOSTD", "roostd")


def roost_cli_bin() -> str:
    return _bin("ROOST_CLI", "roost")


def wait_until(cond: Callable[[], Any], timeout_s: float, what: str, step_s: float = 0.02) -> Any:
    """Polls ``cond`` until it is truthy (its value is returned) or the deadline passes."""
    deadline = time.monotonic() + timeout_s * SLOW
    while True:
        v = cond()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s * SLOW:.0f} s waiting for {what}")
        time.sleep(step_s)


def free_port_url(url: str) -> int:
    return int(urllib.parse.urlsplit(url).port or 0)


# ---- MariaDB: a fresh database per data dir -------------------------------------------------

_db_counter = 0


def mysql_fresh_db(base: str, name: str) -> str:
    """Creates database roost_py_<pid>_<n>_<name> on the fixture's server; returns its URL."""
    global _db_counter
    _db_counter += 1
    u = urllib.parse.urlsplit(base)
    db = f"roost_py_{os.getpid()}_{_db_counter}_{name}"[:64]
    env = dict(os.environ, MYSQL_PWD=urllib.parse.unquote(u.password or ""))
    client = shutil.which("mariadb") or shutil.which("mysql") or "mariadb"
    subprocess.run(
        [client, "--no-defaults", "--protocol=tcp", "-h", u.hostname or "127.0.0.1",
         "-P", str(u.port or 3306), "-u", urllib.parse.unquote(u.username or ""),
         "-e", f"DROP DATABASE IF EXISTS `{db}`; CREATE DATABASE `{db}` CHARACTER SET utf8mb4 "
         "COLLATE utf8mb4_bin"],
        env=env, check=True, stdout=subprocess.DEVNULL)
    path = "/" + db
    return urllib.parse.urlunsplit((u.scheme, u.netloc, path, u.query, ""))


# ---- roostd --------------------------------------------------------------------------------


class Roostd:
    """One real roostd. ``start()`` again on the same object restarts it on the same port and
    data dir (and database)."""

    def __init__(self, sets: Sequence[str] = (), data_dir: Optional[str] = None,
                 name: str = "t") -> None:
        self.sets = list(sets)
        self.dir = data_dir or tempfile.mkdtemp(prefix="roost-py-")
        self.proc: Optional[subprocess.Popen[bytes]] = None
        self.url = ""
        self.port = 0
        self.store: Optional[str] = None
        base = os.environ.get("ROOST_TEST_MYSQL_URL")
        if base:
            self.store = mysql_fresh_db(base, name)
        self._key: Optional[ed25519.Ed25519PrivateKey] = None

    def start(self) -> "Roostd":
        ready = os.path.join(self.dir, "ready")
        if os.path.exists(ready):
            os.unlink(ready)
        argv = [roostd_bin(), "--data-dir", self.dir, "--listen", f"127.0.0.1:{self.port}",
                "--ready-file", ready]
        if self.store:
            argv += ["--store", self.store]
        for s in self.sets:
            argv += ["--set", s]
        log = open(os.path.join(self.dir, "roostd.log"), "ab")
        self.proc = subprocess.Popen(argv, stdout=log, stderr=log)
        log.close()
        deadline = time.monotonic() + 30 * SLOW
        while not os.path.exists(ready):
            if self.proc.poll() is not None:
                raise RuntimeError("roostd exited before it was ready:\n" + self.log_tail())
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError("roostd not ready in time:\n" + self.log_tail())
            time.sleep(0.01)
        with open(ready) as f:
            self.url = f.read().strip()
        self.port = free_port_url(self.url)
        with open(os.path.join(self.dir, "token_ed25519.pem"), "rb") as f:
            key = serialization.load_pem_private_key(f.read(), password=None)
        assert isinstance(key, ed25519.Ed25519PrivateKey)
        self._key = key
        return self

    def log_tail(self, n: int = 4000) -> str:
        try:
            with open(os.path.join(self.dir, "roostd.log"), "rb") as f:
                return f.read()[-n:].decode("utf-8", "replace")
        except OSError:
            return ""

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def cleanup(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def token(self, scope: str = "agent:*:consume agent:*:publish tenant:admin",
              ttl_s: int = 3600, tenant: str = TENANT, exp: Optional[int] = None) -> str:
        """A roostd-minted EdDSA token (the format of ``roost token mint``)."""
        assert self._key is not None
        now = int(time.time())

        def b64(d: Dict[str, Any]) -> str:
            raw = json.dumps(d, separators=(",", ":")).encode()
            return base64.urlsafe_b64encode(raw).decode().rstrip("=")

        head = b64({"alg": "EdDSA", "typ": "JWT"})
        claims = b64({"tenant": tenant, "sub": "pytest", "scope": scope, "iat": now,
                      "exp": exp if exp is not None else now + ttl_s})
        sig = self._key.sign(f"{head}.{claims}".encode())
        return f"{head}.{claims}." + base64.urlsafe_b64encode(sig).decode().rstrip("=")

    def token_file(self, directory: str, **kw: Any) -> str:
        path = os.path.join(directory, "token")
        with open(path, "w") as f:
            f.write(self.token(**kw) + "\n")
        return path


# ---- an HTTP-aware proxy to break things ----------------------------------------------------


def _read_head(sock: socket.socket, buf: bytearray) -> Optional[bytes]:
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    i = buf.index(b"\r\n\r\n") + 4
    head = bytes(buf[:i])
    del buf[:i]
    return head


def _read_exact(sock: socket.socket, buf: bytearray, n: int) -> Optional[bytes]:
    while len(buf) < n:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        buf += chunk
    out = bytes(buf[:n])
    del buf[:n]
    return out


def _header(head: bytes, name: str) -> Optional[str]:
    for line in head.split(b"\r\n")[1:]:
        k, _, v = line.partition(b":")
        if k.strip().lower() == name.encode():
            return v.strip().decode("latin-1")
    return None


class HttpProxy:
    """Forwards HTTP/1.1 from 127.0.0.1:<port> to roostd, one upstream connection per client
    connection. Rules, set any time (each gets method and path):

    * ``refuse(method, path)``: answer 503 (``unavailable``, ``Retry-After: 1``) without asking
      roostd (a proxy that blocks SSE, a draining node).
    * ``drop_reply(method, path)``: forward the request, read roostd's whole answer, then close
      the client's connection without sending it (the answer was lost on the way).
    """

    def __init__(self, upstream_port: int) -> None:
        self.upstream_port = upstream_port
        self.refuse: Callable[[str, str], bool] = lambda m, p: False
        self.drop_reply: Callable[[str, str], bool] = lambda m, p: False
        self.dropped: List[str] = []
        self.requests: List[Tuple[str, str]] = []
        self.refused = 0
        self._lock = threading.Lock()
        self._srv = socket.socket()
        self._srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._srv.bind(("127.0.0.1", 0))
        self._srv.listen(64)
        self.port = self._srv.getsockname()[1]
        self.url = f"http://127.0.0.1:{self.port}"
        self._closed = False
        self._socks: List[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._srv.close()
        with self._lock:
            for s in self._socks:
                try:
                    s.close()
                except OSError:
                    pass

    def cut(self) -> None:
        """Closes every open connection (the network dropped)."""
        with self._lock:
            socks, self._socks = self._socks, []
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
                s.close()
            except OSError:
                pass

    def _accept(self) -> None:
        while not self._closed:
            try:
                c, _ = self._srv.accept()
            except OSError:
                return
            with self._lock:
                self._socks.append(c)
            threading.Thread(target=self._serve, args=(c,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        up: Optional[socket.socket] = None
        cbuf, ubuf = bytearray(), bytearray()
        try:
            while True:
                head = _read_head(client, cbuf)
                if head is None:
                    return
                n = int(_header(head, "content-length") or 0)
                body = _read_exact(client, cbuf, n) if n else b""
                if body is None:
                    return
                method, target = head.split(b" ", 2)[:2]
                path = target.decode("latin-1").split("?", 1)[0]
                m = method.decode("latin-1")
                with self._lock:
                    self.requests.append((m, path))
                if self.refuse(m, path):
                    with self._lock:
                        self.refused += 1
                    body = (b'{"error":{"code":"unavailable","message":"refused by the '
                            b'test proxy"}}')
                    client.sendall(b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: "
                                   b"application/json\r\nRetry-After: 1\r\nContent-Length: "
                                   + str(len(body)).encode() + b"\r\nConnection: close\r\n\r\n"
                                   + body)
                    return
                if up is None:
                    up = socket.create_connection(("127.0.0.1", self.upstream_port))
                    with self._lock:
                        self._socks.append(up)
                up.sendall(head + body)
                drop = self.drop_reply(m, path)
                rhead = _read_head(up, ubuf)
                if rhead is None:
                    return
                if not drop:
                    client.sendall(rhead)
                if not self._relay_body(rhead, up, ubuf, None if drop else client):
                    return
                if drop:
                    with self._lock:
                        self.dropped.append(path)
                    return  # the client never sees the answer
        except OSError:
            return
        finally:
            for s in (client, up):
                if s is not None:
                    try:
                        s.close()
                    except OSError:
                        pass

    def _relay_body(self, rhead: bytes, up: socket.socket, ubuf: bytearray,
                    client: Optional[socket.socket]) -> bool:
        def send(b: bytes) -> None:
            if client is not None and b:
                client.sendall(b)

        cl = _header(rhead, "content-length")
        if cl is not None:
            body = _read_exact(up, ubuf, int(cl))
            if body is None:
                return False
            send(body)
            return True
        if (_header(rhead, "transfer-encoding") or "").lower() == "chunked":
            while True:
                while b"\r\n" not in ubuf:
                    chunk = up.recv(65536)
                    if not chunk:
                        return False
                    ubuf += chunk
                i = ubuf.index(b"\r\n")
                size = int(bytes(ubuf[:i]).split(b";")[0], 16)
                data = _read_exact(up, ubuf, i + 2 + size + 2)
                if data is None:
                    return False
                send(data)
                if size == 0:
                    return True
        if rhead.split(b" ", 2)[1] in (b"204", b"304"):
            return True
        while True:  # until close
            chunk = bytes(ubuf) or up.recv(65536)
            ubuf.clear()
            if not chunk:
                return False
            send(chunk)


# ---- agent processes ------------------------------------------------------------------------

AGENT_SCRIPT = os.path.join(HERE, "agent_proc.py")


class AgentProc:
    """``tests/python/agent_proc.py`` as a child process: a roost.Agent whose handler appends
    ``start ID`` and ``end ID`` lines to a log (O_APPEND, one write each)."""

    _n = 0

    def __init__(self, url: str, token_file: str, agent_id: str, state_dir: str,
                 log_path: str, *, concurrency: int = 1, handler_ms: int = 0,
                 mode: str = "sync", lease_s: int = 60, extra: Sequence[str] = ()) -> None:
        self.log_path = log_path
        self.state_dir = state_dir
        AgentProc._n += 1
        self.stderr_path = f"{log_path}.{AgentProc._n}.stderr"
        argv = [sys.executable, AGENT_SCRIPT, "--url", url, "--token-file", token_file,
                "--agent", agent_id, "--state-dir", state_dir, "--log", log_path,
                "--concurrency", str(concurrency), "--handler-ms", str(handler_ms),
                "--mode", mode, "--lease", str(lease_s), *extra]
        err = open(self.stderr_path, "ab")
        self.proc = subprocess.Popen(argv, stdout=err, stderr=err,
                                     env=dict(os.environ, PYTHONPATH=SDK_SRC))
        err.close()

    def stderr(self) -> str:
        try:
            with open(self.stderr_path, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def terminate(self, timeout_s: float = 60) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout_s * SLOW)
        except subprocess.TimeoutExpired:
            self.proc.send_signal(signal.SIGUSR1)  # agent_proc.py dumps its stacks
            time.sleep(1)
            self.kill()
            raise AssertionError("the agent did not stop after SIGTERM:\n" + self.stderr())


def read_log(path: str) -> List[tuple]:
    try:
        with open(path) as f:
            return [tuple(line.split()) for line in f if line.strip()]
    except FileNotFoundError:
        return []


def starts(path: str) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for parts in read_log(path):
        if parts[0] == "start":
            out[parts[1]] = out.get(parts[1], 0) + 1
    return out


def ends(path: str) -> Dict[str, int]:
    out: Dict[str, int] = {}
    for parts in read_log(path):
        if parts[0] == "end":
            out[parts[1]] = out.get(parts[1], 0) + 1
    return out
