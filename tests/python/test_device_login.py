# SPDX-License-Identifier: MIT
"""Device login (RFC 8628) and rotating refresh tokens against the real roostd: the RFC errors
(authorization_pending, slow_down, expired_token, access_denied, invalid_grant), the operator's
approval with at most the scopes it allows, rotation of refresh tokens and signing keys (the
previous key verifies during the overlap, a dead one never), reuse of a refresh token revoking
the family, revocation, tenant isolation, and the RFC 8414 metadata."""

from __future__ import annotations

import base64
import json
import time
from typing import Any, Dict, List, Optional

import httpx
import pytest

from harness import SLOW, Roostd, roost_cli_bin, wait_until

import roost
from roost._signing import SigningKey

FORM = "application/x-www-form-urlencoded"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"


def start(srv: Roostd, agent: str = "laptop", **extra: str) -> Dict[str, Any]:
    data = {"client_id": agent, "device_name": "test box", **extra}
    r = httpx.post(srv.url + "/oauth/device_authorization", data=data)
    assert r.status_code == 200, r.text
    assert r.headers["cache-control"] == "no-store"
    return dict(r.json())


def poll(srv: Roostd, dc: Dict[str, Any], agent: str = "laptop") -> httpx.Response:
    return httpx.post(srv.url + "/oauth/token", data={
        "grant_type": DEVICE_GRANT, "device_code": dc["device_code"], "client_id": agent})


def refresh(srv: Roostd, rt: str, **extra: str) -> httpx.Response:
    return httpx.post(srv.url + "/oauth/token",
                      data={"grant_type": "refresh_token", "refresh_token": rt, **extra})


def admin(srv: Roostd, tenant: str = "default") -> Dict[str, str]:
    return {"Authorization": "Bearer " + srv.token("tenant:admin", tenant=tenant)}


def approve(srv: Roostd, code: str, tenant: str = "default", **extra: str) -> httpx.Response:
    return httpx.post(srv.url + "/api/v1/admin/devices/approve", headers=admin(srv, tenant),
                      json={"user_code": code, **extra})


def err(r: httpx.Response) -> str:
    assert r.status_code == 400, r.text
    return str(r.json()["error"])


def wait_interval(dc: Dict[str, Any], last: float) -> None:
    """Sleeps until the polling interval since `last` has passed (the RFC's rule, not a guess)."""
    left = last + float(dc["interval"]) - time.monotonic()
    if left > 0:
        time.sleep(left + 0.05)


def claims(jwt: str) -> Dict[str, Any]:
    p = jwt.split(".")[1]
    return dict(json.loads(base64.urlsafe_b64decode(p + "=" * (-len(p) % 4))))


def enrol(srv: Roostd, agent: str = "laptop", tenant: Optional[str] = None,
          **approve_extra: str) -> Dict[str, Any]:
    extra = {"tenant": tenant} if tenant else {}
    dc = start(srv, agent, **extra)
    assert err(poll(srv, dc, agent)) == "authorization_pending"
    t0 = time.monotonic()
    assert approve(srv, dc["user_code"], tenant or "default", **approve_extra).status_code == 200
    wait_interval(dc, t0)
    r = poll(srv, dc, agent)
    assert r.status_code == 200, r.text
    return dict(r.json())


def test_metadata(make_server: Any) -> None:
    srv = make_server()
    r = httpx.get(srv.url + "/.well-known/oauth-authorization-server")
    assert r.status_code == 200
    m = r.json()
    assert m["issuer"] == srv.url
    assert m["device_authorization_endpoint"] == srv.url + "/oauth/device_authorization"
    assert m["token_endpoint"] == srv.url + "/oauth/token"
    assert DEVICE_GRANT in m["grant_types_supported"]
    assert "refresh_token" in m["grant_types_supported"]


