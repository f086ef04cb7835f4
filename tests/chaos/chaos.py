#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The chaos runner (doc/RELIABILITY.md): starts a store, roostd nodes, `roost agent run`
workers, producers and cursor followers on loopback, injects faults on a seeded schedule, drains,
dumps the database and hands the run directory to the checker (tests/chaos/check.py), whose exit
status it returns.

  chaos.py --profile sqlite|mysql|postgres|galera --bin-dir build/bin --out DIR
           [--seed N] [--minutes M | --one-pass] [--rate EVENTS_PER_S]

CHAOS_SEED and CHAOS_MINUTES are the defaults of --seed and --minutes. Everything listens on
127.0.0.1; every process started is ended before the runner returns.
"""
import argparse
import ctypes
import http.client
import json
import os
import random
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
TENANT = "chaos"
LEASE_S = 4
MAX_ATTEMPTS = 4
# Agents: a1 is shared by two workers (one identity, two processes, two nodes on MySQL), a2 has
# one worker, a3 none (its events carry a short TTL and must all expire).
WORKERS = [("w1", "a1", 0), ("w2", "a1", 1), ("w3", "a2", 1)]
FAULT_KINDS = {
    "sqlite": ["worker_kill", "node_kill", "node_stop", "agent_cut", "agent_stall",
               "fsync_fail", "clock_jump"],
    # node_kill twice: each pass kills each of the two nodes (faults take nodes in turn).
    "mysql": ["worker_kill", "node_kill", "node_kill", "node_stop", "agent_cut", "agent_stall",
              "db_restart", "db_kill", "db_cut", "db_stall", "db_commit_lost", "clock_jump"],
    # PostgreSQL: MariaDB's faults (db_kill is SIGKILL to the postmaster and every backend under
    # load), and db_idle_outage: the server stopped for DB_OUTAGE_S while the agents sit idle.
    "postgres": ["worker_kill", "node_kill", "node_kill", "node_stop", "agent_cut", "agent_stall",
                 "db_restart", "db_kill", "db_cut", "db_stall", "db_commit_lost", "clock_jump",
                 "db_idle_outage"],
    "galera": ["worker_kill", "node_kill", "node_kill", "agent_stall", "writer_kill",
               "writer_stop", "writer_partition", "standby_kill", "standby_stop"],
}
# Galera starts with three faults of the writer in a row (issue 16's "done when").
FIRST_FAULTS = {"galera": ["writer_kill", "writer_stop", "writer_partition"]}
# db_idle_outage: how long the database stays down (issue 32: 30 s under an idle agent).
DB_OUTAGE_S = 30
FAKETIME_LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"


def log(msg):
    print(f"[chaos {time.strftime('%H:%M:%S')}] {msg}", flush=True)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pid_alive(pid):
    """The process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def become_subreaper():
    """Orphans (a database server whose launching script exited, the commands of a killed agent)
    become our children, and reap_orphans() ends their zombies: a container's pid 1 may never
    reap them, and scripts that check a pid with kill -0 take a zombie for a live process."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def reap_orphans(own_pids):
    """Reaps our zombie children that no Popen owns (their Popen must get their status)."""
    me = os.getpid()
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) in own_pids:
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            if fields[0] == "Z" and int(fields[1]) == me:
                os.waitpid(int(d), os.WNOHANG)
        except (OSError, ChildProcessError, IndexError, ValueError):
            pass


def script(run, args, check=True):
    """Runs a database script (mariadb_test.sh, galera.sh) and returns its stdout, reaping our
    orphans meanwhile: the script waits with kill -0 for servers that die as our children."""
    p = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    out = []
    reader = threading.Thread(target=lambda: out.append(p.stdout.read()), daemon=True)
    reader.start()
    while p.poll() is None:
        reap_orphans(run.popen_pids() | {p.pid})
        time.sleep(0.1)
    reader.join()
    if check and p.returncode != 0:
        raise subprocess.CalledProcessError(p.returncode, args)
    return out[0] if out else ""


def wait_for(cond, timeout_s, what):
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        if cond():
            return
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


class Proxy:
    """One chaos_proxy process (tests/chaos/chaos_proxy.c) driven through its stdin."""

    def __init__(self, bin_dir, target_port, proto, name):
        """proto: "mysql" or "pg" between roostd and a database (the COMMIT cuts), "" for HTTP."""
        args = [os.path.join(bin_dir, "chaos_proxy"), str(target_port)] + ([proto] if proto else [])
        self.name = name
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.p.stdout.readline().split()
        if len(line) != 2 or line[0] != "port":
            raise RuntimeError(f"chaos_proxy {name} did not start")
        self.port = int(line[1])
        self.lock = threading.Lock()

    def cmd(self, c):
        with self.lock:
            self.p.stdin.write(c + "\n")
            self.p.stdin.flush()
            if self.p.stdout.readline().strip() != "ok":
                raise RuntimeError(f"chaos_proxy {self.name}: {c} refused")

    def number(self, c):
        """The answer "ok N" of conns or cuts."""
        with self.lock:
            self.p.stdin.write(c + "\n")
            self.p.stdin.flush()
            return int(self.p.stdout.readline().split()[1])

    def conns(self):
        return self.number("conns")

    def stop(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


class Store:
    """The database: a SQLite file, a private MariaDB (scripts/mariadb_test.sh), a private
    PostgreSQL (scripts/postgres_test.sh, Roost's tables in its default schema "roost") or a
    3-node Galera cluster (scripts/galera.sh). Each roostd node reaches MariaDB or PostgreSQL
    through a proxy of its own."""

    def __init__(self, run):
        self.run = run
        self.kind = run.profile
        self.proto = "pg" if self.kind == "postgres" else "mysql"
        self.db_proxies = []
        if self.kind == "postgres":
            self.dir = run.db_dir
            self.url = urllib.parse.urlsplit(script(run, [run.postgres_sh, "start", self.dir]).strip())
        elif self.kind == "sqlite":
            self.path = os.path.join(run.out, "roost.db")
        elif self.kind == "mysql":
            self.dir = run.mysql_dir
            script(run, [run.mariadb_sh, "start", self.dir])
            self.client(["-e", "DROP DATABASE IF EXISTS roost_chaos; "
                               "CREATE DATABASE roost_chaos CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"])
            url = script(run, [run.mariadb_sh, "url", self.dir]).strip()
            self.url = urllib.parse.urlsplit(url)
        else:
            self.galera = Galera(run)

    def client(self, args):
        sock = os.path.join(self.dir, "mysqld.sock")
        return subprocess.run(["mariadb", "--no-defaults", "--protocol=socket", f"--socket={sock}",
                               "-uroot"] + args, check=True, stdout=subprocess.PIPE, text=True).stdout

    def node_url(self, i):
        if self.kind == "sqlite":
            return "sqlite://" + self.path
        if self.kind == "galera":
            return self.galera.node_url(i)
        while len(self.db_proxies) <= i:
            self.db_proxies.append(Proxy(self.run.bin_dir, self.url.port, self.proto, f"db{i}"))
        u = self.url
        scheme, path = ("postgres", u.path) if self.kind == "postgres" else ("mysql", "/roost_chaos")
        return f"{scheme}://{u.username}:{urllib.parse.quote(urllib.parse.unquote(u.password), safe='')}" \
               f"@127.0.0.1:{self.db_proxies[i].port}{path}"

    def pid(self):
        with open(os.path.join(self.dir, "mysqld.pid")) as f:
            return int(f.read().strip())

    def restart(self, hard, down_s=None):
        """Stops the server (SIGKILL when hard, else a clean shutdown) and starts it again after
        down_s (default 0.5-2 s)."""
        if self.kind == "postgres":
            # The script waits for the postmaster to die; script() reaps it (our orphan).
            script(self.run, [self.run.postgres_sh, "kill" if hard else "pause", self.dir])
            time.sleep(self.run.rng.uniform(0.5, 2.0) if down_s is None else down_s)
            script(self.run, [self.run.postgres_sh, "resume", self.dir])
            return
        if hard:
            pid = self.pid()
            os.kill(pid, signal.SIGKILL)
            wait_for(lambda: not pid_alive(pid), 10, "mariadbd to die")
            wait_for(lambda: reap_orphans(self.run.popen_pids()) or
                     not os.path.exists(f"/proc/{pid}"), 30, "mariadbd to be reaped")
        else:
            script(self.run, [self.run.mariadb_sh, "pause", self.dir])
        time.sleep(self.run.rng.uniform(0.5, 2.0))
        script(self.run, [self.run.mariadb_sh, "resume", self.dir])

    def dump(self):
        """The inbox and agents tables as lists of dicts (read after every roostd stopped)."""
        cols = ["agent_id", "seq", "event_id", "status", "idempotency_key", "attempts", "timeouts",
                "nacks"]
        if self.kind == "sqlite":
            db = sqlite3.connect(f"file:{self.path}?mode=ro", uri=True)
            inbox = [dict(zip(cols, r)) for r in db.execute(
                f"SELECT {','.join(cols)} FROM inbox WHERE tenant_id = ?", (TENANT,))]
            agents = [{"agent_id": r[0], "next_seq": r[1], "state": json.loads(r[2])}
                      for r in db.execute("SELECT agent_id, next_seq, state FROM agents "
                                          "WHERE tenant_id = ?", (TENANT,))]
            db.close()
            return {"inbox": inbox, "agents": agents}

        def query(sql):
            if self.kind == "postgres":
                out = subprocess.run(
                    [self.run.postgres_sh, "psql", self.dir, "-d", self.url.path.lstrip("/"),
                     "-At", "-F", "\t", "-P", "null=NULL", "-c", "SET search_path = roost",
                     "-c", sql], check=True, stdout=subprocess.PIPE, text=True).stdout
                return [line.split("\t") for line in out.splitlines() if line]
            if self.kind == "galera":
                g = self.galera
                return g.sql(g.live_node(), sql, db=g.database)
            out = self.client(["-D", "roost_chaos", "-B", "-N", "-e", sql])
            return [line.split("\t") for line in out.splitlines() if line]
        inbox = []
        for r in query(f"SELECT {','.join(cols)} FROM inbox WHERE tenant_id = '{TENANT}'"):
            row = dict(zip(cols, r))
            for k in ("seq", "status", "attempts", "timeouts", "nacks"):
                row[k] = int(row[k])
            if row["idempotency_key"] == "NULL":
                row["idempotency_key"] = None
            inbox.append(row)
        agents = [{"agent_id": r[0], "next_seq": int(r[1]), "state": json.loads(r[2])}
                  for r in query(f"SELECT agent_id, next_seq, state FROM agents "
                                 f"WHERE tenant_id = '{TENANT}'")]
        return {"inbox": inbox, "agents": agents}

    def stop(self):
        for p in self.db_proxies:
            p.stop()
        if self.kind == "mysql" and not self.run.keep:
            script(self.run, [self.run.mariadb_sh, "stop", self.dir], check=False)
        if self.kind == "postgres" and not self.run.keep:
            script(self.run, [self.run.postgres_sh, "stop", self.dir], check=False)
        if self.kind == "galera":
            self.galera.stop()


class Galera:
    """Three Galera nodes of scripts/galera.sh (start, kill, pause, cont, restart, stop), each
    behind a proxy of its own (the partition fault). Nodes are 0, 1, 2 here, 1, 2, 3 there."""

    def __init__(self, run):
        self.run = run
        self.sh = os.path.join(SRC, "scripts", "galera.sh")
        self.dir = run.mysql_dir
        self.database = "roost_chaos"
        out = self.script("start").strip().splitlines()[-1]
        self.url = urllib.parse.urlsplit(out)
        hosts = self.url.netloc.split("@", 1)[1].split(",")
        self.ports = [int(h.rsplit(":", 1)[1]) for h in hosts]
        self.proxies = [Proxy(run.bin_dir, p, "mysql", f"galera{n}") for n, p in enumerate(self.ports)]
        self.sql(0, f"DROP DATABASE IF EXISTS {self.database}; CREATE DATABASE {self.database} "
                    "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin")

    def script(self, cmd, n=None):
        args = [self.sh, cmd, self.dir] + ([str(n + 1)] if n is not None else [])
        return script(self.run, args)

    def sql(self, n, text, db=None):
        """Runs SQL on node n over TCP with the URL's credentials; the output rows (tab-separated)."""
        user, pw = self.url.netloc.split("@", 1)[0].split(":", 1)
        args = ["mariadb", "--no-defaults", "--protocol=tcp", "-h127.0.0.1", f"-P{self.ports[n]}",
                f"-u{urllib.parse.unquote(user)}", f"-p{urllib.parse.unquote(pw)}", "-B", "-N"]
        if db:
            args.append(f"-D{db}")
        out = subprocess.run(args + ["-e", text], check=True, stdout=subprocess.PIPE,
                             text=True).stdout
        return [line.split("\t") for line in out.splitlines() if line]

    def synced(self, n):
        try:
            rows = self.sql(n, "SHOW STATUS LIKE 'wsrep_local_state_comment'")
            return bool(rows) and rows[0][1] == "Synced"
        except subprocess.CalledProcessError:
            return False

    def writer(self, node_port):
        """The node roostd writes to, as its /readyz names it (a proxy's port), else the node
        whose proxy carries the most connections."""
        try:
            c = http.client.HTTPConnection("127.0.0.1", node_port, timeout=5)
            c.request("GET", "/readyz")
            text = c.getresponse().read().decode(errors="replace")
            c.close()
            for n, px in enumerate(self.proxies):
                if f"writer 127.0.0.1:{px.port}" in text:
                    return n
        except (OSError, http.client.HTTPException):
            pass
        conns = [p.conns() for p in self.proxies]
        return max(range(len(conns)), key=lambda n: conns[n])

    def node_url(self, _i):
        u = self.url
        hosts = ",".join(f"127.0.0.1:{p.port}" for p in self.proxies)
        return f"mysql://{u.netloc.split('@', 1)[0]}@{hosts}/{self.database}"

    def live_node(self):
        return next(n for n in range(len(self.ports)) if self.synced(n))

    def stop(self):
        for p in self.proxies:
            p.stop()
        if not self.run.keep:
            script(self.run, [self.sh, "stop", self.dir], check=False)


class Node:
    """One roostd on a fixed port (restarts keep it, so agents and proxies keep their target)."""

    def __init__(self, run, i):
        self.run, self.i = run, i
        self.port = free_port()
        self.dir = os.path.join(run.out, f"node{i}")
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        self.p = None
        # The clock jumps on node0 of SQLite (the only node) and node1 of MariaDB or PostgreSQL
        # (one node's clock ahead of the other's, for a while: leases it judges expire early).
        self.faketime = (run.profile, i) in (("sqlite", 0), ("mysql", 1), ("postgres", 1))
        self.fiu = run.profile == "sqlite" and i == 0
        self.offset_s = 0
        self.offset_file = os.path.join(run.out, f"node{i}.faketime")
        if self.faketime:
            self.write_offset()

    def write_offset(self):
        with open(self.offset_file + ".tmp", "w") as f:
            f.write(f"+{self.offset_s}s\n")
        os.replace(self.offset_file + ".tmp", self.offset_file)

    def start(self):
        ready = os.path.join(self.dir, "ready")
        if os.path.exists(ready):
            os.unlink(ready)
        args = [os.path.join(self.run.bin_dir, "roostd"), "--listen", f"127.0.0.1:{self.port}",
                "--ready-file", ready, "--data-dir", self.dir,
                "--store", self.run.store.node_url(self.i),
                "--set", f"auth.key_file={self.run.key_file}",
                "--set", f"claim.max_attempts={MAX_ATTEMPTS}",
                "--set", "scavenger.interval_ms=250", "--set", "sse.heartbeat_s=5",
                "--set", "tail.interval_ms=100", "--set", "metrics.refresh_ms=1000"]
        # CHAOS_ROOSTD_SET="k=v k2=v2": more --set options for every node (e.g.
        # store.write_overlap=true, to run the profile with a mode that is off by default).
        for kv in os.environ.get("CHAOS_ROOSTD_SET", "").split():
            args += ["--set", kv]
        env = dict(os.environ)
        if self.faketime:
            # Only the wall clock jumps (leases, TTLs, due times); libevent's timers run on the
            # monotonic clock and stay put.
            env.update(LD_PRELOAD=FAKETIME_LIB, FAKETIME_TIMESTAMP_FILE=self.offset_file,
                       FAKETIME_CACHE_DURATION="1", FAKETIME_DONT_FAKE_MONOTONIC="1",
                       FAKETIME_DONT_RESET="1")
        if self.fiu:
            args = ["fiu-run", "-x", "-f", os.path.join(self.run.out, "fiu")] + args
        with open(os.path.join(self.run.out, f"node{self.i}.log"), "a") as err:
            self.p = subprocess.Popen(args, env=env, stdout=err, stderr=err)
        wait_for(lambda: os.path.exists(ready) or self.p.poll() is not None, 60, f"node{self.i}")
        if self.p.poll() is not None:
            raise RuntimeError(f"roostd node{self.i} exited with {self.p.returncode}")
        self.run.pids[f"node{self.i}"] = self.p.pid

    def url(self):
        return f"http://127.0.0.1:{self.port}"

    def kill(self):
        self.p.send_signal(signal.SIGKILL)
        self.p.wait()

    def stop(self):
        """SIGTERM; roostd must exit 0 (a non-zero exit is a finding, recorded in meta)."""
        if self.p is None or self.p.poll() is not None:
            return 0
        self.p.send_signal(signal.SIGCONT)
        self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return "timeout"


class Worker:
    """One `roost agent run` process; restarts reuse its state dir."""

    def __init__(self, run, name, agent, node):
        self.run, self.name, self.agent, self.node = run, name, agent, node
        self.state = os.path.join(run.out, name)
        self.handler_log = os.path.join(run.out, f"{name}.handler.log")
        self.p = None

    def start(self):
        proxy = self.run.agent_proxies[self.node]
        cmd = f"{HERE}/handler.sh {self.handler_log} {self.name}"
        args = [os.path.join(self.run.bin_dir, "roost"), "agent", "run",
                "--server", f"http://127.0.0.1:{proxy.port}", "--token-file", self.run.token_file,
                "--agent", self.agent, "--state-dir", self.state, "--exec", cmd,
                "--concurrency", "2", "--lease", f"{LEASE_S}s", "--poll-ceiling", "2s",
                "--timeout", "10s"]
        with open(os.path.join(self.run.out, f"{self.name}.agent.log"), "a") as err:
            self.p = subprocess.Popen(args, stdout=err, stderr=err, start_new_session=True)

    def kill(self):
        self.p.send_signal(signal.SIGKILL)
        self.p.wait()

    def stop(self):
        if self.p.poll() is not None:
            return self.p.returncode
        self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            return "timeout"


class Http:
    """A keep-alive HTTP/1.1 client to one roostd; reconnects after any failure."""

    def __init__(self, port, timeout_s=10):
        self.port, self.timeout_s, self.c = port, timeout_s, None

    def request(self, method, path, token, body=None):
        """(status, json or None, error text); status -1 when no answer came back."""
        try:
            if self.c is None:
                self.c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout_s)
            hdrs = {"Authorization": f"Bearer {token}"}
            data = None
            if body is not None:
                data = json.dumps(body).encode()
                hdrs["Content-Type"] = "application/json"
            self.c.request(method, path, body=data, headers=hdrs)
            r = self.c.getresponse()
            raw = r.read()
            try:
                doc = json.loads(raw) if raw else None
            except ValueError:
                doc = None
            return r.status, doc, None
        except (OSError, http.client.HTTPException) as e:
            if self.c is not None:
                self.c.close()
            self.c = None
            return -1, None, f"{type(e).__name__}: {e}"


