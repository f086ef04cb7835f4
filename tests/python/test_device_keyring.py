# SPDX-License-Identifier: MIT
"""Device login secrets in the OS keyring: a real Secret Service (gnome-keyring-daemon, unlocked,
on a private session bus from dbus-run-session) receives the record of `roost login`; the
credentials directory keeps no secret; commands and `roost agent run` read the keyring and
write each rotated refresh token back; no secret reaches the --exec child's environment, ps, the
agent's output or roostd's log. Without a session bus, the 0600 file is used and `roost login`
says so. A login that signs with Ed25519 keys of its own keeps each private key in the keyring
only, and the CLI and the Python SDK register a new one at every refresh."""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import time
from typing import Any, Dict, Iterator, List, Optional

import httpx
import pytest

from harness import SLOW, Roostd, roost_cli_bin, wait_until

from test_device_login import admin, assert_secrets_hidden, cli, enrol, secrets_probe, signed_get

TOOLS = ("dbus-run-session", "gnome-keyring-daemon", "secret-tool")


def have_tools() -> bool:
    import shutil
    return all(shutil.which(t) for t in TOOLS)


@pytest.fixture
def session_bus(tmp_dir: str) -> Iterator[Dict[str, str]]:
    """A private session bus with an unlocked gnome-keyring (its files under tmp_dir): the env
    that reaches it."""
    if not have_tools():
        pytest.skip("needs " + ", ".join(TOOLS) + " (scripts/deps.sh)")
    addr_file = os.path.join(tmp_dir, "bus")
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp_dir,
           "XDG_DATA_HOME": os.path.join(tmp_dir, "data"),
           "XDG_RUNTIME_DIR": os.path.join(tmp_dir, "run")}
    os.makedirs(env["XDG_RUNTIME_DIR"], mode=0o700)
    script = ("printf pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null && "
              f'echo "$DBUS_SESSION_BUS_ADDRESS" > {addr_file}.tmp && mv {addr_file}.tmp {addr_file} '
              "&& exec sleep 100000")
    p = subprocess.Popen(["dbus-run-session", "--", "sh", "-c", script], env=env,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        wait_until(lambda: os.path.exists(addr_file) or p.poll() is not None, 30,
                   "the session bus and the keyring")
        assert p.poll() is None, "dbus-run-session ended"
        env["DBUS_SESSION_BUS_ADDRESS"] = open(addr_file).read().strip()
        yield env
    finally:
        os.killpg(p.pid, signal.SIGTERM)
        p.wait(timeout=30)


def login(srv: Roostd, env: Dict[str, str], *extra: str) -> str:
    """`roost login` (with the options in extra) approved through the CLI; returns its stderr."""
    p = subprocess.Popen([roost_cli_bin(), "login", "--server", srv.url, "--agent", "laptop",
                          *extra],
                         env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert p.stderr is not None
    out = ""
    code: Optional[str] = None
    while code is None:
        line = p.stderr.readline()
        assert line, "roost login ended before printing the code: " + out
        out += line
        m = re.search(r"approve ([A-Z]{4}-[A-Z]{4})", line)
        code = m.group(1) if m else None
    r = cli(srv, "admin", "devices", "approve", code)
    assert r.returncode == 0, r.stderr
    rest = p.communicate(timeout=30 * SLOW)[1]
    assert p.returncode == 0, out + rest
    return out + rest


def keyring_record(env: Dict[str, str], creds: str) -> Dict[str, Any]:
    r = subprocess.run(["secret-tool", "lookup", "agent", "laptop", "dir", creds], env=env,
                       capture_output=True, text=True, timeout=30 * SLOW)
    assert r.returncode == 0, r.stderr
    return dict(json.loads(r.stdout))


def files_holding(root: str, needle: bytes) -> List[str]:
    found = []
    for d, _, names in os.walk(root):
        for n in names:
            path = os.path.join(d, n)
            try:
                if needle in open(path, "rb").read():
                    found.append(path)
            except OSError:
                pass
    return found


def test_secrets_in_the_keyring(make_server: Any, tmp_dir: str,
                                session_bus: Dict[str, str]) -> None:
    srv = make_server("oauth.poll_interval_s=1", "oauth.access_token_ttl_s=2")
    creds = os.path.join(tmp_dir, "creds")
    env = {**session_bus, "ROOST_CREDENTIALS_DIR": creds}
    said = login(srv, env)
    assert "saved in the OS keyring (Secret Service)" in said, said
    rec1 = keyring_record(env, creds)
    assert rec1["refresh_token"].startswith("rt1.default.") and rec1["agent_id"] == "laptop"
    assert rec1["signing_key"]["secret"]
    # the directory names the store and holds no secret; nothing on disk does
    path = os.path.join(creds, "device-laptop.json")
    stub = json.load(open(path))
    assert stub["store"] == "secret-service" and "refresh_token" not in stub
    assert "signing_key" not in stub
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    for secret in (rec1["refresh_token"], rec1["signing_key"]["secret"]):
        assert files_holding(tmp_dir, secret.encode()) == []
    assert files_holding(tmp_dir, b"rt1.") == []
    # a command reads the keyring, refreshes, and writes the new refresh token back
    r = subprocess.run([roost_cli_bin(), "inbox", "read", "--agent", "laptop", "-o", "json"],
                       env=env, capture_output=True, text=True, timeout=30 * SLOW)
    assert r.returncode == 0, r.stderr
    rec2 = keyring_record(env, creds)
    assert rec2["refresh_token"] != rec1["refresh_token"]
    # the agent runs from the keyring across refreshes; its children see no secret
    out_dir = os.path.join(tmp_dir, "out")
    os.mkdir(out_dir)
    agent = subprocess.Popen(
        [roost_cli_bin(), "agent", "run", "--agent", "laptop", "--state-dir",
         os.path.join(tmp_dir, "state"), "--exec",
         secrets_probe(out_dir)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    output = ""
    try:
        pub = {"Authorization": "Bearer " + srv.token("agent:laptop:publish", tenant="default")}
        ids = []
        end = time.monotonic() + 6  # three access-token lifetimes
        while time.monotonic() < end:
            r2 = httpx.post(srv.url + "/api/v1/events", headers=pub,
                            json={"recipients": ["laptop"], "payload": {"n": len(ids)}})
            assert r2.status_code == 201, r2.text
            ids.append(r2.json()["events"][0]["event_id"])
            time.sleep(0.5)
        wait_until(lambda: all(os.path.exists(f"{out_dir}/{i}.ps") for i in ids), 30,
                   "every event handled")
        rec3 = keyring_record(env, creds)
        assert rec3["refresh_token"] != rec2["refresh_token"]
        secrets = [rec["refresh_token"] for rec in (rec1, rec2, rec3)] + \
            [rec["signing_key"]["secret"] for rec in (rec1, rec2, rec3)]
        assert_secrets_hidden(out_dir, ids, agent.pid, secrets)
    finally:
        agent.send_signal(signal.SIGTERM)
        try:
            output = agent.communicate(timeout=30 * SLOW)[0]
        except subprocess.TimeoutExpired:
            agent.kill()
            output = agent.communicate()[0]
    log = open(os.path.join(srv.dir, "roostd.log")).read()
    for s in secrets:
        assert s not in log and s not in output and s not in said
    # still nothing on disk (but the ps listings of the whole machine, checked above)
    assert [f for f in files_holding(tmp_dir, b"rt1.") if not f.startswith(out_dir)] == []


def test_no_bus_falls_back_to_the_file(make_server: Any, tmp_dir: str) -> None:
    srv = make_server("oauth.poll_interval_s=1")
    creds = os.path.join(tmp_dir, "creds")
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp_dir, "ROOST_CREDENTIALS_DIR": creds}
    said = login(srv, env)
    path = os.path.join(creds, "device-laptop.json")
    assert f"saved in {path}, mode 0600 (not in the OS keyring: no session bus)" in said, said
    rec = json.load(open(path))
    assert rec["refresh_token"].startswith("rt1.") and "store" not in rec
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    r = subprocess.run([roost_cli_bin(), "inbox", "read", "--agent", "laptop"], env=env,
                       capture_output=True, text=True, timeout=30 * SLOW)
    assert r.returncode == 0, r.stderr
    assert json.load(open(path))["refresh_token"] != rec["refresh_token"]


def write_record(creds: str, srv: Roostd, tok: Dict[str, Any], alg: str = "hmac-sha256") -> str:
    """The record roost login writes, with the device's first tokens; alg ed25519 is a login
    that signs with keys of its own (its first key is not needed: the first refresh makes one)."""
    os.makedirs(creds, mode=0o700, exist_ok=True)
    rec = {"server": srv.url, "tenant": tok["tenant"], "agent_id": "laptop",
           "device_id": tok["device_id"], "refresh_token": tok["refresh_token"],
           "signing_key": {"key_id": tok["signing_key"]["key_id"], "alg": alg}}
    path = os.path.join(creds, "device-laptop.json")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    os.write(fd, json.dumps(rec).encode())
    os.close(fd)
    return path


def use_for(client: Any, seconds: float) -> int:
    """Reads the inbox over `seconds` (several access-token lifetimes); the number of calls."""
    n = 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        client.inbox("laptop")
        n += 1
        time.sleep(0.2)
    return n


@pytest.mark.parametrize("alg", ["hmac-sha256", "ed25519"])
def test_python_sdk_reads_the_file_store(make_server: Any, tmp_dir: str, alg: str) -> None:
    """roost.DeviceLogin over the CLI's 0600 file, under signatures.require = all with 2 s access
    tokens and 4 s keys: it refreshes, signs with each new key (issued by roostd, or made here
    for a login that signs with Ed25519 keys of its own), writes the rotated refresh token and
    key back in the CLI's format (the CLI carries on from it), and a revoked device raises."""
    import roost
    srv = make_server("oauth.poll_interval_s=1", "oauth.access_token_ttl_s=2",
                      "oauth.signing_key_ttl_s=4", "signatures.require=all")
    tok = enrol(srv)
    creds = os.path.join(tmp_dir, "creds")
    path = write_record(creds, srv, tok, alg)
    device = roost.DeviceLogin(dir=creds)  # the only agent logged in there
    assert device.agent == "laptop" and device.server == srv.url and device.store == "file"
    assert device.own_keys == (alg == "ed25519")
    with roost.Client(device.server, token=device, signing_key=device.signing_key) as c:
        assert use_for(c, 6) > 5  # three access-token lifetimes, every call signed and accepted
        key = device.signing_key()
        assert key is not None and key.alg == alg
    rec = json.load(open(path))
    assert rec["refresh_token"] != tok["refresh_token"]
    assert rec["signing_key"]["alg"] == alg and rec["signing_key"]["key_id"] == key.key_id
    assert ("private_key" in rec["signing_key"]) == (alg == "ed25519")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    d = httpx.get(srv.url + "/api/v1/admin/devices", headers=admin(srv)).json()["devices"][0]
    assert d["refreshes"] >= 3, d
    env = {"PATH": "/usr/bin:/bin", "HOME": tmp_dir, "ROOST_CREDENTIALS_DIR": creds}
    r = subprocess.run([roost_cli_bin(), "inbox", "read", "--agent", "laptop"], env=env,
                       capture_output=True, text=True, timeout=30 * SLOW)
    assert r.returncode == 0, r.stderr
    assert json.load(open(path))["signing_key"]["alg"] == alg  # the CLI kept the login's kind
    # the CLI rotated it on: a new DeviceLogin reads the CLI's record; revoked, it raises why
    device2 = roost.DeviceLogin("laptop", dir=creds)
    assert device2.get()
    httpx.post(srv.url + f"/api/v1/admin/devices/{tok['device_id']}/revoke", headers=admin(srv))
    end = time.monotonic() + 3  # past the access token's life: the next get() refreshes
    wait_until(lambda: time.monotonic() > end, 10, "the access token's end")
    with pytest.raises(roost.Unauthorized, match="revoked"):
        device2.get()
    with pytest.raises(roost.Unauthorized, match="revoked"):
        device2.get()  # remembered: no second refresh


def test_python_sdk_reads_the_keyring(make_server: Any, tmp_dir: str,
                                      session_bus: Dict[str, str],
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """roost.DeviceLogin over a record `roost login` put in the keyring: read through
    secretstorage, refreshed, written back to the keyring (never to disk), and the CLI carries on
    from what Python wrote."""
    pytest.importorskip("secretstorage")
    import roost
    srv = make_server("oauth.poll_interval_s=1", "oauth.access_token_ttl_s=2")
    creds = os.path.join(tmp_dir, "creds")
    env = {**session_bus, "ROOST_CREDENTIALS_DIR": creds}
    assert "saved in the OS keyring" in login(srv, env)
    rec1 = keyring_record(env, creds)
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", session_bus["DBUS_SESSION_BUS_ADDRESS"])
    device = roost.DeviceLogin("laptop", dir=creds)
    assert device.store == "secret-service"
    with roost.Client(device.server, token=device, signing_key=device.signing_key) as c:
        assert use_for(c, 4) > 3
    rec2 = keyring_record(env, creds)
    assert rec2["refresh_token"] != rec1["refresh_token"]
    assert files_holding(tmp_dir, b"rt1.") == []
    r = subprocess.run([roost_cli_bin(), "inbox", "read", "--agent", "laptop"], env=env,
                       capture_output=True, text=True, timeout=30 * SLOW)
    assert r.returncode == 0, r.stderr
    assert keyring_record(env, creds)["refresh_token"] != rec2["refresh_token"]


def test_own_ed25519_keys_in_the_keyring(make_server: Any, tmp_dir: str,
                                         session_bus: Dict[str, str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`roost login` with $ROOST_LOGIN_SIGNING_KEY=ed25519 under signatures.require = all (2 s
    tokens, 4 s keys): the private key lands in the keyring and nowhere on disk, and it is the
    key roostd registered; a command's refresh replaces it with a new pair (the previous key
    still verifying through the overlap); roost.DeviceLogin signs with each Ed25519 key it makes
    and writes it back to the keyring; the CLI carries on from that."""
    pytest.importorskip("secretstorage")
    import roost
    from cryptography.hazmat.primitives.asymmetric import ed25519
    from roost._signing import SigningKey
    srv = make_server("oauth.poll_interval_s=1", "oauth.access_token_ttl_s=2",
                      "oauth.signing_key_ttl_s=4", "signatures.require=all")
    creds = os.path.join(tmp_dir, "creds")
    env = {**session_bus, "ROOST_CREDENTIALS_DIR": creds, "ROOST_LOGIN_SIGNING_KEY": "ed25519"}
    said = login(srv, env)
    assert "saved in the OS keyring (Secret Service)" in said, said
    assert "it signs with Ed25519 keys of its own" in said, said
    k1 = keyring_record(env, creds)["signing_key"]
    assert k1["alg"] == "ed25519" and "secret" not in k1
    assert k1["private_key"].startswith("-----BEGIN PRIVATE KEY-----")
    stub = json.load(open(os.path.join(creds, "device-laptop.json")))
    assert stub["store"] == "secret-service" and "signing_key" not in stub
    assert files_holding(tmp_dir, b"PRIVATE KEY") == []
    assert k1["private_key"] not in said

    tok = {"access_token": srv.token("agent:laptop:consume", tenant="default")}

    def key(k: Dict[str, Any]) -> SigningKey:
        return SigningKey.from_pem(k["private_key"], k["key_id"])

    # the stored key is the one roostd registered: what it signs is accepted, another key's
    # signature under the same key id is not
    assert signed_get(srv, tok, key(k1)) == 200
    impostor = SigningKey(k1["key_id"], "ed25519", private_key=ed25519.Ed25519PrivateKey.generate())
    assert signed_get(srv, tok, impostor) == 401
    # a command refreshes: a new pair, registered in the same call and stored in the keyring;
    # the login's key still verifies (roostd's overlap), so nothing in flight fails
    r = subprocess.run([roost_cli_bin(), "inbox", "read", "--agent", "laptop", "-o", "json"],
                       env=env, capture_output=True, text=True, timeout=30 * SLOW)
    assert r.returncode == 0, r.stderr
    k2 = keyring_record(env, creds)["signing_key"]
    assert k2["alg"] == "ed25519" and k2["key_id"] != k1["key_id"]
    assert k2["private_key"] != k1["private_key"]
    assert signed_get(srv, tok, key(k2)) == 200 and signed_get(srv, tok, key(k1)) == 200
    # the Python SDK over the same keyring record: a new Ed25519 key at each refresh, every
    # call signed with the current one and accepted
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", session_bus["DBUS_SESSION_BUS_ADDRESS"])
    device = roost.DeviceLogin("laptop", dir=creds)
    assert device.store == "secret-service" and device.own_keys
    seen = set()
    deadline = time.monotonic() + 60 * SLOW
    with roost.Client(device.server, token=device, signing_key=device.signing_key) as c:
        while len(seen) < 4:  # three rotations after its first refresh
            assert time.monotonic() < deadline, seen
            c.inbox("laptop")
            k = device.signing_key()
            assert k is not None and k.alg == "ed25519"
            seen.add(k.key_id)
            time.sleep(0.2)
    assert k1["key_id"] not in seen and k2["key_id"] not in seen
    k3 = keyring_record(env, creds)["signing_key"]
    assert k3["alg"] == "ed25519" and k3["key_id"] in seen
    assert signed_get(srv, tok, key(k3)) == 200  # what Python stored is what it registered
    assert files_holding(tmp_dir, b"PRIVATE KEY") == [] and files_holding(tmp_dir, b"rt1.") == []
    # the CLI carries on from what Python wrote, still with keys of its own
    r = subprocess.run([roost_cli_bin(), "inbox", "read", "--agent", "laptop"], env=env,
                       capture_output=True, text=True, timeout=30 * SLOW)
    assert r.returncode == 0, r.stderr
    k4 = keyring_record(env, creds)["signing_key"]
    assert k4["alg"] == "ed25519" and k4["key_id"] not in seen | {k1["key_id"], k2["key_id"]}
    # the only refusal was the impostor's
    log = open(os.path.join(srv.dir, "roostd.log")).read()
    refused = [ln for ln in log.splitlines() if re.search(r"\bstatus=401\b", ln)]
    assert len(refused) == 1, refused