def test_device_flow_pending_slow_down_approve(make_server: Any) -> None:
    srv = make_server("oauth.poll_interval_s=1", "oauth.access_token_ttl_s=120")
    dc = start(srv, scope="agent:laptop:consume agent:other:publish")
    assert dc["interval"] == 1 and 0 < dc["expires_in"] <= 600
    assert len(dc["user_code"]) == 9 and dc["user_code"][4] == "-"
    assert dc["verification_uri"].startswith(srv.url)
    # first poll: pending; an immediate second one: slow_down, the interval grows by 5 s
    t0 = time.monotonic()
    assert err(poll(srv, dc)) == "authorization_pending"
    r = poll(srv, dc)
    assert err(r) == "slow_down" and r.json()["interval"] == 6
    # the operator sees what asks (agent, scopes, name, address) by its user code
    r = httpx.get(srv.url + "/api/v1/admin/devices", headers=admin(srv),
                  params={"user_code": dc["user_code"].lower().replace("-", "")})
    assert r.status_code == 200, r.text
    (d,) = r.json()["devices"]
    assert d["agent_id"] == "laptop" and d["status"] == "pending"
    assert d["scope_requested"] == "agent:laptop:consume agent:other:publish"
    assert d["name"] == "test box" and d["address"] == "127.0.0.1"
    assert d["user_code"] == dc["user_code"]
    # the operator grants less than was asked
    r = approve(srv, dc["user_code"], scope="agent:laptop:consume")
    assert r.status_code == 200, r.text
    assert r.json()["status"] == "approved" and r.json()["scope_granted"] == "agent:laptop:consume"
    assert approve(srv, dc["user_code"]).json()["error"]["code"] == "invalid_state"
    # once approved, the next poll gets the tokens
    r = poll(srv, dc)
    assert r.status_code == 200, r.text
    tok = r.json()
    assert tok["token_type"] == "Bearer" and tok["expires_in"] == 120
    assert tok["scope"] == "agent:laptop:consume" and tok["agent_id"] == "laptop"
    assert tok["refresh_token"].startswith("rt1.default.")
    c = claims(tok["access_token"])
    assert c["tenant"] == "default" and c["scope"] == "agent:laptop:consume"
    assert c["exp"] - c["iat"] == 120
    assert tok["signing_key"]["alg"] == "hmac-sha256" and tok["signing_key"]["secret"]
    # the access token works within its scope and nowhere else
    h = {"Authorization": "Bearer " + tok["access_token"]}
    assert httpx.get(srv.url + "/api/v1/agents/laptop/inbox", headers=h).status_code == 200
    assert httpx.get(srv.url + "/api/v1/agents/other/inbox", headers=h).status_code == 403
    # a device code is exchanged once: a second poll soon after is taken as the retry of a lost
    # answer (a fresh pair); once a refresh token of the device was used, it is refused
    r = poll(srv, dc)
    assert r.status_code == 200, r.text
    assert refresh(srv, r.json()["refresh_token"]).status_code == 200
    assert err(poll(srv, dc)) == "invalid_grant"
    assert time.monotonic() - t0 < 60 * SLOW


def test_denied_and_expired(make_server: Any) -> None:
    srv = make_server("oauth.poll_interval_s=1", "oauth.device_code_ttl_s=5")
    dc = start(srv)
    r = httpx.post(srv.url + "/api/v1/admin/devices/deny", headers=admin(srv),
                   json={"user_code": dc["user_code"]})
    assert r.status_code == 200 and r.json()["status"] == "denied"
    assert err(poll(srv, dc)) == "access_denied"
    dc2 = start(srv)
    deadline = time.monotonic() + dc2["expires_in"]
    wait_until(lambda: time.monotonic() > deadline, 10, "the code's expiry")
    assert err(poll(srv, dc2)) == "expired_token"
    r = approve(srv, dc2["user_code"])
    assert r.status_code == 409 and r.json()["error"]["code"] == "invalid_state"
    assert approve(srv, "BCDF-GHJK").status_code == 404


