#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Reproducer for issue 16: can a Galera node resumed after SIGSTOP past evs.suspect_timeout
answer OK to a COMMIT that never reached the primary component?

  phantom_commit.py DIR [--trials N] [--case a|b|c|all] [--pause-min S] [--pause-max S] [--load]

DIR is a running cluster of scripts/galera.sh. Node 1 is the node that gets stopped.
  a: BEGIN; INSERT before the stop, COMMIT sent while stopped (answered after SIGCONT)
  b: BEGIN; INSERT before the stop, COMMIT sent right after SIGCONT
  c: a new connection right after SIGCONT: BEGIN; INSERT; COMMIT
  d: BEGIN; INSERT, then COMMIT sent 0-3 ms before the stop (the writeset may be on the wire)
After node 1 rejoined (Synced, cluster size 3 everywhere), each node is asked for the row.
Prints one line per trial and a summary; exits 1 when some COMMIT answered OK lost its row, or
the nodes disagree about a row.
"""
import argparse, os, random, select, signal, subprocess, sys, threading, time

GALERA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "galera.sh")


class Session:
    """One mariadb client process: one server session, statements fed through stdin."""

    def __init__(self, d, n):
        self.p = subprocess.Popen(
            ["mariadb", "--no-defaults", "--protocol=socket", f"--socket={d}/n{n}/mysqld.sock",
             "-uroot", "-N", "-B", "--unbuffered", "-f", "roost_test"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, bufsize=0)
        self.mark = 0
        self.buf = b""

    def send(self, sql):
        """Sends SQL then a marker; returns the marker's number for wait()."""
        self.mark += 1
        sql = sql.rstrip().rstrip(";")
        self.p.stdin.write(f"{sql};\nSELECT 'MARK{self.mark}';\n".encode())
        return self.mark

    def wait(self, mark, timeout):
        """Output lines before marker `mark`, or None on timeout."""
        end = time.time() + timeout
        tag = f"MARK{mark}".encode()
        while True:
            i = self.buf.find(tag + b"\n")
            if i >= 0:
                out, self.buf = self.buf[:i], self.buf[i + len(tag) + 1:]
                return out.decode(errors="replace").strip()
            left = end - time.time()
            if left <= 0:
                return None
            r, _, _ = select.select([self.p.stdout], [], [], left)
            if r:
                chunk = os.read(self.p.stdout.fileno(), 65536)
                if not chunk:
                    out, self.buf = self.buf, b""
                    return out.decode(errors="replace").strip() + " [client exited]"
                self.buf += chunk

    def run(self, sql, timeout=30):
        return self.wait(self.send(sql), timeout)

    def close(self):
        try:
            self.p.stdin.close()
        except OSError:
            pass
        try:
            self.p.wait(5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def dbg(msg):
    if os.environ.get("PHANTOM_DEBUG"):
        print(f"{time.time():.3f} {msg}", file=sys.stderr, flush=True)


def q(d, n, sql):
    r = subprocess.run(["mariadb", "--no-defaults", "--protocol=socket", f"--socket={d}/n{n}/mysqld.sock",
                        "-uroot", "-N", "-B", "--connect-timeout=2", "roost_test", "-e", sql],
                       capture_output=True, text=True, timeout=30)
    return (r.stdout + r.stderr).strip()


def status(d, n):
    out = q(d, n, "SHOW STATUS WHERE Variable_name IN ('wsrep_ready','wsrep_local_state_comment',"
                  "'wsrep_cluster_status','wsrep_cluster_size','wsrep_cluster_conf_id')")
    return dict(l.split("\t") for l in out.splitlines() if "\t" in l)


def galera(d, cmd, n):
    subprocess.run(["sh", GALERA, cmd, d, str(n)], check=True, capture_output=True)


def wait_rejoined(d, limit=120):
    end = time.time() + limit
    while time.time() < end:
        ok = True
        for n in (1, 2, 3):
            try:
                s = status(d, n)
            except subprocess.TimeoutExpired:
                ok = False
                break
            if s.get("wsrep_local_state_comment") != "Synced" or s.get("wsrep_cluster_size") != "3":
                ok = False
                break
        if ok:
            return True
        time.sleep(0.3)
    return False


def load(d, stop_at):
    """Autocommit inserts on node 2 while node 1 is stopped, as roostd does after failing over."""
    s = Session(d, 2)
    i = 0
    while time.time() < stop_at:
        s.run(f"INSERT INTO phantom_load (tag) VALUES ('l{i}')", timeout=15)
        i += 1
    s.close()


def trial(d, case, k, pause, with_load):
    tag = f"{case}{k}-{int(time.time()*1000)}"
    notes = []
    sess = None
    if case in "abd":
        sess = Session(d, 1)
        out = sess.run(f"BEGIN; INSERT INTO phantom (tag) VALUES ('{tag}')", timeout=20)
        if out:
            notes.append(f"insert: {out}")
    dbg(f"{tag}: stop node 1")
    mark = None
    if case == "d":
        pid = int(subprocess.run(["sh", GALERA, "pid", d, "1"], check=True, capture_output=True,
                                 text=True).stdout)
        mark = sess.send("COMMIT")
        time.sleep(random.uniform(0, 0.003))
        os.kill(pid, signal.SIGSTOP)
    else:
        galera(d, "pause", 1)
    t_stop = time.time()
    if case == "a":
        time.sleep(0.2)
        mark = sess.send("COMMIT")
    lp = None
    if with_load:
        lp = threading.Thread(target=load, args=(d, time.time() + pause))
        lp.start()
    time.sleep(max(0, pause - (time.time() - t_stop)))
    dbg(f"{tag}: continue node 1")
    galera(d, "cont", 1)
    t_cont = time.time()
    if case == "b":
        mark = sess.send("COMMIT")
    elif case == "c":
        sess = Session(d, 1)
        mark = sess.send(f"BEGIN; INSERT INTO phantom (tag) VALUES ('{tag}'); COMMIT")
    ans = sess.wait(mark, 40)
    dbg(f"{tag}: answer {ans!r}")
    t_ans = time.time()
    st1 = None
    try:
        st1 = status(d, 1)
    except subprocess.TimeoutExpired:
        pass
    sess.close()
    if lp:
        lp.join()
    dbg(f"{tag}: wait for the rejoin")
    rejoined = wait_rejoined(d)
    rows = {}
    for n in (1, 2, 3):
        rows[n] = q(d, n, f"SET SESSION wsrep_sync_wait=15; SELECT COUNT(*) FROM phantom WHERE tag='{tag}'")
    ok = ans == ""  # no output before the marker: COMMIT answered OK
    present = [n for n in (1, 2, 3) if rows[n] == "1"]
    verdict = "PHANTOM" if ok and len(present) < 3 else ("ok" if ok else "error-answer")
    if not ok and present:
        verdict = "error-but-committed" if len(present) == 3 else "error-partial"
    print(f"case={case} trial={k} pause={pause:.1f}s answer={'OK' if ok else repr(ans)} "
          f"answered_after_cont={t_ans - t_cont:.2f}s rows(n1,n2,n3)={rows[1]},{rows[2]},{rows[3]} "
          f"rejoined={rejoined} n1_after_answer={st1} -> {verdict} {' '.join(notes)}", flush=True)
    return verdict


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--trials", type=int, default=5)
    ap.add_argument("--case", default="all")
    ap.add_argument("--pause-min", type=float, default=4)
    ap.add_argument("--pause-max", type=float, default=8)
    ap.add_argument("--load", action="store_true")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    random.seed(a.seed)
    q(a.dir, 1, "CREATE TABLE IF NOT EXISTS phantom (id BIGINT AUTO_INCREMENT PRIMARY KEY, tag VARCHAR(64) UNIQUE)")
    q(a.dir, 1, "CREATE TABLE IF NOT EXISTS phantom_load (id BIGINT AUTO_INCREMENT PRIMARY KEY, tag VARCHAR(64))")
    if not wait_rejoined(a.dir):
        sys.exit("cluster not Synced with 3 nodes")
    cases = "abcd" if a.case == "all" else a.case
    tally = {}
    for k in range(a.trials):
        for c in cases:
            v = trial(a.dir, c, k, random.uniform(a.pause_min, a.pause_max), a.load)
            tally.setdefault(c, {}).setdefault(v, 0)
            tally[c][v] += 1
    print("summary:", tally)
    bad = ("PHANTOM", "error-partial")  # an OK that is lost, or nodes that disagree
    sys.exit(1 if any(v in t for t in tally.values() for v in bad) else 0)


if __name__ == "__main__":
    main()
