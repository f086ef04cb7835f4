# SPDX-License-Identifier: MIT
"""Interop: Python signatures verified by roostd under ``signatures.require = all`` and by the
npm ``http-message-signatures`` package; events published from Python handled by
``roost agent run --exec`` and events published by ``roost publish`` handled by roost.Agent."""

from __future__ import annotations

import base64
import json
import os
import secrets
import shutil
import subprocess
import threading
from typing import Any, Callable

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ed25519

from harness import REPO, Roostd, roost_cli_bin, wait_until

import roost

NODE_ORACLE = os.path.join(REPO, "tests", "js", "httpsig_interop.cjs")


def _pem_pub(key: ed25519.Ed25519PrivateKey) -> str:
    return key.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo).decode()


def _pem_priv(key: ed25519.Ed25519PrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def test_signed_requests_under_require_all(make_server: Callable[..., Roostd],
                                           tmp_dir: str) -> None:
    d = make_server("signatures.require=all", name="sig")
    admin = roost.Client(d.url, token=d.token(scope="tenant:admin"))
    agent_key = ed25519.Ed25519PrivateKey.generate()
    admin.add_key("a1-ed", "a1", "ed25519", public_key=_pem_pub(agent_key))
    secret = secrets.token_bytes(32)
    admin.add_key("prod-hmac", "*", "hmac-sha256", secret=base64.b64encode(secret).decode())
    tok = d.token()
    producer = roost.Client(d.url, token=tok, signing_key=roost.SigningKey.hmac(secret, "prod-hmac"))
    key_file = os.path.join(tmp_dir, "a1.pem")
    with open(key_file, "wb") as f:
        f.write(_pem_priv(agent_key))
    consumer = roost.Client(d.url, token=tok,
                            signing_key=roost.SigningKey.from_file(key_file, "a1-ed"))
    unsigned = roost.Client(d.url, token=tok)
    with pytest.raises(roost.SignatureRejected) as ei:
        unsigned.publish("a1", {})
    assert ei.value.code == "signature_missing"
    r = producer.publish("a1", {"signed": True})
    assert r.status == 201
    with pytest.raises(roost.SignatureRejected) as ew:
        consumer.publish("a1", {})  # an agent's key never signs a publish
    assert ew.value.code == "key_wrong_agent"
    page = consumer.inbox("a1")  # GET with a query: @query covered
    assert page.head == 1
    ev = consumer.claim("a1", limit=1)[0]
    assert consumer.ack("a1", ev.event_id, ev.lease_token or "") == "completed"
    # The agent loop signs every request too, the stream included.
    producer.publish("a1", {"n": 2})
    done = threading.Event()
    agent = roost.Agent(lambda e: done.set(), agent_id="a1", base_url=d.url, token=tok,
                        state_dir=os.path.join(tmp_dir, "st"),
                        signing_key=roost.SigningKey.from_file(key_file, "a1-ed"))
    t = threading.Thread(target=agent.run, daemon=True)
    t.start()
    try:
        assert done.wait(60)
        wait_until(lambda: agent.status().connection == "streaming", 60, "a signed stream")
    finally:
        agent.stop()
        t.join(60)


@pytest.mark.skipif(not os.path.isdir(os.path.join(REPO, "tests", "js", "node_modules",
                                                   "http-message-signatures")),
                    reason="tests/js npm packages not installed (scripts/js_deps.sh)")
@pytest.mark.parametrize("alg", ["ed25519", "hmac-sha256"])
def test_npm_http_message_signatures_verifies(tmp_dir: str, alg: str) -> None:
    node = shutil.which("node")
    assert node, "node is needed (scripts/deps.sh installs it)"
    if alg == "ed25519":
        k = ed25519.Ed25519PrivateKey.generate()
        with open(os.path.join(tmp_dir, "k1.pub.pem"), "w") as f:
            f.write(_pem_pub(k))
        key = roost.SigningKey.from_pem(_pem_priv(k), "k1")
    else:
        secret = secrets.token_bytes(32)
        with open(os.path.join(tmp_dir, "test-shared-secret.b64"), "w") as f:
            f.write(base64.b64encode(secret).decode())
        key = roost.SigningKey.hmac(secret, "k1")
    body = b'{"lease_token":"lt_x"}'
    authz = "Bearer abc.def.ghi"
    path, query = "/api/v1/agents/a1/inbox/evt_1/ack", "x=1"
    h = key.headers("POST", "roost.example:8080", path, query, authz, body)
    headers = {"Host": h["Host"], "Authorization": authz, "Content-Digest": h["Content-Digest"],
               "Content-Type": "application/json", "Signature-Input": h["Signature-Input"],
               "Signature": h["Signature"]}
    req = {"op": "verify", "alg": alg, "keyid": "k1", "keysDir": tmp_dir,
           "fields": ["@method", "@path", "@query", "@authority", "content-digest",
                      "authorization"],
           "params": ["created", "expires", "nonce", "keyid"],
           "message": {"method": "POST", "url": f"http://roost.example:8080{path}?{query}",
                       "headers": headers}}
    out = subprocess.run([node, NODE_ORACLE], input=json.dumps(req).encode(),
                         capture_output=True, check=True, cwd=os.path.dirname(NODE_ORACLE))
    assert json.loads(out.stdout) == {"verified": True}, out.stdout
    # A tampered path must fail (the oracle is not a rubber stamp).
    req["message"]["url"] = f"http://roost.example:8080{path}x?{query}"  # type: ignore[index]
    out = subprocess.run([node, NODE_ORACLE], input=json.dumps(req).encode(),
                         capture_output=True, check=True, cwd=os.path.dirname(NODE_ORACLE))
    assert json.loads(out.stdout)["verified"] is not True


def test_python_publish_cli_agent_handles(server: Roostd, tmp_dir: str) -> None:
    """Events published from Python are handled by ``roost agent run --exec``."""
    c = roost.Client(server.url, token=server.token())
    a = f"interop.cli.{os.getpid()}"
    out = os.path.join(tmp_dir, "handled")
    ids = [c.publish(a, {"i": i}).events[0].event_id for i in range(3)]
    env = dict(os.environ, ROOST_TOKEN=server.token())
    proc = subprocess.Popen(
        [roost_cli_bin(), "agent", "run", "--server", server.url, "--agent", a,
         "--state-dir", os.path.join(tmp_dir, "st"),
         "--exec", f'echo "$ROOST_EVENT_ID $(cat)" >> {out}'],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        def handled() -> Any:
            try:
                with open(out) as f:
                    return [line.split(" ", 1) for line in f.read().splitlines()]
            except FileNotFoundError:
                return None
        wait_until(lambda: handled() and len(handled()) == 3, 60, "the CLI agent")
        lines = handled()
        assert [x[0] for x in lines] == ids
        assert [json.loads(x[1]) for x in lines] == [{"i": 0}, {"i": 1}, {"i": 2}]
    finally:
        proc.terminate()
        proc.wait(60)
    wait_until(lambda: {e.status for e in c.iter_inbox(a)} == {"completed"}, 30, "acks")


def test_cli_publish_python_agent_handles(server: Roostd, tmp_dir: str) -> None:
    """Events published by ``roost publish`` are handled by roost.Agent."""
    a = f"interop.py.{os.getpid()}"
    env = dict(os.environ, ROOST_TOKEN=server.token())
    for i in range(3):
        subprocess.run([roost_cli_bin(), "publish", "--server", server.url, "--agent", a,
                        "--payload", json.dumps({"i": i})],
                       env=env, check=True, stdout=subprocess.DEVNULL)
    got = []
    agent = roost.Agent(lambda e: got.append(e.payload), agent_id=a, base_url=server.url,
                        token=server.token(), state_dir=os.path.join(tmp_dir, "st"))
    t = threading.Thread(target=agent.run, daemon=True)
    t.start()
    try:
        wait_until(lambda: len(got) == 3, 60, "the Python agent")
    finally:
        agent.stop()
        t.join(60)
    assert got == [{"i": 0}, {"i": 1}, {"i": 2}]