def test_bad_requests(make_server: Any) -> None:
    srv = make_server()
    u = srv.url + "/oauth/token"
    assert err(httpx.post(u, data={"grant_type": "password"})) == "unsupported_grant_type"
    assert err(httpx.post(u, data={"grant_type": "refresh_token"})) == "invalid_request"
    assert err(httpx.post(u, data={"grant_type": "refresh_token",
                                   "refresh_token": "rt1.default.AAAAAAAAAAAAAAAAAAAAAA"})) \
        == "invalid_grant"
    assert err(httpx.post(u, data={"grant_type": "refresh_token", "refresh_token": "garbage"})) \
        == "invalid_grant"
    # a parameter given twice (RFC 6749 §3.1)
    r = httpx.post(u, content="grant_type=refresh_token&grant_type=refresh_token",
                   headers={"Content-Type": FORM})
    assert r.status_code == 400
    # JSON bodies are accepted too; text is not
    r = httpx.post(srv.url + "/oauth/device_authorization", json={"client_id": "a1"})
    assert r.status_code == 200
    r = httpx.post(srv.url + "/oauth/device_authorization", content="client_id=a1",
                   headers={"Content-Type": "text/plain"})
    assert r.status_code == 415
    r = httpx.post(srv.url + "/oauth/device_authorization", data={"client_id": "a b"})
    assert err(r) == "invalid_client"
    r = httpx.post(srv.url + "/oauth/device_authorization", data={"client_id": "a1",
                                                                    "scope": "nonsense"})
    assert err(r) == "invalid_scope"
    r = httpx.post(srv.url + "/oauth/device_authorization", data={"client_id": "a1",
                                                                    "tenant": "../x"})
    assert err(r) == "invalid_request"


def signed_get(srv: Roostd, tok: Dict[str, Any], key: SigningKey, agent: str = "laptop") -> int:
    path = f"/api/v1/agents/{agent}/inbox"
    authz = "Bearer " + tok["access_token"]
    authority = srv.url.split("://", 1)[1]
    h = key.headers("GET", authority, path, None, authz, None)
    h["Authorization"] = authz
    return httpx.get(srv.url + path, headers=h).status_code


def test_rotation_reuse_and_revoke(make_server: Any) -> None:
    # reuse interval 0: a replay right after the agent's refresh revokes at once
    srv = make_server("oauth.poll_interval_s=1", "signatures.require=all",
                      "oauth.key_overlap_s=3", "oauth.signing_key_ttl_s=600",
                      "oauth.refresh_reuse_interval_s=0")
    t1 = enrol(srv)
    k1 = SigningKey.hmac(t1["signing_key"]["secret"], t1["signing_key"]["key_id"])
    assert signed_get(srv, t1, k1) == 200
    # an unsigned request is refused under signatures.require=all
    h = {"Authorization": "Bearer " + t1["access_token"]}
    assert httpx.get(srv.url + "/api/v1/agents/laptop/inbox", headers=h).status_code == 401
    r = refresh(srv, t1["refresh_token"], client_id="laptop")
    assert r.status_code == 200, r.text
    t2 = r.json()
    assert t2["refresh_token"] != t1["refresh_token"]
    assert t2["signing_key"]["key_id"] != t1["signing_key"]["key_id"]
    k2 = SigningKey.hmac(t2["signing_key"]["secret"], t2["signing_key"]["key_id"])
    assert signed_get(srv, t2, k2) == 200
    # the previous key verifies during the overlap, then never again
    assert signed_get(srv, t2, k1) == 200
    end = time.monotonic() + 3.5
    wait_until(lambda: time.monotonic() > end, 10, "the overlap's end")
    r = httpx.get(srv.url + "/api/v1/agents/laptop/inbox",
                  headers={**k1.headers("GET", srv.url.split("://", 1)[1],
                                        "/api/v1/agents/laptop/inbox", None,
                                        "Bearer " + t2["access_token"], None),
                           "Authorization": "Bearer " + t2["access_token"]})
    assert r.status_code == 401 and r.json()["error"]["code"] == "key_revoked"
    assert signed_get(srv, t2, k2) == 200
    # the agent registers its own Ed25519 key instead of taking an HMAC one
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ed25519
    priv = ed25519.Ed25519PrivateKey.generate()
    pub = priv.public_key().public_bytes(serialization.Encoding.PEM,
                                         serialization.PublicFormat.SubjectPublicKeyInfo)
    r = refresh(srv, t2["refresh_token"], signing_public_key=pub.decode())
    assert r.status_code == 200, r.text
    t3 = r.json()
    assert t3["signing_key"]["alg"] == "ed25519" and "secret" not in t3["signing_key"]
    k3 = SigningKey(t3["signing_key"]["key_id"], "ed25519", private_key=priv)
    assert signed_get(srv, t3, k3) == 200
    # a copy of t2's refresh token (already used) comes back: the family is revoked
    r = refresh(srv, t2["refresh_token"])
    assert err(r) == "invalid_grant" and "reuse" in r.json()["error_description"]
    r = refresh(srv, t3["refresh_token"])
    assert err(r) == "invalid_grant" and "revoked" in r.json()["error_description"]
    assert signed_get(srv, t3, k3) == 401  # its keys died with it
    r = httpx.get(srv.url + "/api/v1/admin/devices", headers=admin(srv),
                  params={"agent_id": "laptop"})
    (d,) = r.json()["devices"]
    assert d["status"] == "revoked" and d["revoked_reason"] == "refresh token reused"
    # an operator revokes another device: its next refresh fails
    t4 = enrol(srv)
    r = httpx.post(srv.url + f"/api/v1/admin/devices/{t4['device_id']}/revoke", headers=admin(srv))
    assert r.status_code == 200 and r.json()["status"] == "revoked"
    r = refresh(srv, t4["refresh_token"])
    assert err(r) == "invalid_grant"
    assert httpx.post(srv.url + "/api/v1/admin/devices/dev_nope/revoke",
                      headers=admin(srv)).status_code == 404


