#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Statements and COMMITs per store operation, for one build or two side by side.

    bench/store_counts.py [--stores sqlite,mysql,postgres] [--runs N] [--check-doc FILE] BUILD [BUILD2]

For each build (a tree with bin/roostd and bin/roost) and each store, a fresh roostd runs under
the LD_PRELOAD shim bench/store_trace.c (built as BUILD/lib/store_trace.so; --trace-lib or the
other build's), which writes every SQL statement roostd sends (SQLite: sqlite3_trace_v2 on each
connection; MariaDB: each mysql_real_query / mysql_stmt_execute; PostgreSQL: each PQexec,
PQsendQuery, PQexecPrepared) to a trace file. One request at a
time goes through HTTP, between marker lines, so each write is a group commit of one job, its own
transaction:

    publish_new   publish of one event to an agent that has none yet (the agent row is made)
    publish       publish of one event to an existing agent
    inbox_read    GET …/inbox?after_cursor=0 (2 events)
    inbox_peek    GET …/inbox/peek (only on builds that have it; 404 elsewhere: shown as -)
    claim         claim limit 1 (2 pending)
    extend        extend that lease
    release       release it (transient)
    claim_ack     (setup: claim limit 1 again)
    ack           ack it
    ack_batch     POST …/inbox/ack with one item (after claiming the other event)

Per operation and store: statements (SQLite: statements run; MariaDB and PostgreSQL: statements
sent, a multi-statement round trip counted per statement), COMMITs, round trips, and on MariaDB
the server's own SHOW GLOBAL STATUS deltas, Questions and Com_commit (the sampling's own SHOW
subtracted). Background work is pushed out (scavenger, retention, metrics refresh at an hour,
tail at a minute, webhooks off); each run's figure is the minimum over --runs runs (background
work only ever adds), and a '*' marks an operation whose runs disagreed.