class Producer(threading.Thread):
    """Publishes events (single and batched) to every node in turn and records every answer; a
    failed attempt is retried with the same idempotency keys until a definitive answer."""

    def __init__(self, run, n):
        super().__init__(daemon=True)
        self.ctx, self.n = run, n
        self.rng = random.Random(run.seed * 1000 + n)
        self.clients = [Http(node.port) for node in run.nodes]
        self.count = 0
        self.patch_n = 0

    def item(self):
        self.count += 1
        key = f"p{self.n}-{self.count}"
        r = self.rng.random()
        agent = "a1" if r < 0.55 else "a2" if r < 0.9 else "a3"
        ev = {"recipients": [agent], "idempotency_key": key}
        ms = self.rng.randint(5, 150)
        if agent == "a3":
            kind = "ttl_dead"
            ev["ttl_s"] = self.rng.randint(1, 4)
        else:
            k = self.rng.random()
            kind = ("normal" if k < 0.6 else "delayed" if k < 0.7 else "ttl" if k < 0.78
                    else "poison" if k < 0.81 else "poison65" if k < 0.84 else "patch")
            if kind == "delayed":
                ev["delay_s"] = self.rng.randint(1, 6)
            elif kind == "ttl":
                ev["ttl_s"] = self.rng.randint(3, 15)
            elif kind == "patch":
                self.patch_n += 1
                ev["state_patch"] = {f"p{self.n}": self.patch_n, "last": key}
        ev["correlation_id"] = kind
        ev["payload"] = {"kind": kind, "ms": ms, "key": key}
        return ev, {"key": key, "agent": agent, "kind": kind,
                    "patch": self.patch_n if kind == "patch" else None}

    def run(self):
        tok = self.ctx.token
        node_i = self.n % len(self.clients)
        while not self.ctx.stop_producers.is_set():
            self.ctx.producers_go.wait()
            with self.ctx.lock:
                self.ctx.publishing += 1
            try:
                node_i = self.publish(tok, node_i)
            finally:
                with self.ctx.lock:
                    self.ctx.publishing -= 1
            time.sleep(self.rng.expovariate(self.ctx.rate / self.ctx.n_producers))

    def publish(self, tok, node_i):
        """One publish (a single event or a batch), retried until a definitive answer."""
        batch = [self.item() for _ in range(self.rng.randint(2, 4) if self.rng.random() < 0.1 else 1)]
        body = batch[0][0] if len(batch) == 1 else {"events": [b[0] for b in batch]}
        items = [b[1] for b in batch]
        for attempt in range(1, 61):
            node_i = (node_i + 1) % len(self.clients)
            t0 = time.time()
            status, doc, err = self.clients[node_i].request("POST", "/api/v1/events", tok, body)
            rec = {"t0": t0, "t": time.time(), "p": self.n, "node": node_i, "attempt": attempt,
                   "items": items, "status": status}
            if doc and "events" in doc:
                rec["events"] = [{"event_id": e.get("event_id"), "agent": e.get("agent_id"),
                                  "seq": e.get("sequence_number"),
                                  "duplicate": e.get("duplicate", False)} for e in doc["events"]]
            elif doc and "error" in doc:
                rec["code"] = doc["error"].get("code")
            if err:
                rec["error"] = err
            self.ctx.record("publishes", rec)
            if status in (200, 201) or 400 <= status < 500 and status != 429:
                break
            time.sleep(min(2.0, 0.1 * attempt) * self.rng.uniform(0.5, 1.5))
        return node_i