def test_tenant_isolation(make_server: Any) -> None:
    srv = make_server("oauth.poll_interval_s=1")
    dc = start(srv, tenant="ta")
    # B's operator neither sees nor approves A's device
    r = httpx.get(srv.url + "/api/v1/admin/devices", headers=admin(srv, "tb"))
    assert r.json()["devices"] == []
    assert approve(srv, dc["user_code"], tenant="tb").status_code == 404
    t0 = time.monotonic()
    assert approve(srv, dc["user_code"], tenant="ta").status_code == 200
    wait_interval(dc, t0)
    # A's device code named as B's is unknown
    forged = dict(dc, device_code=dc["device_code"].replace("dc1.ta.", "dc1.tb.", 1))
    assert err(poll(srv, forged)) == "invalid_grant"
    r = poll(srv, dc)
    assert r.status_code == 200, r.text
    tok = r.json()
    assert claims(tok["access_token"])["tenant"] == "ta"
    # A's refresh token named as B's never refreshes into B
    forged_rt = tok["refresh_token"].replace("rt1.ta.", "rt1.tb.", 1)
    assert err(refresh(srv, forged_rt)) == "invalid_grant"
    r = refresh(srv, tok["refresh_token"])
    assert r.status_code == 200 and claims(r.json()["access_token"])["tenant"] == "ta"
    # B's operator cannot revoke A's device
    r = httpx.post(srv.url + f"/api/v1/admin/devices/{tok['device_id']}/revoke",
                   headers=admin(srv, "tb"))
    assert r.status_code == 404


def cli(srv: Roostd, *args: str, tenant: str = "default") -> "subprocess.CompletedProcess[str]":
    import subprocess
    env = {"PATH": "/usr/bin:/bin", "ROOST_TOKEN": srv.token("tenant:admin", tenant=tenant)}
    return subprocess.run([roost_cli_bin(), *args, "--server", srv.url], env=env,
                          capture_output=True, text=True, timeout=30 * SLOW)


def test_cli_admin_devices(make_server: Any) -> None:
    srv = make_server("oauth.poll_interval_s=1")
    dc = start(srv)
    r = cli(srv, "admin", "devices", "list", "--user-code", dc["user_code"], "-o", "json")
    assert r.returncode == 0, r.stderr
    (d,) = json.loads(r.stdout)["devices"]
    assert d["agent_id"] == "laptop" and d["status"] == "pending"
    t0 = time.monotonic()
    r = cli(srv, "admin", "devices", "approve", dc["user_code"], "--scope", "agent:laptop:read")
    assert r.returncode == 0, r.stderr
    assert "agent laptop" in r.stderr and "agent:laptop:read" in r.stderr and "127.0.0.1" in r.stderr
    assert json.loads(r.stdout)["status"] == "approved"
    wait_interval(dc, t0)
    tok = poll(srv, dc).json()
    assert tok["scope"] == "agent:laptop:read"
    dc2 = start(srv, "desk")
    r = cli(srv, "admin", "devices", "deny", dc2["user_code"].lower())
    assert r.returncode == 0, r.stderr
    assert err(poll(srv, dc2, "desk")) == "access_denied"
    r = cli(srv, "admin", "devices", "revoke", tok["device_id"])
    assert r.returncode == 0 and json.loads(r.stdout)["status"] == "revoked"
    assert err(refresh(srv, tok["refresh_token"])) == "invalid_grant"
    r = cli(srv, "admin", "devices", "approve", "BCDF-GHJK")
    assert r.returncode != 0 and "device_not_found" in r.stderr
    # another tenant's operator sees none of them
    r = cli(srv, "admin", "devices", "list", "-o", "json", tenant="other")
    assert r.returncode == 0 and json.loads(r.stdout)["devices"] == []


