#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Issue 16: is every COMMIT that Galera answers OK durable when two nodes take conflicting
writes at once (the moments when roostd processes fail over or back at different times)?

  cert_stress.py DIR [--seconds S] [--workers-per-node N] [--nodes 1,2] [--stop N --stop-s S]

DIR is a running cluster of scripts/galera.sh. Each worker runs roostd's publish pattern in a
loop on its node, through libmariadb (ctypes) so the marker and COMMIT travel in one
multi-statement query as roostd sends them:
    SET autocommit = 0 (once)
    INSERT INTO cs_agents ... ON DUPLICATE KEY UPDATE next_seq = LAST_INSERT_ID(next_seq + 1)
    INSERT INTO cs_rows (seq, tag) VALUES (<insert id - 1>, tag)
    INSERT INTO cs_markers (marker) VALUES (tag); COMMIT
Every answer is recorded; afterwards every tag answered OK must have its row with its seq and
its marker on every node. Exits 1 on any answered-but-missing tag. With --stop N, node N is
SIGSTOPped (--kill: SIGKILLed) for --stop-s seconds from 1/4 of the run on (then SIGCONTed,
or restarted); its workers see lost
connections, 1047 and 1180 and reconnect to it (outcomes they could not learn are counted apart).
"""
import argparse, ctypes, os, random, signal, subprocess, sys, threading, time

lib = ctypes.CDLL("libmariadb.so.3")
lib.mysql_init.restype = ctypes.c_void_p
lib.mysql_init.argtypes = [ctypes.c_void_p]
lib.mysql_real_connect.restype = ctypes.c_void_p
lib.mysql_real_connect.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                   ctypes.c_char_p, ctypes.c_uint, ctypes.c_char_p, ctypes.c_ulong]
lib.mysql_real_query.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong]
lib.mysql_errno.argtypes = [ctypes.c_void_p]
lib.mysql_errno.restype = ctypes.c_uint
lib.mysql_error.argtypes = [ctypes.c_void_p]
lib.mysql_error.restype = ctypes.c_char_p
lib.mysql_store_result.argtypes = [ctypes.c_void_p]
lib.mysql_store_result.restype = ctypes.c_void_p
lib.mysql_free_result.argtypes = [ctypes.c_void_p]
lib.mysql_fetch_row.argtypes = [ctypes.c_void_p]
lib.mysql_fetch_row.restype = ctypes.POINTER(ctypes.c_char_p)
lib.mysql_next_result.argtypes = [ctypes.c_void_p]
lib.mysql_more_results.argtypes = [ctypes.c_void_p]
lib.mysql_insert_id.argtypes = [ctypes.c_void_p]
lib.mysql_insert_id.restype = ctypes.c_ulonglong
lib.mysql_close.argtypes = [ctypes.c_void_p]
lib.mysql_options.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p]
MYSQL_OPT_CONNECT_TIMEOUT, MYSQL_OPT_READ_TIMEOUT, MYSQL_OPT_WRITE_TIMEOUT = 0, 11, 12
GALERA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "galera.sh")
LOST = {2006, 2013, 2055, 1927, 1047, 1180}
CLIENT_FOUND_ROWS, CLIENT_MULTI_STATEMENTS = 2, 1 << 16


class Conn:
    def __init__(self, d, n):
        self.db = lib.mysql_init(None)
        t = ctypes.c_uint(10)
        for o in (MYSQL_OPT_CONNECT_TIMEOUT, MYSQL_OPT_READ_TIMEOUT, MYSQL_OPT_WRITE_TIMEOUT):
            lib.mysql_options(self.db, o, ctypes.byref(t))
        sock = f"{d}/n{n}/mysqld.sock".encode()
        if not lib.mysql_real_connect(self.db, None, b"root", None, b"roost_test", 0, sock,
                                      CLIENT_FOUND_ROWS | CLIENT_MULTI_STATEMENTS):
            raise RuntimeError(lib.mysql_error(self.db).decode())

    def q(self, sql):
        """Runs sql (maybe several statements); returns (errno of the first failure or 0,
        index of the failing statement, first row of the first result)."""
        if lib.mysql_real_query(self.db, sql.encode(), len(sql.encode())) != 0:
            return lib.mysql_errno(self.db), 0, None
        i, first = 0, None
        while True:
            res = lib.mysql_store_result(self.db)
            if res:
                row = lib.mysql_fetch_row(res)
                if first is None and row:
                    first = row[0]
                lib.mysql_free_result(res)
            if not lib.mysql_more_results(self.db):
                return 0, i, first
            i += 1
            r = lib.mysql_next_result(self.db)
            if r > 0:
                return lib.mysql_errno(self.db), i, first

    def close(self):
        lib.mysql_close(self.db)


def session(d, n, stop):
    while not stop.is_set():
        try:
            c = Conn(d, n)
        except RuntimeError:
            time.sleep(0.5)
            continue
        if c.q("SET SESSION tx_isolation = 'READ-COMMITTED'")[0] == 0 and \
                c.q("SET autocommit = 0")[0] == 0:
            return c
        c.close()
        time.sleep(0.5)
    return None


def worker(d, n, wid, stop, out):
    c = session(d, n, stop)
    k = 0
    while c is not None and not stop.is_set():
        k += 1
        tag = f"n{n}w{wid}-{k}"
        e, _, _ = c.q("INSERT INTO cs_agents (id, next_seq) VALUES (1, LAST_INSERT_ID(2))"
                      " ON DUPLICATE KEY UPDATE next_seq = LAST_INSERT_ID(next_seq + 1)")
        if e:
            out.append((tag, None, "alloc", e))
            if e in LOST:
                c.close()
                c = session(d, n, stop)
            else:
                c.q("ROLLBACK")
            continue
        seq = lib.mysql_insert_id(c.db) - 1
        e, _, _ = c.q(f"INSERT INTO cs_rows (seq, tag) VALUES ({seq}, '{tag}')")
        if e:
            out.append((tag, seq, "row", e))
            if e in LOST:
                c.close()
                c = session(d, n, stop)
            else:
                c.q("ROLLBACK")
            continue
        if random.random() < 0.3:
            time.sleep(random.uniform(0, 0.01))  # idle in the transaction: BF aborts land here
        e, i, _ = c.q(f"INSERT INTO cs_markers (marker) VALUES ('{tag}'); COMMIT")
        out.append((tag, seq, "commit" if i == 1 else "marker", e))
        if e in LOST:
            c.close()
            c = session(d, n, stop)
        elif e:
            c.q("ROLLBACK")
    if c is not None:
        c.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--seconds", type=float, default=20)
    ap.add_argument("--workers-per-node", type=int, default=2)
    ap.add_argument("--nodes", default="1,2")
    ap.add_argument("--stop", type=int, default=0)
    ap.add_argument("--stop-s", type=float, default=8)
    ap.add_argument("--kill", action="store_true", help="SIGKILL the --stop node, then restart it")
    a = ap.parse_args()
    c = Conn(a.dir, 1)
    for sql in ("DROP TABLE IF EXISTS cs_agents, cs_rows, cs_markers",
                "CREATE TABLE cs_agents (id INT PRIMARY KEY, next_seq BIGINT NOT NULL)",
                "CREATE TABLE cs_rows (seq BIGINT PRIMARY KEY, tag VARCHAR(64) NOT NULL UNIQUE)",
                "CREATE TABLE cs_markers (marker VARCHAR(64) PRIMARY KEY)"):
        e, _, _ = c.q(sql)
        if e:
            sys.exit(f"{sql}: {e}")
    c.close()
    time.sleep(1)
    stop = threading.Event()
    outs, ths = [], []
    for n in [int(x) for x in a.nodes.split(",")]:
        for w in range(a.workers_per_node):
            out = []
            outs.append(out)
            t = threading.Thread(target=worker, args=(a.dir, n, w, stop, out))
            t.start()
            ths.append(t)
    if a.stop:
        time.sleep(a.seconds / 4)
        pid = int(subprocess.run(["sh", GALERA, "pid", a.dir, str(a.stop)], check=True,
                                 capture_output=True, text=True).stdout)
        os.kill(pid, signal.SIGKILL if a.kill else signal.SIGSTOP)
        time.sleep(a.stop_s)
        if a.kill:
            subprocess.run(["sh", GALERA, "restart", a.dir, str(a.stop)], check=True,
                           capture_output=True)
        else:
            os.kill(pid, signal.SIGCONT)
        time.sleep(max(0, a.seconds * 3 / 4 - a.stop_s))
    else:
        time.sleep(a.seconds)
    stop.set()
    for t in ths:
        t.join()
    if a.stop:
        subprocess.run(["sh", GALERA, "wait", a.dir, str(a.stop)], check=True, capture_output=True)
    time.sleep(2)
    answers = [x for o in outs for x in o]
    ok = {tag: seq for tag, seq, where, e in answers if e == 0}
    errs = {}
    for tag, seq, where, e in answers:
        if e:
            errs[(where, e)] = errs.get((where, e), 0) + 1
    lost = 0
    for n in (1, 2, 3):
        c = Conn(a.dir, n)
        c.q("SET SESSION wsrep_sync_wait = 15")
        rows, markers = {}, set()
        lib.mysql_real_query(c.db, b"SELECT seq, tag FROM cs_rows", 29)
        res = lib.mysql_store_result(c.db)
        while True:
            r = lib.mysql_fetch_row(res)
            if not r:
                break
            rows[r[1].decode()] = int(r[0])
        lib.mysql_free_result(res)
        lib.mysql_real_query(c.db, b"SELECT marker FROM cs_markers", 29)
        res = lib.mysql_store_result(c.db)
        while True:
            r = lib.mysql_fetch_row(res)
            if not r:
                break
            markers.add(r[0].decode())
        lib.mysql_free_result(res)
        c.close()
        missing = [t for t in ok if rows.get(t) != ok[t] or t not in markers]
        extra = [t for t in rows if t not in ok]
        lost += len(missing)
        print(f"node {n}: rows {len(rows)}, markers {len(markers)}, answered OK {len(ok)}, "
              f"answered OK but missing or other seq {len(missing)} {missing[:5]}, "
              f"rows without an OK answer {len(extra)}")
    print(f"attempts {len(answers)}, OK {len(ok)}, errors {errs}")
    sys.exit(1 if lost else 0)


if __name__ == "__main__":
    main()
