# SPDX-License-Identifier: MIT
"""A device logged in with ``roost login`` as a token source (doc/CREDENTIALS.md).

The same credential store as the CLI and libroost: the directory ``dir`` (default
``$ROOST_CREDENTIALS_DIR``, else ``$XDG_STATE_HOME/roost``, else ``~/.local/state/roost``) holds
``device-<agent>.json``, mode 0600, with the record itself, or, when ``roost login`` put the
secrets in the OS keyring, a record without secrets naming the store (``"store":
"secret-service"``); the record is then read from the Secret Service through ``secretstorage``
(Debian ``python3-secretstorage``). Every refresh rotates the refresh token, which is written back
to the same store before the new access token is used.

A login made with ``roost login --signing-key ed25519`` (its record's ``signing_key`` has ``"alg":
"ed25519"``) signs with Ed25519 keys of its own: every refresh makes a new key pair, registers its
public half in the same call (``signing_public_key``) and stores the private half (PKCS#8 PEM,
``signing_key.private_key``) beside the refresh token, as libroost does.
"""

from __future__ import annotations

import fcntl
import importlib
import json
import os
import threading
import time
from typing import Any, Dict, Optional

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from ._errors import RoostError, Unauthorized
from ._signing import SigningKey
from ._tokens import TokenSource

__all__ = ["DeviceLogin", "credentials_dir"]

SCHEMA = "org.roost.Device"  # libsecret's schema name (src/sdk/cred_keyring.c)
MAX_RECORD_BYTES = 64 * 1024


def credentials_dir(dir: Optional[str] = None) -> str:
    """The credential store's directory, by the CLI's rules."""
    if dir:
        return dir
    env = os.environ.get("ROOST_CREDENTIALS_DIR")
    if env:
        return env
    xdg = os.environ.get("XDG_STATE_HOME")
    if xdg and xdg.startswith("/"):
        return xdg + "/roost"
    return os.path.join(os.environ.get("HOME", "."), ".local", "state", "roost")


def _only_agent(dir: str) -> str:
    try:
        names = [n[7:-5] for n in os.listdir(dir)
                 if n.startswith("device-") and n.endswith(".json") and len(n) > 12]
    except OSError:
        names = []
    if not names:
        raise RoostError(f"no device login in {dir}: run roost login", code="not_found")
    if len(names) > 1:
        raise RoostError(f"several agents are logged in in {dir}: name the agent",
                         code="invalid_argument")
    return names[0]


class _Keyring:
    """The record as one Secret Service item (attributes agent, dir), as libsecret keeps it."""

    def __init__(self, dir: str, agent: str) -> None:
        try:
            self._ss: Any = importlib.import_module("secretstorage")
        except ImportError as e:
            raise RoostError("the device login is in the OS keyring: install secretstorage "
                             "(Debian python3-secretstorage)", code="io_error") from e
        self.attrs = {"agent": agent, "dir": dir}

    def _collection(self) -> Any:
        try:
            coll = self._ss.get_default_collection(self._ss.dbus_init())
            if coll.is_locked():
                coll.unlock()
            return coll
        except Exception as e:  # secretstorage raises several unrelated types
            raise RoostError(f"the OS keyring cannot be reached: {e}", code="io_error") from e

    def load(self) -> str:
        items = list(self._collection().search_items(self.attrs))
        if not items:
            raise RoostError("the device login is missing from the OS keyring", code="not_found")
        return bytes(items[0].get_secret()).decode("utf-8")

    def save(self, text: str) -> None:
        self._collection().create_item(
            f"Roost device login of agent {self.attrs['agent']}",
            {**self.attrs, "xdg:schema": SCHEMA}, text.encode("utf-8"), replace=True)