def test_roost_login_in_a_terminal(make_server: Any, tmp_dir: str) -> None:
    """`roost login` in a pseudo-terminal, the operator approves with the CLI; then commands
    run without a token use the device, rotating its refresh token; the credential file is
    0600; a replayed copy of the refresh token revokes the family and the CLI says why."""
    import os
    import pty
    import re
    import stat
    import subprocess
    srv = make_server("oauth.poll_interval_s=1", "oauth.access_token_ttl_s=60",
                      "oauth.refresh_reuse_interval_s=0")
    creds = os.path.join(tmp_dir, "creds")
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp_dir, "ROOST_CREDENTIALS_DIR": creds}
    master, slave = pty.openpty()
    p = subprocess.Popen([roost_cli_bin(), "login", "--server", srv.url, "--agent", "laptop"],
                         stdin=slave, stdout=slave, stderr=slave, env=env)
    os.close(slave)
    out = b""
    try:
        def code() -> Optional[str]:
            nonlocal out
            out += os.read(master, 4096)
            m = re.search(rb"approve ([A-Z]{4}-[A-Z]{4})", out)
            return m.group(1).decode() if m else None
        user_code = wait_until(code, 20, "the user code on the terminal")
        r = cli(srv, "admin", "devices", "approve", user_code)
        assert r.returncode == 0, r.stderr
        assert p.wait(timeout=30 * SLOW) == 0
        try:
            while True:
                chunk = os.read(master, 4096)
                if not chunk:
                    break
                out += chunk
        except OSError:
            pass
    finally:
        if p.poll() is None:
            p.kill()
        os.close(master)
    assert b"approved for agent laptop" in out, out
    (name,) = os.listdir(creds)
    path = os.path.join(creds, name)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(creds).st_mode) == 0o700
    rec1 = json.load(open(path))
    assert rec1["refresh_token"].startswith("rt1.default.") and "access_token" not in rec1
    assert rec1["refresh_token"].encode() not in out  # never on the terminal
    # a command without any token option uses the device (and rotates its refresh token)
    r = subprocess.run([roost_cli_bin(), "inbox", "read", "--agent", "laptop", "-o", "json"],
                       env=env, capture_output=True, text=True, timeout=30 * SLOW)
    assert r.returncode == 0, r.stderr
    rec2 = json.load(open(path))
    assert rec2["refresh_token"] != rec1["refresh_token"]
    assert rec1["refresh_token"] not in r.stdout + r.stderr
    # a thief replays the copy taken before: the family is revoked, the CLI says why
    assert err(refresh(srv, rec1["refresh_token"])) == "invalid_grant"
    r = subprocess.run([roost_cli_bin(), "inbox", "read", "--agent", "laptop"], env=env,
                       capture_output=True, text=True, timeout=30 * SLOW)
    assert r.returncode != 0
    assert "refused" in r.stderr and "revoked" in r.stderr, r.stderr


def secrets_probe(out_dir: str) -> str:
    """The --exec handler that saves what each run sees: its environment (``<id>.env``) and every
    process of the machine with its parent (``<id>.ps``: pid, ppid, command line)."""
    return (f"cat /proc/self/environ > {out_dir}/$ROOST_EVENT_ID.env; "
            f"ps -e -ww -o pid=,ppid=,args= > {out_dir}/$ROOST_EVENT_ID.ps")


