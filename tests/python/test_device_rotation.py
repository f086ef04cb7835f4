# SPDX-License-Identifier: MIT
"""`roost agent run` with a logged-in device under signatures.require = all while everything
rotates fast: access tokens of 3 s and signing keys of 5 s, for two minutes (some 60 refreshes,
each with a new key). Every event published meanwhile is handled once, roostd answers no 401,
and when the operator revokes the device the agent stops at its next refresh and says why. The
same, shorter, for a device that signs with Ed25519 keys of its own (roost login --signing-key
ed25519): each refresh registers a key pair the agent made."""

from __future__ import annotations

import base64
import json
import os
import re
import secrets
import subprocess
import time
from typing import Any, List

import httpx

from harness import SLOW, Roostd, roost_cli_bin, wait_until

import roost
from roost._signing import SigningKey

from test_device_login import admin, enrol

RUN_S = 120.0  # wall time of the agent's work: rotations, not patience, are the point
ROTATIONS = 12  # refreshes (each with a new Ed25519 key) the own-keys agent is watched through


def test_agent_run_rotating_keys_require_all(make_server: Any, tmp_dir: str) -> None:
    srv = make_server("oauth.poll_interval_s=1", "oauth.access_token_ttl_s=3",
                      "oauth.signing_key_ttl_s=5", "signatures.require=all")
    tok = enrol(srv)
    creds = os.path.join(tmp_dir, "creds")
    out_dir = os.path.join(tmp_dir, "out")
    os.mkdir(out_dir)
    os.makedirs(creds, mode=0o700)
    rec = {"server": srv.url, "tenant": tok["tenant"], "agent_id": "laptop",
           "device_id": tok["device_id"], "refresh_token": tok["refresh_token"]}
    fd = os.open(os.path.join(creds, "device-laptop.json"), os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, json.dumps(rec).encode())
    os.close(fd)
    pub = publisher(srv)  # require = all covers publish
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp_dir, "ROOST_CREDENTIALS_DIR": creds}
    agent = subprocess.Popen(
        [roost_cli_bin(), "agent", "run", "--agent", "laptop", "--state-dir",
         os.path.join(tmp_dir, "state"), "--exec", f"echo x >> {out_dir}/$ROOST_EVENT_ID"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    ids: List[str] = []
    try:
        end = time.monotonic() + RUN_S
        while time.monotonic() < end:
            res = pub.publish(["laptop"], {"n": len(ids)})
            ids.append(res.events[0].event_id)
            time.sleep(0.5)
        wait_until(lambda: all(os.path.exists(f"{out_dir}/{i}") for i in ids), 60,
                   "every event handled")
        assert agent.poll() is None, "the agent is still running"
        # each handled once: no lease ran out behind a refused request
        assert all(open(f"{out_dir}/{i}").read() == "x\n" for i in ids)
        d = httpx.get(srv.url + "/api/v1/admin/devices", headers=admin(srv)).json()["devices"][0]
        assert d["refreshes"] >= 20, d  # ~60 on an idle machine: one per 2 s
        log_before = open(os.path.join(srv.dir, "roostd.log")).read()
        # the operator revokes the device: the agent stops at its next request (its refresh
        # refused, or its key already dead) and says why
        r = httpx.post(srv.url + f"/api/v1/admin/devices/{tok['device_id']}/revoke",
                       headers=admin(srv))
        assert r.status_code == 200, r.text
        pub.publish(["laptop"], {"n": "after revocation"})
        code = agent.wait(timeout=30 * SLOW)
        output = agent.stdout.read() if agent.stdout else ""
        assert code != 0
        assert "revoked" in output, output
    finally:
        pub.close()
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    # no request of the agent (or publisher) was refused while the device was approved
    assert re.search(r"\bstatus=200\b", log_before), "the access log is where we look"
    refused = [ln for ln in log_before.splitlines() if re.search(r"\bstatus=401\b", ln)]
    assert not refused, refused[:5]
    assert len(ids) >= 100


def publisher(srv: Roostd) -> roost.Client:
    """A client publishing to laptop under require = all, signing with a producer key of its own."""
    secret = base64.b64encode(secrets.token_bytes(32)).decode()
    r = httpx.post(srv.url + "/api/v1/admin/keys", headers=admin(srv),
                   json={"key_id": "pub1", "agent_id": "*", "alg": "hmac-sha256",
                         "secret": secret})
    assert r.status_code in (200, 201), r.text
    return roost.Client(srv.url, token=srv.token("agent:laptop:publish", tenant="default"),
                        signing_key=SigningKey.hmac(secret, "pub1"))


def test_agent_run_own_ed25519_keys_require_all(make_server: Any, tmp_dir: str) -> None:
    """`roost login --signing-key ed25519`, then `agent run` through ROTATIONS refreshes (3 s
    tokens, 5 s keys), each registering an Ed25519 key the agent made: every event published
    meanwhile handled once, no 401, and every key roostd holds for the device is one of those."""
    from test_device_keyring import login
    srv = make_server("oauth.poll_interval_s=1", "oauth.access_token_ttl_s=3",
                      "oauth.signing_key_ttl_s=5", "signatures.require=all")
    creds = os.path.join(tmp_dir, "creds")
    out_dir = os.path.join(tmp_dir, "out")
    os.mkdir(out_dir)
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp_dir, "ROOST_CREDENTIALS_DIR": creds}
    said = login(srv, env, "--signing-key", "ed25519")
    assert "it signs with Ed25519 keys of its own" in said, said
    rec = json.load(open(os.path.join(creds, "device-laptop.json")))  # no bus: the 0600 file
    assert rec["signing_key"]["alg"] == "ed25519" and "secret" not in rec["signing_key"]
    assert rec["signing_key"]["private_key"].startswith("-----BEGIN PRIVATE KEY-----")
    pub = publisher(srv)
    agent = subprocess.Popen(
        [roost_cli_bin(), "agent", "run", "--agent", "laptop", "--state-dir",
         os.path.join(tmp_dir, "state"), "--exec", f"echo x >> {out_dir}/$ROOST_EVENT_ID"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

    def refreshes() -> int:
        r = httpx.get(srv.url + "/api/v1/admin/devices", headers=admin(srv))
        return int(r.json()["devices"][0]["refreshes"])

    ids: List[str] = []
    try:
        # publishing until the agent has rotated ROTATIONS times (some 25 s idle, a refresh every
        # 2 s), however long a loaded machine takes
        deadline = time.monotonic() + 120 * SLOW
        while refreshes() < ROTATIONS:
            assert time.monotonic() < deadline, f"{refreshes()} refreshes"
            assert agent.poll() is None, agent.stdout.read() if agent.stdout else ""
            ids.append(pub.publish(["laptop"], {"n": len(ids)}).events[0].event_id)
            time.sleep(0.5)
        wait_until(lambda: all(os.path.exists(f"{out_dir}/{i}") for i in ids), 60 * SLOW,
                   "every event handled")
        assert agent.poll() is None, "the agent is still running"
        assert all(open(f"{out_dir}/{i}").read() == "x\n" for i in ids)
        keys = httpx.get(srv.url + "/api/v1/admin/keys", headers=admin(srv),
                         params={"limit": 100}).json()["keys"]
        device_keys = [k for k in keys if k["key_id"].startswith(rec["device_id"] + ".")]
        assert len(device_keys) >= ROTATIONS, device_keys  # one for each exchange
        assert {k["alg"] for k in device_keys} == {"ed25519"}, device_keys
        log = open(os.path.join(srv.dir, "roostd.log")).read()
    finally:
        pub.close()
        agent.terminate()
        try:
            output = agent.communicate(timeout=30 * SLOW)[0]
        except subprocess.TimeoutExpired:
            agent.kill()
            output = agent.communicate()[0]
    assert re.search(r"\bstatus=200\b", log), "the access log is where we look"
    refused = [ln for ln in log.splitlines() if re.search(r"\bstatus=401\b", ln)]
    assert not refused, refused[:5]
    rec2 = json.load(open(os.path.join(creds, "device-laptop.json")))
    assert rec2["signing_key"]["private_key"] != rec["signing_key"]["private_key"]
    assert rec2["signing_key"]["private_key"] not in output
    assert "refused" not in output, output  # stopped by us, its device login fine
    assert ids, "events were published"
