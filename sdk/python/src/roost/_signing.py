# SPDX-License-Identifier: MIT
"""RFC 9421 request signing, exactly as libroost does it (``src/sdk/sign.c``).

Every request gets ``Host`` (the signed ``@authority``), ``Content-Digest: sha-256=:…:`` when
it has a body (RFC 9530), and ``Signature-Input``/``Signature`` under label ``sig1``::

    Signature-Input: sig1=("@method" "@path" "@query" "@authority" "content-digest"
        "authorization");created=1764790000;expires=1764790060;nonce="…";keyid="k1";alg="ed25519"

``@query`` only when the URL has a query, ``content-digest`` only with a body,
``authorization`` only with a token. ``created`` is now, ``expires`` now + 60 s, the nonce 128
random bits in base64url, fresh for every request (roostd refuses a reused one).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import os
import secrets
import time
from typing import Callable, Dict, List, Optional, Tuple, Union

from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

from ._errors import RoostError

__all__ = ["SigningKey", "ALGORITHMS"]

LABEL = "sig1"
WINDOW_S = 60
NONCE_BYTES = 16
MIN_SECRET_BYTES = 32
MAX_SECRET_BYTES = 1024
MAX_KEY_TEXT_BYTES = 64 * 1024

#: The algorithms roostd verifies (doc/API.md, "Signature keys").
ALGORITHMS = ("ed25519", "ecdsa-p256-sha256", "rsa-pss-sha512", "rsa-v1_5-sha256", "hmac-sha256")

_PrivateKey = Union[ed25519.Ed25519PrivateKey, ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey]


def _key_error(message: str) -> RoostError:
    return RoostError(message, code="invalid_public_key")


def _sf_string(value: str) -> str:
    if any(ord(c) < 0x20 or ord(c) > 0x7E for c in value):
        raise _key_error("a signature parameter must be printable ASCII")
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def content_digest(body: bytes) -> str:
    """The RFC 9530 ``Content-Digest`` value (sha-256) of ``body``."""
    return "sha-256=:" + base64.b64encode(hashlib.sha256(body).digest()).decode("ascii") + ":"


#: A signing key, or a callable answering the current one (a key that rotates, e.g.
#: :meth:`roost.DeviceLogin.signing_key`), asked before every request.
KeyLike = Union["SigningKey", Callable[[], Optional["SigningKey"]]]


class SigningKey:
    """A private key (or HMAC secret) and its registered ``key_id``; signs requests.

    Make one with :meth:`from_file` (a PEM private key, or for ``hmac-sha256`` a file holding
    the base64 secret: the CLI's ``--key-file``/``--key-id``/``--key-alg``), :meth:`from_pem`,
    :meth:`hmac` or :meth:`from_env` (``ROOST_KEY_FILE``/``ROOST_KEY_ID``/``ROOST_KEY_ALG``).
    """

    def __init__(self, key_id: str, alg: str, *, private_key: Optional[_PrivateKey] = None,
                 secret: Optional[bytes] = None) -> None:
        if not key_id or len(key_id) > 128 or not all(c.isalnum() or c in "._-" for c in key_id)\
                or not key_id.isascii():
            raise RoostError("key_id must match [A-Za-z0-9._-]{1,128}", code="invalid_key_id")
        if alg not in ALGORITHMS:
            raise RoostError(f"unknown alg {alg!r} ({', '.join(ALGORITHMS)})", code="invalid_alg")
        self.key_id = key_id
        self.alg = alg
        self._private_key = private_key
        self._secret = secret
        fits = {
            "ed25519": isinstance(private_key, ed25519.Ed25519PrivateKey),
            "ecdsa-p256-sha256": isinstance(private_key, ec.EllipticCurvePrivateKey)
            and isinstance(private_key.curve, ec.SECP256R1),
            "rsa-pss-sha512": isinstance(private_key, rsa.RSAPrivateKey),
            "rsa-v1_5-sha256": isinstance(private_key, rsa.RSAPrivateKey),
            "hmac-sha256": secret is not None
            and MIN_SECRET_BYTES <= len(secret) <= MAX_SECRET_BYTES,
        }
        if not fits[alg]:
            raise _key_error(f"the key does not fit {alg} (a private key, or a 32..1024 byte "
                             "secret for hmac-sha256, is needed)")

    @classmethod
    def from_pem(cls, pem: Union[str, bytes], key_id: str, alg: Optional[str] = None
                 ) -> "SigningKey":
        """A key from PEM text; ``alg`` defaults to what the key implies (RSA: rsa-pss-sha512)."""
        data = pem.encode("ascii") if isinstance(pem, str) else pem
        try:
            key = serialization.load_pem_private_key(data, password=None)
        except (ValueError, TypeError) as e:
            raise _key_error("the signing key is not a PEM private key") from e
        if alg is None:
            if isinstance(key, ed25519.Ed25519PrivateKey):
                alg = "ed25519"
            elif isinstance(key, ec.EllipticCurvePrivateKey):
                alg = "ecdsa-p256-sha256"
            elif isinstance(key, rsa.RSAPrivateKey):
                alg = "rsa-pss-sha512"
            else:
                raise RoostError("unsupported key type: name the alg", code="invalid_alg")
        if not isinstance(key, (ed25519.Ed25519PrivateKey, ec.EllipticCurvePrivateKey,
                                rsa.RSAPrivateKey)):
            raise _key_error(f"the key cannot sign with {alg}")
        return cls(key_id, alg, private_key=key)

    @classmethod
    def hmac(cls, secret: Union[bytes, str], key_id: str) -> "SigningKey":
        """An hmac-sha256 key: raw bytes, or the base64 text ``roost keys add`` prints."""
        raw = _decode_secret(secret) if isinstance(secret, str) else secret
        return cls(key_id, "hmac-sha256", secret=raw)

    @classmethod
    def from_file(cls, path: Union[str, "os.PathLike[str]"], key_id: str,
                  alg: Optional[str] = None) -> "SigningKey":
        """A key from a file: a PEM private key, or the base64 secret when ``alg`` is hmac."""
        try:
            with open(path, "rb") as f:
                data = f.read(MAX_KEY_TEXT_BYTES + 1)
        except OSError as e:
            raise RoostError(f"cannot open the signing key file {os.fspath(path)}: {e}",
                             code="io_error") from e
        if len(data) > MAX_KEY_TEXT_BYTES:
            raise _key_error(f"the signing key file {os.fspath(path)} is too large")
        if alg == "hmac-sha256":
            return cls.hmac(data.decode("ascii", "replace"), key_id)
        return cls.from_pem(data, key_id, alg)

    @classmethod
    def from_env(cls) -> Optional["SigningKey"]:
        """The key ``ROOST_KEY_FILE``/``ROOST_KEY_ID``/``ROOST_KEY_ALG`` name, as the CLI reads
        them; None when ``ROOST_KEY_FILE`` is unset."""
        path = os.environ.get("ROOST_KEY_FILE")
        if not path:
            return None
        key_id = os.environ.get("ROOST_KEY_ID")
        if not key_id:
            raise RoostError("a signing key needs ROOST_KEY_ID", code="invalid_key_id")
        return cls.from_file(path, key_id, os.environ.get("ROOST_KEY_ALG") or None)

    def sign_bytes(self, data: bytes) -> bytes:
        """The raw signature of ``data`` under this key's algorithm (RFC 9421 §3.3)."""
        k = self._private_key
        if self.alg == "hmac-sha256":
            assert self._secret is not None
            return hmac.new(self._secret, data, hashlib.sha256).digest()
        if self.alg == "ed25519" and isinstance(k, ed25519.Ed25519PrivateKey):
            return k.sign(data)
        if self.alg == "ecdsa-p256-sha256" and isinstance(k, ec.EllipticCurvePrivateKey):
            r, s = decode_dss_signature(k.sign(data, ec.ECDSA(hashes.SHA256())))
            return r.to_bytes(32, "big") + s.to_bytes(32, "big")  # raw r||s, not DER
        if self.alg == "rsa-pss-sha512" and isinstance(k, rsa.RSAPrivateKey):
            return k.sign(data, padding.PSS(mgf=padding.MGF1(hashes.SHA512()), salt_length=64),
                          hashes.SHA512())
        if self.alg == "rsa-v1_5-sha256" and isinstance(k, rsa.RSAPrivateKey):
            return k.sign(data, padding.PKCS1v15(), hashes.SHA256())
        raise _key_error(f"the key cannot sign with {self.alg}")

    def headers(self, method: str, authority: str, path: str, query: Optional[str],
                authorization: Optional[str], body: Optional[bytes],
                now: Optional[int] = None, nonce: Optional[str] = None) -> Dict[str, str]:
        """The headers that sign one request: ``Host``, ``Content-Digest`` (with a body),
        ``Signature-Input`` and ``Signature``.

        ``authority`` is host[:port] (lowercase, default port omitted), ``path`` the request
        path as sent, ``query`` the query string without ``?`` (None when absent),
        ``authorization`` the whole ``Authorization`` value.
        """
        created = int(time.time()) if now is None else now
        nonce = nonce or base64.urlsafe_b64encode(secrets.token_bytes(NONCE_BYTES)).decode(
            "ascii").rstrip("=")
        covered: List[Tuple[str, str]] = [("@method", method.upper()), ("@path", path)]
        if query is not None:
            covered.append(("@query", "?" + query))
        covered.append(("@authority", authority))
        out: Dict[str, str] = {"Host": authority}
        if body:
            digest = content_digest(body)
            covered.append(("content-digest", digest))
            out["Content-Digest"] = digest
        if authorization is not None:
            covered.append(("authorization", authorization))
        params = (
            "(" + " ".join(f'"{name}"' for name, _ in covered) + ")"
            + f";created={created};expires={created + WINDOW_S}"
            + f";nonce={_sf_string(nonce)};keyid={_sf_string(self.key_id)}"
            + f";alg={_sf_string(self.alg)}"
        )
        base = "".join(f'"{name}": {value}\n' for name, value in covered)
        base += f'"@signature-params": {params}'
        signature = base64.b64encode(self.sign_bytes(base.encode("utf-8"))).decode("ascii")
        out["Signature-Input"] = f"{LABEL}={params}"
        out["Signature"] = f"{LABEL}=:{signature}:"
        return out


def _decode_secret(text: str) -> bytes:
    t = text.strip()
    t += "=" * (-len(t) % 4)
    try:
        if "-" in t or "_" in t:
            return base64.b64decode(t, altchars=b"-_", validate=True)
        return base64.b64decode(t, validate=True)
    except ValueError:
        pass
    raise _key_error("the hmac-sha256 secret must be base64 of 32..1024 bytes")