def assert_secrets_hidden(out_dir: str, ids: List[str], agent_pid: int, secrets: List[str]) -> None:
    """Neither the environment nor the command lines of the agent's process tree that each
    secrets_probe run saved hold one of the secrets, a refresh token or a JWT. Only the agent's own
    tree counts: other tests running beside this one may pass tokens on their command lines."""
    for i in ids:
        environ = open(f"{out_dir}/{i}.env", "rb").read()
        procs = {}
        for ln in open(f"{out_dir}/{i}.ps", "rb").read().splitlines():
            parts = ln.split(None, 2)
            if len(parts) >= 2 and parts[0].isdigit() and parts[1].isdigit():
                procs[int(parts[0])] = (int(parts[1]), ln)
        tree = {agent_pid}
        grew = True
        while grew:
            grew = False
            for pid, (ppid, _) in procs.items():
                if ppid in tree and pid not in tree:
                    tree.add(pid)
                    grew = True
        ours = b"\n".join(procs[p][1] for p in sorted(tree) if p in procs)
        assert agent_pid in procs and len(tree) > 1, "the agent and its handler are in ps"
        for blob in (environ, ours):
            for s in secrets:
                assert s.encode() not in blob
            assert b"rt1." not in blob and b"eyJ" not in blob


def test_agent_run_with_a_device(make_server: Any, tmp_dir: str) -> None:
    """`roost agent run` with a logged-in device and 2 s access tokens: every event is handled
    across many refreshes; no secret reaches the --exec child's environment, the agent's output
    or the server's log; a revoked device stops the agent with the reason."""
    import os
    import subprocess
    srv = make_server("oauth.poll_interval_s=1", "oauth.access_token_ttl_s=2")
    creds = os.path.join(tmp_dir, "creds")
    out_dir = os.path.join(tmp_dir, "out")
    os.mkdir(out_dir)
    tok = enrol(srv)
    os.makedirs(creds, mode=0o700)
    rec = {"server": srv.url, "tenant": tok["tenant"], "agent_id": "laptop",
           "device_id": tok["device_id"], "refresh_token": tok["refresh_token"]}
    path = os.path.join(creds, "device-laptop.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, json.dumps(rec).encode())
    os.close(fd)
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp_dir, "ROOST_CREDENTIALS_DIR": creds}
    agent = subprocess.Popen(
        [roost_cli_bin(), "agent", "run", "--agent", "laptop", "--state-dir",
         os.path.join(tmp_dir, "state"), "--exec",
         secrets_probe(out_dir)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        pub = {"Authorization": "Bearer " + srv.token("agent:laptop:publish", tenant="default")}
        ids = []
        end = time.monotonic() + 8  # four access-token lifetimes
        while time.monotonic() < end:
            r = httpx.post(srv.url + "/api/v1/events", headers=pub,
                           json={"recipients": ["laptop"], "payload": {"n": len(ids)}})
            assert r.status_code == 201, r.text
            ids.append(r.json()["event_id"] if "event_id" in r.json() else r.json()["events"][0]["event_id"])
            time.sleep(0.5)
        wait_until(lambda: all(os.path.exists(f"{out_dir}/{i}.env") for i in ids), 30,
                   "every event handled")
        secrets_seen = [json.load(open(path))["refresh_token"], tok["refresh_token"]]
        assert_secrets_hidden(out_dir, ids, agent.pid, secrets_seen)
        d = httpx.get(srv.url + "/api/v1/admin/devices", headers=admin(srv)).json()["devices"][0]
        assert d["refreshes"] >= 4, d
        # the operator revokes the device: the agent stops and says why
        httpx.post(srv.url + f"/api/v1/admin/devices/{tok['device_id']}/revoke", headers=admin(srv))
        code = agent.wait(timeout=30 * SLOW)
        output = agent.stdout.read() if agent.stdout else ""
        assert code != 0
        assert "revoked" in output, output
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()
    log = open(os.path.join(srv.dir, "roostd.log")).read()
    for s in secrets_seen:
        assert s not in log and s not in output


class AnswerDropper:
    """A TCP proxy that forwards one request to roostd, reads its whole answer (so the exchange
    has committed: roostd answers after its commit) and keeps it, then cuts the client's
    connection with a reset instead of passing the answer on: the answer lost in the network."""

    def __init__(self, upstream: str) -> None:
        import socket
        import threading
        host, port = upstream.split("://", 1)[1].rsplit(":", 1)
        self.upstream = (host, int(port))
        self.lsock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(4)
        self.url = "http://127.0.0.1:%d" % self.lsock.getsockname()[1]
        self.answers: list = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        import socket
        import struct
        try:
            client, _ = self.lsock.accept()
        except OSError:
            return
        with client, socket.create_connection(self.upstream) as up:
            data = b""
            while b"\r\n\r\n" not in data:  # the request: headers, then Content-Length bytes
                data += client.recv(65536)
            head, body = data.split(b"\r\n\r\n", 1)
            length = next(int(ln.split(b":", 1)[1]) for ln in head.split(b"\r\n")
                          if ln.lower().startswith(b"content-length:"))
            while len(body) < length:
                body += client.recv(65536)
            up.sendall(head + b"\r\n\r\n" + body)
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += up.recv(65536)
            ahead, abody = answer.split(b"\r\n\r\n", 1)
            alen = next(int(ln.split(b":", 1)[1]) for ln in ahead.split(b"\r\n")
                        if ln.lower().startswith(b"content-length:"))
            while len(abody) < alen:
                abody += up.recv(65536)
            self.answers.append((ahead, abody))
            client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))

    def close(self) -> None:
        self.lsock.close()
        self.thread.join(timeout=10)