With two builds it prints both side by side and exits 1 when any shared operation differs; with
--check-doc it compares BUILD's figures with the table between the store-counts markers of FILE
(doc/BENCHMARKS.md) and exits 1 when they differ. Counts, not times: deterministic.
"""
import argparse
import http.client
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(HERE)
OPS = ["publish_new", "publish", "inbox_read", "inbox_peek", "claim", "extend", "release",
       "ack", "ack_batch"]
QUIET = ["--set", "scavenger.interval_ms=3600000", "--set", "retention.interval_ms=86400000",
         "--set", "metrics.refresh_ms=3600000", "--set", "tail.interval_ms=60000",
         "--set", "webhooks.enabled=false", "--set", "log.level=warn"]


def die(msg):
    print("store_counts: " + msg, file=sys.stderr)
    sys.exit(2)


class Mariadb:
    """The private server of scripts/mariadb_test.sh, and its client over the socket."""

    def __init__(self, work):
        self.dir = os.path.join(work, "db")
        out = subprocess.run([os.path.join(SRC, "scripts", "mariadb_test.sh"), "start", self.dir],
                             check=True, capture_output=True, text=True)
        self.url = out.stdout.strip().splitlines()[-1]
        self.client = shutil.which("mariadb") or shutil.which("mysql") or die("no mariadb client")

    def sql(self, text):
        out = subprocess.run([self.client, "--no-defaults", "--protocol=socket",
                              "--socket=" + os.path.join(self.dir, "mysqld.sock"), "-uroot",
                              "-N", "-B", "-e", text], check=True, capture_output=True, text=True)
        return out.stdout

    def status(self):
        vals = {}
        for line in self.sql("SHOW GLOBAL STATUS WHERE Variable_name IN "
                             "('Questions', 'Com_commit')").splitlines():
            k, v = line.split("\t")
            vals[k] = int(v)
        return vals

    def database_url(self, name):
        self.sql("CREATE DATABASE %s CHARACTER SET utf8mb4 COLLATE utf8mb4_bin" % name)
        u = urllib.parse.urlsplit(self.url)
        return urllib.parse.urlunsplit((u.scheme, u.netloc, "/" + name, u.query, u.fragment))

    has_status = True

    def stop(self):
        subprocess.run([os.path.join(SRC, "scripts", "mariadb_test.sh"), "stop", self.dir],
                       check=False, capture_output=True)


class Postgres:
    """The private server of scripts/postgres_test.sh; each run gets a schema of its own. Counted
    from the client side only (the trace): the server's own counters (pg_stat_database) are
    flushed by each backend at most once a second, too late for one request between markers."""

    has_status = False

    def __init__(self, work):
        self.dir = os.path.join(work, "pg")
        os.chmod(work, 0o755)  # as root the server runs as postgres, which must reach its dir
        out = subprocess.run([os.path.join(SRC, "scripts", "postgres_test.sh"), "start", self.dir],
                             check=True, capture_output=True, text=True)
        self.url = out.stdout.strip().splitlines()[-1]

    def database_url(self, name):
        return self.url + "?schema=" + name

    def stop(self):
        subprocess.run([os.path.join(SRC, "scripts", "postgres_test.sh"), "stop", self.dir],
                       capture_output=True)


class Roostd:
    def __init__(self, build, trace_lib, trace, data, store_url):
        self.ready = os.path.join(data, "ready")
        args = [os.path.join(build, "bin", "roostd"), "--data-dir", data, "--listen",
                "127.0.0.1:0", "--ready-file", self.ready] + QUIET
        if store_url:
            args += ["--store", store_url]
        env = dict(os.environ, LD_PRELOAD=trace_lib, ROOST_STORE_TRACE=trace)
        self.log = open(os.path.join(os.path.dirname(data), "roostd.log"), "ab")
        self.proc = subprocess.Popen(args, env=env, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 60
        while not (os.path.exists(self.ready) and os.path.getsize(self.ready) > 0):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                die("roostd did not start (its log: %s)" % self.log.name)
            time.sleep(0.05)
        u = urllib.parse.urlsplit(open(self.ready).read().strip())
        self.host, self.port = u.hostname, u.port
        self.token = subprocess.run(
            [os.path.join(build, "bin", "roost"), "token", "mint", "--data-dir", data, "--tenant",
             "cnt", "--scope", "agent:*:consume agent:*:publish agent:*:read"],
            check=True, capture_output=True, text=True).stdout.strip()

    def call(self, method, path, body=None):
        conn = http.client.HTTPConnection(self.host, self.port, timeout=30)
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": "Bearer " + self.token}
        if data is not None:
            headers["Content-Type"] = "application/json"
        conn.request(method, path, body=data, headers=headers)
        r = conn.getresponse()
        text = r.read()
        conn.close()
        return r.status, (json.loads(text) if text else None)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()


def split_statements(sql):
    """The statements of a multi-statement text: ';' outside quotes ends one."""
    out, cur, quote = [], [], None
    for ch in sql:
        if quote:
            cur.append(ch)
            if ch == quote:
                quote = None
        elif ch in "'\"`":
            quote = ch
            cur.append(ch)
        elif ch == ";":
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    out.append("".join(cur).strip())
    # A compound statement (MariaDB's IF … END IF, a claim's row-count check) is one statement.
    joined = []
    for part in (s for s in out if s):
        if joined and joined[-1].upper().startswith("IF ") and \
                not joined[-1].upper().endswith("END IF"):
            joined[-1] += "; " + part
        else:
            joined.append(part)
    return joined


def is_commit(stmt):
    words = stmt.strip().upper().split()
    return bool(words) and words[0] in ("COMMIT", "END")


def count_trace(path):
    """{op: {"stmts", "commits", "trips"}} from the marker-delimited trace."""
    res, op = {}, None
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("#BEGIN "):
                op = line[7:]
                res[op] = {"stmts": 0, "commits": 0, "trips": 0}
                continue
            if line.startswith("#END "):
                op = None
                continue
            if op is None:
                continue
            parts = line.split("\t", 2)
            if len(parts) < 3:
                continue
            kind, _tid, sql = parts
            if kind == "S":
                if sql.lstrip().startswith("--"):
                    continue  # a trigger's sub-program, not a statement of roostd's
                stmts = [sql]
            else:
                stmts = split_statements(sql)
                res[op]["trips"] += 1
            res[op]["stmts"] += len(stmts)
            res[op]["commits"] += sum(1 for s in stmts if is_commit(s))
    return res


def one_run(build, trace_lib, store, db, work, tag):
    rundir = os.path.join(work, tag)
    os.makedirs(rundir)
    data = os.path.join(rundir, "data")
    trace = os.path.join(rundir, "trace")
    url = db.database_url("roost_cnt_" + tag.replace("-", "_")) if db is not None else None
    d = Roostd(build, trace_lib, trace, data, url)
    result, server = {}, {}
    try:
        time.sleep(1.5)  # start-up work (migrations, first ticks and snapshots) is over
        offset = None
        if db is not None and db.has_status:
            a, b = db.status(), db.status()
            offset = {k: b[k] - a[k] for k in a}  # what one SHOW itself adds
        agent = "cnt-a"
        base = "/api/v1/agents/%s/inbox" % agent
        state = {}

        def op(name, method, path, body=None, ok=(200, 201)):
            before = db.status() if db is not None and db.has_status else None
            with open(trace, "a") as f:
                f.write("#BEGIN %s\n" % name)
            status, ans = d.call(method, path, body)
            with open(trace, "a") as f:
                f.write("#END %s\n" % name)
            if before is not None:
                after = db.status()
                server[name] = {k: after[k] - before[k] - offset[k] for k in after}
            if status == 404 and name == "inbox_peek" and (ans or {}).get("error", {}).get(
                    "code") in ("not_found", "route_not_found"):
                return None  # a build without the route
            if status not in ok:
                die("%s: %s %s answered %d %s" % (tag, method, path, status, ans))
            return ans

        pub = {"recipients": [agent], "payload": {"task": "count", "n": 1}}
        op("publish_new", "POST", "/api/v1/events", pub)
        op("publish", "POST", "/api/v1/events", dict(pub, payload={"task": "count", "n": 2}))
        op("inbox_read", "GET", base + "?after_cursor=0")
        if op("inbox_peek", "GET", base + "/peek") is None:
            server.pop("inbox_peek", None)
            state["no_peek"] = True
        ev = op("claim", "POST", base + "/claim", {"limit": 1, "lease_s": 60})["events"][0]
        path = base + "/" + ev["event_id"]
        op("extend", "POST", path + "/extend", {"lease_token": ev["lease_token"], "lease_s": 120})
        op("release", "POST", path + "/release", {"lease_token": ev["lease_token"]})
        ev = op("claim_ack", "POST", base + "/claim", {"limit": 1, "lease_s": 60})["events"][0]
        op("ack", "POST", base + "/" + ev["event_id"] + "/ack", {"lease_token": ev["lease_token"]})
        ev = op("claim_ack2", "POST", base + "/claim", {"limit": 1, "lease_s": 60})["events"][0]
        op("ack_batch", "POST", base + "/ack",
           {"acks": [{"event_id": ev["event_id"], "lease_token": ev["lease_token"]}]})
    finally:
        d.stop()
    counts = count_trace(trace)
    for name in OPS:
        if name == "inbox_peek" and state.get("no_peek"):
            continue
        result[name] = dict(counts.get(name, {"stmts": 0, "commits": 0, "trips": 0}))
        if name in server:
            result[name]["questions"] = server[name]["Questions"]
            result[name]["com_commit"] = server[name]["Com_commit"]
    return result


def measure(build, trace_lib, stores, runs, db, work, bi):
    """{store: {op: {key: (min, varied)}}}"""
    out = {}
    for store in stores:
        per_run = [one_run(build, trace_lib, store, db.get(store), work,
                           "b%d-%s-r%d" % (bi, store, r)) for r in range(runs)]
        out[store] = {}
        for name in OPS:
            rows = [r[name] for r in per_run if name in r]
            if not rows:
                continue
            out[store][name] = {k: (min(r[k] for r in rows), len({r[k] for r in rows}) > 1)
                                for k in rows[0]}
    return out


COLUMNS = [("sqlite", "stmts", "SQLite statements"), ("sqlite", "commits", "SQLite COMMITs"),
           ("mysql", "stmts", "MariaDB statements"), ("mysql", "trips", "MariaDB round trips"),
           ("mysql", "commits", "MariaDB COMMITs"), ("mysql", "questions", "Questions"),
           ("mysql", "com_commit", "Com_commit"), ("postgres", "stmts", "PostgreSQL statements"),
           ("postgres", "trips", "PostgreSQL round trips"),
           ("postgres", "commits", "PostgreSQL COMMITs")]


def cell(res, store, key, name):
    v = res.get(store, {}).get(name, {}).get(key)
    if v is None:
        return None, "-"
    return v[0], "%d%s" % (v[0], "*" if v[1] else "")


def table(results, names, stores):
    cols = [c for c in COLUMNS if c[0] in stores]
    head = ["operation"] + ["%s (%s)" % (c[2], n) for c in cols for n in names]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    differ = []
    for name in OPS:
        row = [name]
        for store, key, title in cols:
            vals = [cell(r, store, key, name) for r in results]
            row += [v[1] for v in vals]
            known = [v[0] for v in vals if v[0] is not None]
            if len(known) == len(vals) and len(set(known)) > 1:
                differ.append("%s: %s %s" % (name, title, " vs ".join(v[1] for v in vals)))
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines), differ


DOC_BEGIN, DOC_END = "<!-- store-counts:begin -->", "<!-- store-counts:end -->"


def doc_table(path):
    """{(op, column title): value} from the documented table (the single-build layout)."""
    text = open(path, encoding="utf-8").read()
    if DOC_BEGIN not in text or DOC_END not in text:
        die("%s has no %s … %s table" % (path, DOC_BEGIN, DOC_END))
    body = text.split(DOC_BEGIN, 1)[1].split(DOC_END, 1)[0]
    rows = [l for l in body.splitlines() if l.startswith("|")]
    head = [re.sub(r" \(.*\)$", "", h.strip()) for h in rows[0].strip("|").split("|")]
    out = {}
    for l in rows[2:]:
        cells = [c.strip() for c in l.strip("|").split("|")]
        for h, c in zip(head[1:], cells[1:]):
            out[(cells[0], h)] = c
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("builds", nargs="+", metavar="BUILD")
    ap.add_argument("--stores", default="sqlite,mysql,postgres")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--trace-lib")
    ap.add_argument("--check-doc", metavar="FILE")
    ap.add_argument("--keep", action="store_true", help="keep the work directory")
    a = ap.parse_args()
    if len(a.builds) > 2:
        die("one or two builds")
    builds = [os.path.abspath(b) for b in a.builds]
    stores = [s for s in a.stores.split(",") if s]
    if not stores or any(s not in ("sqlite", "mysql", "postgres") for s in stores) or a.runs < 1:
        die("--stores takes sqlite, mysql and/or postgres, --runs at least 1")
    trace_lib = a.trace_lib or next(
        (p for p in (os.path.join(b, "lib", "store_trace.so") for b in reversed(builds))
         if os.path.exists(p)), None)
    if trace_lib is None or not os.path.exists(trace_lib):
        die("no store_trace.so in the builds' lib/: give --trace-lib")
    trace_lib = os.path.abspath(trace_lib)
    work = tempfile.mkdtemp(prefix="store_counts.")
    db = {}
    try:
        if "mysql" in stores:
            db["mysql"] = Mariadb(work)
        if "postgres" in stores:
            db["postgres"] = Postgres(work)
        results = [measure(b, trace_lib, stores, a.runs, db, work, i)
                   for i, b in enumerate(builds)]
    finally:
        for server in db.values():
            server.stop()
        if a.keep:
            print("work directory: " + work, file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)
    names = ["base", "new"] if len(builds) == 2 else ["this build"]
    for i, b in enumerate(builds):
        print("%s: %s" % (names[i], b))
    text, differ = table(results, names, stores)
    print(text)
    status = 0
    if differ:
        print("\nDIFFERENT:\n  " + "\n  ".join(differ))
        status = 1
    if a.check_doc:
        doc = doc_table(a.check_doc)
        bad = []
        for name in OPS:
            for store, key, title in COLUMNS:
                if store not in stores:
                    continue
                got = cell(results[0], store, key, name)[0]
                want = doc.get((name, title))
                if want is None or want == "-":
                    continue
                if got is None or str(got) != want.rstrip("*"):
                    bad.append("%s %s: documented %s, measured %s" % (name, title, want, got))
        if bad:
            print("\nNOT AS DOCUMENTED (%s):\n  %s" % (a.check_doc, "\n  ".join(bad)))
            status = 1
        else:
            print("\nas documented in " + a.check_doc)
    sys.exit(status)


if __name__ == "__main__":
    main()