class DeviceLogin(TokenSource):
    """The access tokens (and signing keys) of a device logged in with ``roost login``.

    A :class:`roost.TokenSource`: :meth:`get` answers from memory while the access token has more
    than a third of its life left, else refreshes at ``/oauth/token`` (saving the rotated refresh
    token first). :meth:`signing_key` is the key of the last refresh, for
    ``signatures.require``: the HMAC key roostd issued, or, for a login that signs with keys of
    its own (``roost login --signing-key ed25519``), the Ed25519 key made and registered with
    it::

        device = roost.DeviceLogin("laptop")
        client = roost.Client(device.server, token=device, signing_key=device.signing_key)

    A refused refresh (the device revoked, or its refresh token reused elsewhere) raises
    :class:`roost.Unauthorized` with roostd's reason, then and on every later call.

    Args:
        agent: the agent logged in (None: the only one in the store).
        dir: the credential store's directory (see :func:`credentials_dir`).
    """

    def __init__(self, agent: Optional[str] = None, *, dir: Optional[str] = None,
                 timeout_s: float = 30.0) -> None:
        self.dir = credentials_dir(dir)
        self.agent = agent or _only_agent(self.dir)
        self.timeout_s = timeout_s
        self._lock = threading.Lock()
        self._keyring: Optional[_Keyring] = None
        rec = self._load()
        self.server: str = str(rec["server"])
        self.tenant: str = str(rec.get("tenant") or "")
        self._refresh = str(rec["refresh_token"])
        #: whether every refresh registers an Ed25519 key made here (the login's choice)
        self.own_keys = (rec.get("signing_key") or {}).get("alg") == "ed25519"
        self._access: Optional[str] = None
        self._access_exp = self._access_ttl = 0.0
        self._key: Optional[SigningKey] = None
        self._key_exp = self._key_ttl = 0.0
        self._refused: Optional[str] = None

    @property
    def store(self) -> str:
        """Where the record lives: ``"secret-service"`` or ``"file"``."""
        return "secret-service" if self._keyring is not None else "file"

    def _path(self) -> str:
        return os.path.join(self.dir, f"device-{self.agent}.json")

    def _load(self) -> Dict[str, Any]:
        try:
            with open(self._path(), "rb") as f:
                text = f.read(MAX_RECORD_BYTES + 1).decode("utf-8")
        except OSError as e:
            raise RoostError(f"no device login of agent {self.agent} in {self.dir}: {e}",
                             code="not_found") from e
        rec = json.loads(text)
        store = rec.get("store", "file")
        if store != "file":
            if store != "secret-service":
                raise RoostError(f"the device login is in an unknown store {store!r}",
                                 code="io_error")
            self._keyring = _Keyring(self.dir, self.agent)
            rec = json.loads(self._keyring.load())
        if not isinstance(rec, dict) or "server" not in rec or "refresh_token" not in rec:
            raise RoostError(f"the device login of {self.agent} is damaged", code="io_error")
        return rec

    def _save(self, answer: Dict[str, Any]) -> None:
        rec = {"server": self.server, "tenant": answer.get("tenant"), "agent_id": self.agent,
               "device_id": answer.get("device_id"), "refresh_token": answer["refresh_token"],
               "signing_key": answer.get("signing_key")}
        if self._keyring is not None:
            self._keyring.save(json.dumps(rec, separators=(",", ":")))
            return  # the file already names the keyring and holds no secret
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        tmp = f"{self._path()}.{os.getpid()}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, json.dumps(rec, separators=(",", ":")).encode("utf-8"))
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, self._path())

    def _refresh_now(self) -> None:
        # one refresh at a time per device across processes, as libroost (device-<agent>.lock)
        fd = -1
        try:
            fd = os.open(os.path.join(self.dir, f"device-{self.agent}.lock"),
                         os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
            fcntl.flock(fd, fcntl.LOCK_EX)
        except OSError:
            pass  # a read-only directory: unlocked
        try:
            self._refresh_locked()
        finally:
            if fd >= 0:
                os.close(fd)

    def _refresh_locked(self) -> None:
        try:  # another process of the device may have rotated it: the stored one is live
            self._refresh = str(self._load()["refresh_token"])
        except (RoostError, ValueError, KeyError):
            pass
        data = {"grant_type": "refresh_token", "refresh_token": self._refresh,
                "client_id": self.agent}
        priv: Optional[ed25519.Ed25519PrivateKey] = None
        if self.own_keys:
            # a new pair at every refresh (a retried one too), its public half registered by
            # this same call
            priv = ed25519.Ed25519PrivateKey.generate()
            data["signing_public_key"] = priv.public_key().public_bytes(
                serialization.Encoding.PEM,
                serialization.PublicFormat.SubjectPublicKeyInfo).decode("ascii")
        try:
            r = httpx.post(self.server + "/oauth/token", timeout=self.timeout_s, data=data)
        except httpx.HTTPError as e:
            # the same refresh token is sent again next time: a lost answer is retried, not
            # taken for a replay (oauth.refresh_reuse_interval_s)
            raise RoostError(f"the refresh failed: {e}", code="connect_failed") from e
        if r.status_code == 400:
            try:
                err = r.json()
                why = f"{err.get('error')}: {err.get('error_description')}"
            except ValueError:
                why = "refused"
            self._refused = f"the device login of agent {self.agent} was refused: {why}"
            raise Unauthorized(self._refused, code="invalid_grant", status=400)
        if r.status_code != 200:
            raise RoostError(f"the refresh failed: HTTP {r.status_code}", code="server_error",
                             status=r.status_code)
        ans = r.json()
        key = ans.get("signing_key") or {}
        if priv is not None:
            if key.get("alg") != "ed25519" or not key.get("key_id"):
                raise RoostError("roostd answered with an unexpected signing key",
                                 code="protocol_error")
            # stored beside the refresh token; Python cannot wipe its copies of it
            key["private_key"] = priv.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption()).decode("ascii")
        self._save(ans)  # before the new access token is used
        now = time.time()
        self._refresh = str(ans["refresh_token"])
        self._access = str(ans["access_token"])
        self._access_ttl = float(ans.get("expires_in") or 60)
        self._access_exp = now + self._access_ttl
        new_key: Optional[SigningKey] = None
        if priv is not None:
            new_key = SigningKey(str(key["key_id"]), "ed25519", private_key=priv)
        elif key.get("secret"):
            new_key = SigningKey.hmac(str(key["secret"]), str(key["key_id"]))
        if new_key is not None:
            self._key = new_key
            self._key_ttl = float(key.get("expires_in") or 60)
            self._key_exp = now + self._key_ttl

    def _fresh(self) -> None:
        if self._refused is not None:
            raise Unauthorized(self._refused, code="invalid_grant", status=400)
        now = time.time()
        near = self._access is None or now + max(self._access_ttl / 3, 1) >= self._access_exp
        near = near or (self._key is not None and now + max(self._key_ttl / 3, 1) >= self._key_exp)
        if near:
            try:
                self._refresh_now()
            except Unauthorized:
                raise
            except RoostError:
                if self._access is None or time.time() >= self._access_exp:
                    raise  # nothing left to answer with
                # keep the token we have; the next call tries again

    def get(self) -> str:
        with self._lock:
            self._fresh()
            assert self._access is not None
            return self._access

    def signing_key(self) -> Optional[SigningKey]:
        """The signing key of the last refresh (refreshing first when it nears its end)."""
        with self._lock:
            self._fresh()
            return self._key