def test_lost_refresh_answer_is_retried_not_revoked(make_server: Any) -> None:
    """The answer of a committed refresh is cut on its way back: the agent's retry with the same
    refresh token gets a fresh pair and the family lives on; the lost pair is dead (its refresh
    token, presented later, revokes the family); a replay of the old token after
    oauth.refresh_reuse_interval_s revokes the family."""
    srv = make_server("oauth.poll_interval_s=1", "signatures.require=all",
                      "oauth.refresh_reuse_interval_s=4")
    t1 = enrol(srv)
    for attempt in range(2):  # two losses in a row are still retries
        proxy = AnswerDropper(srv.url)
        with pytest.raises(httpx.TransportError):
            httpx.post(proxy.url + "/oauth/token",
                       data={"grant_type": "refresh_token", "refresh_token": t1["refresh_token"]})
        proxy.close()
        ((head, body),) = proxy.answers
        assert head.startswith(b"HTTP/1.1 200"), head  # the rotation had committed
        lost = json.loads(body)
    r = refresh(srv, t1["refresh_token"], client_id="laptop")
    assert r.status_code == 200, r.text
    t2 = r.json()
    assert t2["refresh_token"] not in (t1["refresh_token"], lost["refresh_token"])
    assert t2["signing_key"]["key_id"] != lost["signing_key"]["key_id"]
    k2 = SigningKey.hmac(t2["signing_key"]["secret"], t2["signing_key"]["key_id"])
    assert signed_get(srv, t2, k2) == 200
    # the lost key never verifies (it signed nothing the agent sent)
    k_lost = SigningKey.hmac(lost["signing_key"]["secret"], lost["signing_key"]["key_id"])
    assert signed_get(srv, t2, k_lost) == 401
    # the family lives on: the new refresh token refreshes
    r = refresh(srv, t2["refresh_token"])
    assert r.status_code == 200, r.text
    t3 = r.json()
    # once a successor was used, the old token is a replay even within the interval
    t_other = enrol(srv, "desk")
    r = refresh(srv, t_other["refresh_token"])
    assert r.status_code == 200, r.text
    assert refresh(srv, r.json()["refresh_token"]).status_code == 200
    r = refresh(srv, t_other["refresh_token"])
    assert err(r) == "invalid_grant" and "reuse" in r.json()["error_description"]
    # after the interval, the old token replayed from elsewhere revokes the family
    r = refresh(srv, t3["refresh_token"])  # the agent refreshes with t3, then t3 is stolen
    assert r.status_code == 200, r.text
    t4 = r.json()
    end = time.monotonic() + 4.5
    wait_until(lambda: time.monotonic() > end, 10, "the reuse interval's end")
    r = refresh(srv, t3["refresh_token"])
    assert err(r) == "invalid_grant" and "reuse" in r.json()["error_description"]
    assert err(refresh(srv, t4["refresh_token"])) == "invalid_grant"
    d = [d for d in httpx.get(srv.url + "/api/v1/admin/devices", headers=admin(srv),
                              params={"agent_id": "laptop"}).json()["devices"]][0]
    assert d["status"] == "revoked" and d["revoked_reason"] == "refresh token reused"


