#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Issue 16: a transaction Galera brute-force-aborts while one of its statements runs.

  bf_abort_multi.py DIR [--gaps N] [--race N] [--marker]

On node 1: autocommit off, wsrep_sync_wait = 1 (as roostd), UPDATE a row, INSERT 'A' (the work
the abort must undo); on node 2 an autocommit UPDATE of the same row, so node 1's applier aborts
node 1's transaction. Unlike bf_abort_idle.py, the abort lands while node 1 runs a statement:

--gaps N: N times each, node 1 sends "INSERT 'C'; <a 1 s statement>; INSERT 'M'; COMMIT" as
  node 2 updates, so the abort lands during the 1 s statement. Prints each statement's answer and the rows left.
--race N: N trials of node 1 sending a SELECT (as roostd's idempotency lookup) 0-3 ms after
  node 2's UPDATE went out, then "INSERT 'Z'; COMMIT". Counts the outcomes; TORN marks
  every answer OK with 'A' gone: the client was told its whole transaction committed while its
  head was undone (measured on MariaDB 10.11 / Galera 26.4: 1 to 2 in 150 trials).
--marker: the race with roostd's check (store_mysql_commit): the marker S is the transaction's
  first write, the COMMIT goes out as "INSERT C only if S is there; COMMIT; count S"; TORN then
  marks a COMMIT taken as committed (C inserted, S counted) with 'A' gone, which must not occur.
"""
import argparse, os, random, sys, threading, time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bf_abort_idle import rows  # noqa: E402  (the tags left in bf_rows, then emptied)
from cert_stress import Conn, lib  # noqa: E402


def each(c, sql):
    """Runs a multi-statement; returns the errno of each statement that answered (0 = OK) and
    the first column of the last result's first row."""
    out, last = [], None
    if lib.mysql_real_query(c.db, sql.encode(), len(sql.encode())) != 0:
        return [lib.mysql_errno(c.db)], None
    out.append(0)
    while True:
        res = lib.mysql_store_result(c.db)
        if res:
            row = lib.mysql_fetch_row(res)
            last = row[0].decode() if row and row[0] else None
            lib.mysql_free_result(res)
        if not lib.mysql_more_results(c.db):
            return out, last
        if lib.mysql_next_result(c.db) > 0:
            out.append(lib.mysql_errno(c.db))
            return out, last
        out.append(0)


def node1(d, marker):
    c = Conn(d, 1)
    c.q("SET SESSION sql_mode = 'STRICT_ALL_TABLES'")
    c.q("SET SESSION wsrep_sync_wait = 1")
    c.q("SET autocommit = 0")
    s = os.urandom(16).hex()
    if marker:
        c.q(f"INSERT INTO bf_markers (marker) VALUES (x'{s}')")
    c.q("UPDATE bf_a SET v = v + 1 WHERE id = 1")
    c.q("INSERT INTO bf_rows (tag) VALUES ('A')")
    return c, s


def abort_from_node2(d, delay_s, then):
    """Node 2's conflicting UPDATE, and delay_s later then() on node 1."""
    c2 = Conn(d, 2)
    t = threading.Thread(target=lambda: c2.q("UPDATE bf_a SET v = v + 100 WHERE id = 1"))
    t.start()
    time.sleep(delay_s)
    r = then()
    t.join()
    c2.close()
    return r


GAPS = {"SELECT SLEEP(1)": "SELECT SLEEP(1)", "DO SLEEP(1)": "DO SLEEP(1)",
        "busy SELECT": "SELECT BENCHMARK(3000000, MD5('x'))"}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--gaps", type=int, default=0)
    ap.add_argument("--race", type=int, default=0)
    ap.add_argument("--marker", action="store_true")
    a = ap.parse_args()
    c = Conn(a.dir, 1)
    for sql in ("DROP TABLE IF EXISTS bf_a, bf_rows, bf_markers",
                "CREATE TABLE bf_a (id INT PRIMARY KEY, v BIGINT NOT NULL)",
                "CREATE TABLE bf_rows (id INT AUTO_INCREMENT PRIMARY KEY, tag VARCHAR(64))",
                "CREATE TABLE bf_markers (marker BINARY(16) NOT NULL PRIMARY KEY)",
                "INSERT INTO bf_a VALUES (1, 0)"):
        c.q(sql)
    c.close()
    time.sleep(1)
    for _ in range(a.gaps):
        for name, gap in GAPS.items():
            c1, _ = node1(a.dir, False)
            sql = f"INSERT INTO bf_rows (tag) VALUES ('C'); {gap}; " \
                  "INSERT INTO bf_rows (tag) VALUES ('M'); COMMIT"
            r, _ = abort_from_node2(a.dir, 0, lambda: each(c1, sql))
            c1.close()
            print(f"gap {name}: answers {r} (C, gap, M, COMMIT); rows left: "
                  f"{rows(a.dir) or 'none'}", flush=True)
    counts, torn = {}, 0
    for _ in range(a.race):
        c1, s = node1(a.dir, a.marker)

        def tail():
            sel, _ = each(c1, "SELECT COUNT(*) FROM bf_rows")
            if not a.marker:
                z, _ = each(c1, "INSERT INTO bf_rows (tag) VALUES ('Z'); COMMIT")
                return sel, z, None
            z, kept = each(c1, "INSERT INTO bf_rows (tag) VALUES ('Z'); INSERT INTO bf_markers "
                               f"(marker) VALUES ((SELECT x'{os.urandom(16).hex()}' FROM "
                               f"bf_markers WHERE marker = x'{s}')); COMMIT; SET STATEMENT "
                               "wsrep_sync_wait = 0 FOR SELECT COUNT(*) FROM bf_markers WHERE "
                               f"marker = x'{s}'")
            if z and z[-1] != 0:
                each(c1, "ROLLBACK")
            return sel, z, kept
        sel, z, kept = abort_from_node2(a.dir, random.uniform(0, 0.003), tail)
        c1.close()
        left = rows(a.dir)
        told_ok = sel == [0] and z and all(e == 0 for e in z) and (not a.marker or kept == "1")
        bad = told_ok and "A" not in left
        torn += bad
        key = f"SELECT {sel}, tail {z}{'' if kept is None else f', S counted {kept}'}; " \
              f"rows {left or 'none'}{'   TORN' if bad else ''}"
        counts[key] = counts.get(key, 0) + 1
    for k, v in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"race: {v} x {k}", flush=True)
    sys.exit(1 if torn else 0)


if __name__ == "__main__":
    main()