class Follower(threading.Thread):
    """A read-only cursor walk of one agent's inbox, as an agent that only syncs would do it: every
    page from next_cursor, recorded, to prove gap-free, ordered reads while everything fails."""

    def __init__(self, run, agent):
        super().__init__(daemon=True)
        self.ctx, self.agent = run, agent
        self.clients = [Http(node.port, timeout_s=15) for node in run.nodes]
        self.cursor = 0
        self.seen = []  # (seq, event_id)
        self.errors = []  # (t, node, status, code)
        self.done = threading.Event()

    def step(self, node_i, wait_s):
        status, doc, err = self.clients[node_i].request(
            "GET", f"/api/v1/agents/{self.agent}/inbox?after_cursor={self.cursor}&limit=200"
                   f"&wait_s={wait_s}", self.ctx.token)
        if status != 200 or not doc:
            self.errors.append({"t": time.time(), "node": node_i, "status": status,
                                "code": (doc or {}).get("error", {}).get("code") if doc else err})
            return None
        for e in doc["events"]:
            self.seen.append((e["sequence_number"], e["event_id"]))
        self.cursor = doc["next_cursor"]
        return doc

    def run(self):
        node_i = 0
        while not self.done.is_set():
            if self.step(node_i, 2) is None:
                node_i = (node_i + 1) % len(self.clients)
                time.sleep(0.5)

    def catch_up(self):
        """After the drain: reads to the head (through node 0)."""
        self.done.set()
        self.join(timeout=30)
        for _ in range(1000):
            doc = self.step(0, 0)
            if doc is None:
                time.sleep(0.5)
            elif not doc["has_more"]:
                return