def test_lost_answer_token_revokes(make_server: Any) -> None:
    """The pair whose answer was lost, presented after the retry (someone read the lost answer),
    revokes the family; a lost device-code answer is retried like a refresh."""
    srv = make_server("oauth.poll_interval_s=1", "oauth.refresh_reuse_interval_s=30")
    dc = start(srv)
    t0 = time.monotonic()
    assert approve(srv, dc["user_code"]).status_code == 200
    wait_interval(dc, t0)
    proxy = AnswerDropper(srv.url)
    with pytest.raises(httpx.TransportError):
        httpx.post(proxy.url + "/oauth/token", data={
            "grant_type": DEVICE_GRANT, "device_code": dc["device_code"], "client_id": "laptop"})
    proxy.close()
    ((head, body),) = proxy.answers
    assert head.startswith(b"HTTP/1.1 200"), head
    lost = json.loads(body)
    r = poll(srv, dc)
    assert r.status_code == 200, r.text
    t1 = r.json()
    assert t1["refresh_token"] != lost["refresh_token"]
    r = refresh(srv, t1["refresh_token"])
    assert r.status_code == 200, r.text
    t2 = r.json()
    assert err(poll(srv, dc)) == "invalid_grant"  # the device code is spent for good now
    r = refresh(srv, lost["refresh_token"])
    assert err(r) == "invalid_grant" and "reuse" in r.json()["error_description"]
    assert err(refresh(srv, t2["refresh_token"])) == "invalid_grant"


def test_device_authorization_rate_limit(make_server: Any) -> None:
    """/oauth/device_authorization needs no token: one address starts so many a minute."""
    srv = make_server("oauth.device_authorizations_per_min=3")
    for _ in range(3):
        start(srv)
    # the burst (3), then at most the one the bucket lends (roostd's limiter goes into debt once)
    codes = [httpx.post(srv.url + "/oauth/device_authorization",
                        data={"client_id": "laptop"}).status_code for _ in range(2)]
    assert codes[-1] == 429 and codes.count(200) <= 1, codes
    r = httpx.post(srv.url + "/oauth/device_authorization", data={"client_id": "laptop"})
    assert r.status_code == 429 and r.json()["error"] == "slow_down", r.text
    assert 1 <= int(r.headers["retry-after"]) <= 60
    # the rest of the server is not affected
    assert httpx.get(srv.url + "/.well-known/oauth-authorization-server").status_code == 200


def test_concurrent_commands_share_one_device(make_server: Any, tmp_dir: str) -> None:
    """Six commands of one logged-in device start at once, each refreshing: they take turns
    (device-<agent>.lock) and each presents the token the previous one saved, so none is a
    replay (the reuse interval is 0 here: any second use would revoke the device)."""
    import os
    import subprocess
    srv = make_server("oauth.poll_interval_s=1", "oauth.refresh_reuse_interval_s=0")
    tok = enrol(srv)
    creds = os.path.join(tmp_dir, "creds")
    os.makedirs(creds, mode=0o700)
    fd = os.open(os.path.join(creds, "device-laptop.json"), os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, json.dumps({"server": srv.url, "tenant": "default", "agent_id": "laptop",
                             "device_id": tok["device_id"],
                             "refresh_token": tok["refresh_token"]}).encode())
    os.close(fd)
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp_dir, "ROOST_CREDENTIALS_DIR": creds}
    procs = [subprocess.Popen([roost_cli_bin(), "inbox", "read", "--agent", "laptop"], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
             for _ in range(6)]
    errs = [p.communicate(timeout=60 * SLOW)[1] for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, errs
    d = httpx.get(srv.url + "/api/v1/admin/devices", headers=admin(srv)).json()["devices"][0]
    assert d["status"] == "approved" and d["refreshes"] == 7, d  # the login, then one each