class Run:
    def __init__(self, a):
        self.profile = a.profile
        self.seed = a.seed
        self.minutes = a.minutes
        self.rate = a.rate
        self.bin_dir = os.path.abspath(a.bin_dir)
        self.out = os.path.abspath(a.out)
        self.keep = a.keep
        self.one_pass = a.one_pass
        self.mariadb_sh = os.path.join(SRC, "scripts", "mariadb_test.sh")
        self.postgres_sh = os.path.join(SRC, "scripts", "postgres_test.sh")
        self.mysql_dir = self.db_dir = a.mysql_dir or f"/tmp/roost-chaos-{os.getpid()}"
        self.rng = random.Random(a.seed)
        self.lock = threading.Lock()
        self.files = {}
        self.faults = []
        self.turns = {}
        self.pids = {}
        self.rss = {}
        self.stop_producers = threading.Event()
        # Cleared to hold the producers between publishes (db_idle_outage); publishing counts
        # those inside a publish and its retries.
        self.producers_go = threading.Event()
        self.producers_go.set()
        self.publishing = 0
        self.stop_sampler = threading.Event()
        self.n_producers = 3
        self.nodes, self.workers, self.agent_proxies, self.producers = [], [], [], []
        self.followers = []
        self.store = None

    def record(self, name, rec):
        with self.lock:
            f = self.files.get(name)
            if f is None:
                f = self.files[name] = open(os.path.join(self.out, f"{name}.ndjson"), "a")
            f.write(json.dumps(rec) + "\n")
            f.flush()

    def popen_pids(self):
        procs = [n.p for n in self.nodes] + [w.p for w in self.workers] + \
                [px.p for px in self.agent_proxies]
        if self.store is not None:
            procs += [px.p for px in self.store.db_proxies]
            if self.profile == "galera":
                procs += [px.p for px in self.store.galera.proxies]
        return {p.pid for p in procs if p is not None}

    def sample_rss(self):
        while not self.stop_sampler.wait(1.0):
            reap_orphans(self.popen_pids())
            for name, pid in list(self.pids.items()):
                try:
                    with open(f"/proc/{pid}/status") as f:
                        for line in f:
                            if line.startswith("VmRSS:"):
                                kb = int(line.split()[1])
                                self.rss[name] = max(self.rss.get(name, 0), kb)
                except OSError:
                    pass

    def setup(self):
        become_subreaper()
        if os.path.exists(self.out):
            shutil.rmtree(self.out)
        os.makedirs(self.out)
        self.key_file = os.path.join(self.out, "token_ed25519.pem")
        subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", self.key_file],
                       check=True)
        self.token = subprocess.run(
            [os.path.join(self.bin_dir, "roost"), "token", "mint", "--key", self.key_file,
             "--tenant", TENANT, "--scope", "agent:*:consume agent:*:publish tenant:admin",
             "--ttl", "12h"], check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
        self.token_file = os.path.join(self.out, "token")
        with open(self.token_file, "w") as f:
            f.write(self.token + "\n")
        self.store = Store(self)
        # SQLite is one node (doc/OPERATIONS.md: one process owns the file); MariaDB and
        # PostgreSQL get two.
        n_nodes = 1 if self.profile == "sqlite" else 2
        for i in range(n_nodes):
            node = Node(self, i)
            node.start()
            self.nodes.append(node)
            self.agent_proxies.append(Proxy(self.bin_dir, node.port, "", f"agents{i}"))
        for name, agent, node in WORKERS:
            w = Worker(self, name, agent, node % n_nodes)
            w.start()
            self.workers.append(w)
        threading.Thread(target=self.sample_rss, daemon=True).start()
        for agent in ("a1", "a2", "a3"):
            f = Follower(self, agent)
            f.start()
            self.followers.append(f)
        for n in range(self.n_producers):
            p = Producer(self, n)
            p.start()
            self.producers.append(p)

    # ---- faults: each returns the target's name; start and end are recorded around it ----

    def pick(self, kind, items):
        """The items in turn, per fault kind, so that each node and worker gets every fault."""
        n = self.turns.get(kind, 0)
        self.turns[kind] = n + 1
        return items[n % len(items)]

    def fault(self, kind):
        rng = self.rng
        if kind == "worker_kill":
            w = self.pick(kind, self.workers)
            w.kill()
            time.sleep(rng.uniform(0.2, 2.0))
            w.start()
            return w.name
        if kind == "node_kill":
            node = self.pick(kind, self.nodes)
            node.kill()
            time.sleep(rng.uniform(0.2, 1.5))
            node.start()
            return f"node{node.i}"
        if kind == "node_stop":
            node = self.pick(kind, self.nodes)
            node.p.send_signal(signal.SIGSTOP)
            time.sleep(LEASE_S + rng.uniform(1, 3))
            node.p.send_signal(signal.SIGCONT)
            return f"node{node.i}"
        if kind == "agent_cut":
            i = self.pick(kind, range(len(self.agent_proxies)))
            self.agent_proxies[i].cmd("block")
            time.sleep(rng.uniform(1, 3))
            self.agent_proxies[i].cmd("unblock")
            return f"agents{i}"
        if kind == "agent_stall":
            i = self.pick(kind, range(len(self.agent_proxies)))
            self.agent_proxies[i].cmd("stall")
            time.sleep(LEASE_S + rng.uniform(1, 3))
            self.agent_proxies[i].cmd("resume")
            return f"agents{i}"
        if kind == "fsync_fail":
            node = self.nodes[0]
            ctl = ["fiu-ctrl", "-f", os.path.join(self.out, "fiu")]
            for fp in ("posix/io/sync/fsync", "posix/io/sync/fdatasync"):
                subprocess.run(ctl + ["-c", f"enable name={fp}", str(node.p.pid)], check=True)
            time.sleep(rng.uniform(1, 3))
            for fp in ("posix/io/sync/fsync", "posix/io/sync/fdatasync"):
                subprocess.run(ctl + ["-c", f"disable name={fp}", str(node.p.pid)], check=True)
            return "node0"
        if kind == "clock_jump":
            node = next(n for n in self.nodes if n.faketime)
            # libfaketime re-reads its file within a second. On SQLite the clock stays ahead;
            # between two nodes the skew lasts a few seconds.
            node.offset_s += 2 * LEASE_S
            node.write_offset()
            time.sleep(1.5)
            target = f"node{node.i}+{node.offset_s}s"
            if len(self.nodes) > 1:
                time.sleep(rng.uniform(1, 3))
                node.offset_s = 0
                node.write_offset()
                time.sleep(1.5)
            return target
        if kind in ("db_restart", "db_kill"):
            self.store.restart(kind == "db_kill")
            return "db"
        if kind == "db_idle_outage":
            return self.idle_outage()
        if kind == "db_commit_lost":
            # The answers of the next 3 COMMITs of one node are lost: roostd cannot know whether
            # they committed and must find out before it answers anybody (DESIGN §8.3).
            i = self.pick(kind, range(len(self.store.db_proxies)))
            px = self.store.db_proxies[i]
            before = px.number("cuts")
            px.cmd("commitlost 3")
            deadline = time.time() + 8
            while time.time() < deadline and px.number("cuts") < before + 3:
                time.sleep(0.1)
            px.cmd("commitlost 0")
            return f"db{i}"
        if kind in ("db_cut", "db_stall"):
            i = self.pick(kind, range(len(self.store.db_proxies)))
            px = self.store.db_proxies[i]
            if kind == "db_cut":
                px.cmd("block")
                time.sleep(rng.uniform(1, 3))
                px.cmd("unblock")
            else:
                px.cmd("stall")
                time.sleep(rng.uniform(3, 8))
                px.cmd("resume")
            return f"db{i}"
        if kind.startswith("writer_") or kind.startswith("standby_"):
            return self.galera_fault(kind)
        raise ValueError(kind)

    def idle_outage(self):
        """The database stopped for DB_OUTAGE_S while nothing is left to do: producers held, every
        publish answered and every answered event final (up to a minute each, then the outage
        comes anyway), so the agents sit in their idle polls and streams through it. The
        producers go on once the server is back: the work after it shows the idle agents and
        both nodes (their connections and listeners) came back."""
        self.producers_go.clear()
        try:
            wait_for(lambda: self.publishing == 0, 60, "the producers' publishes to end")
            deadline = time.time() + 60
            while self.open_events() != 0 and time.time() < deadline:
                time.sleep(0.5)
            self.store.restart(False, down_s=DB_OUTAGE_S)
        finally:
            self.producers_go.set()
        return "db"

    def galera_fault(self, kind):
        g = self.store.galera
        writer = g.writer(self.nodes[0].port)
        n = writer if kind.startswith("writer_") else (writer + 1 + self.pick(kind, [0, 1])) % 3
        if kind.endswith("_kill"):
            pid = int(g.script("pid", n))
            g.script("kill", n)
            wait_for(lambda: not pid_alive(pid), 30, f"galera node {n} to die")
            wait_for(lambda: reap_orphans(self.popen_pids()) or not os.path.exists(f"/proc/{pid}"),
                     30, f"galera node {n} to be reaped")
            time.sleep(self.rng.uniform(1, 3))
            g.script("restart", n)
        elif kind.endswith("_stop"):
            g.script("pause", n)
            time.sleep(self.rng.uniform(4, 8))
            g.script("cont", n)
        else:
            g.proxies[n].cmd("stall")
            time.sleep(self.rng.uniform(4, 8))
            g.proxies[n].cmd("cut")
            g.proxies[n].cmd("resume")
        return f"galera{n}"

    def chaos(self):
        kinds = FAULT_KINDS[self.profile]
        deck = list(reversed(FIRST_FAULTS.get(self.profile, [])))
        time.sleep(5)  # work flowing before the first fault
        end = time.time() + self.minutes * 60
        passes = 0
        while self.one_pass or time.time() < end:
            if not deck:
                if self.one_pass and passes > 0:
                    break
                deck = list(kinds)
                self.rng.shuffle(deck)
                passes += 1
            kind = deck.pop()
            start = time.time()
            target = self.fault(kind)
            f = {"kind": kind, "target": target, "start": start, "end": time.time()}
            self.faults.append(f)
            self.record("faults", f)
            log(f"fault {kind} {target} {f['end'] - start:.1f}s")
            time.sleep(self.rng.uniform(2, 4) if self.one_pass else self.rng.uniform(3, 7))

    def open_events(self):
        """How many events are not final yet (scheduled, pending or claimed) as node 0 reads the
        inboxes; -1 when it does not answer."""
        c = Http(self.nodes[0].port)
        open_n = 0
        for agent in ("a1", "a2", "a3"):
            cursor = 0
            while True:
                st, doc, _ = c.request("GET", f"/api/v1/agents/{agent}/inbox?after_cursor="
                                              f"{cursor}&limit=1000", self.token)
                if st != 200:
                    return -1
                open_n += sum(1 for e in doc["events"]
                              if e.get("status") in ("scheduled", "pending", "claimed"))
                cursor = doc["next_cursor"]
                if not doc["has_more"]:
                    break
        return open_n

    def drain(self, timeout_s):
        """Waits until every answered event reached a final status (reading the follower's view)
        or timeout_s passed."""
        deadline = time.time() + timeout_s
        while time.time() < deadline:
            if self.open_events() == 0:
                return True
            time.sleep(1)
        return False

    def finish(self):
        for px in self.agent_proxies:
            px.stop()
        if self.store:
            self.store.stop()
        for f in self.files.values():
            f.close()

    def main(self):
        meta = {"profile": self.profile, "seed": self.seed,
                "minutes": "one pass" if self.one_pass else self.minutes,
                "rate": self.rate, "lease_s": LEASE_S, "max_attempts": MAX_ATTEMPTS,
                "workers": WORKERS, "started": time.time()}
        exit_codes = {}
        try:
            self.setup()
            meta["workers"] = [(w.name, w.agent, w.node) for w in self.workers]
            meta["nodes"] = len(self.nodes)
            log(f"profile {self.profile}: {len(self.nodes)} node(s), {len(self.workers)} workers, "
                f"seed {self.seed}, {self.minutes} min")
            self.chaos()
            self.stop_producers.set()
            self.producers_go.set()
            for p in self.producers:
                p.join(timeout=120)
            meta["drain_start"] = time.time()
            meta["drained"] = self.drain(90)
            meta["drain_end"] = time.time()
            log(f"drained: {meta['drained']} in {meta['drain_end'] - meta['drain_start']:.1f}s")
            for f in self.followers:
                f.catch_up()
            self.record("followers", {f.agent: {"seen": f.seen, "errors": f.errors}
                                      for f in self.followers})
            for w in self.workers:
                exit_codes[w.name] = w.stop()
            for node in self.nodes:
                exit_codes[f"node{node.i}"] = node.stop()
            self.stop_sampler.set()
            with open(os.path.join(self.out, "rows.json"), "w") as f:
                json.dump(self.store.dump(), f)
        finally:
            self.stop_producers.set()
            self.stop_sampler.set()
            for w in self.workers:
                if w.p and w.p.poll() is None:
                    w.p.kill()
                    w.p.wait()
            for node in self.nodes:
                if node.p and node.p.poll() is None:
                    node.p.send_signal(signal.SIGCONT)
                    node.p.kill()
                    node.p.wait()
            meta["exit_codes"] = exit_codes
            meta["rss_kb"] = self.rss
            meta["ended"] = time.time()
            with open(os.path.join(self.out, "meta.json"), "w") as f:
                json.dump(meta, f, indent=1)
            self.finish()
        return subprocess.run([sys.executable, os.path.join(HERE, "check.py"), self.out]).returncode


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--profile", choices=sorted(FAULT_KINDS), required=True)
    ap.add_argument("--bin-dir", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=int(os.environ.get("CHAOS_SEED") or 1))
    ap.add_argument("--minutes", type=float, default=float(os.environ.get("CHAOS_MINUTES") or 1))
    ap.add_argument("--rate", type=float, default=12.0, help="events published per second")
    ap.add_argument("--mysql-dir", help="directory of the private MariaDB or PostgreSQL "
                                        "(default /tmp/...)")
    ap.add_argument("--keep", action="store_true", help="keep the database server's directory")
    ap.add_argument("--one-pass", action="store_true",
                    help="every fault kind exactly once, shortly spaced (--minutes is ignored)")
    a = ap.parse_args()
    sys.exit(Run(a).main())


if __name__ == "__main__":
    main()
