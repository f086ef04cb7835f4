#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Issue 16: what a session sees after Galera brute-force-aborted its transaction while it was
idle between statements (another node committed a write to a row the transaction had locked).

  bf_abort_idle.py DIR [--trials N]

On node 1: autocommit off, UPDATE a row, INSERT 'A' (the work the abort must undo); on node 2,
an autocommit UPDATE of the same row (node 1's applier aborts node 1's transaction). Then node 1
sends, per case, the next command roostd could send: SAVEPOINT, ROLLBACK TO SAVEPOINT, a
SELECT, a multi-statement, or COM_STMT_CLOSE of a prepared statement followed by a prepared
INSERT; then INSERT 'B' and marker + COMMIT. Prints each answer and the rows left. Expected (and
measured on MariaDB 10.11 / Galera 26.4): the first command that can answer gets 1213, 'A' is
gone, and whatever the session sends after it runs in a NEW transaction — so a client must
refuse every statement after a 1213 until its ROLLBACK (roostd: tx_aborted), or it would commit
the tail of a transaction whose head was undone.
"""
import argparse, ctypes, os, sys, time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cert_stress import Conn, lib  # noqa: E402

lib.mysql_stmt_init.restype = ctypes.c_void_p
lib.mysql_stmt_init.argtypes = [ctypes.c_void_p]
lib.mysql_stmt_prepare.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_ulong]
lib.mysql_stmt_execute.argtypes = [ctypes.c_void_p]
lib.mysql_stmt_close.argtypes = [ctypes.c_void_p]
lib.mysql_stmt_errno.argtypes = [ctypes.c_void_p]
lib.mysql_stmt_errno.restype = ctypes.c_uint


def prepared(c, sql):
    """Prepares and executes sql; returns (errno, statement or None)."""
    s = lib.mysql_stmt_init(c.db)
    if lib.mysql_stmt_prepare(s, sql.encode(), len(sql.encode())) != 0:
        e = lib.mysql_stmt_errno(s)
        lib.mysql_stmt_close(s)
        return e, None
    if lib.mysql_stmt_execute(s) != 0:
        return lib.mysql_stmt_errno(s), s
    return 0, s


def rows(d):
    c = Conn(d, 2)
    c.q("SET SESSION wsrep_sync_wait = 15")
    sql = b"SELECT GROUP_CONCAT(tag ORDER BY id) FROM bf_rows"
    lib.mysql_real_query(c.db, sql, len(sql))
    res = lib.mysql_store_result(c.db)
    row = lib.mysql_fetch_row(res)
    tags = row[0].decode() if row and row[0] else ""
    lib.mysql_free_result(res)
    c.q("DELETE FROM bf_rows")
    c.close()
    return tags


CASES = {
    "SAVEPOINT": "SAVEPOINT roost_req",
    "ROLLBACK TO SAVEPOINT": "ROLLBACK TO SAVEPOINT roost_req",
    "SELECT": "SELECT 1",
    "multi-statement": "SET autocommit = 0; INSERT INTO bf_rows (tag) VALUES ('S')",
    "COM_STMT_CLOSE, then a prepared INSERT": None,
}


def trial(d, name, sql):
    c1, c2 = Conn(d, 1), Conn(d, 2)
    c1.q("SET autocommit = 0")
    e, last = prepared(c1, "UPDATE bf_a SET v = v + 1 WHERE id = 1")
    e2, s = prepared(c1, "INSERT INTO bf_rows (tag) VALUES ('A')")
    c1.q("SAVEPOINT roost_req")
    c2.q("UPDATE bf_a SET v = v + 100 WHERE id = 1")  # node 1's applier aborts c1's transaction
    time.sleep(0.5)
    if sql is None:
        lib.mysql_stmt_close(s)  # no answer comes for COM_STMT_CLOSE
        first, _ = prepared(c1, "INSERT INTO bf_rows (tag) VALUES ('P')")
    else:
        first = c1.q(sql)[0]
    eb = c1.q("INSERT INTO bf_rows (tag) VALUES ('B')")[0]
    em = c1.q("INSERT INTO bf_rows (tag) VALUES ('M'); COMMIT")[0]
    c1.close()
    c2.close()
    print(f"{name}: next command {first}, then INSERT B {eb}, marker + COMMIT {em}; rows left: "
          f"{rows(d) or 'none'}", flush=True)
    return first == 1213


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--trials", type=int, default=2)
    a = ap.parse_args()
    c = Conn(a.dir, 1)
    for sql in ("DROP TABLE IF EXISTS bf_a, bf_rows",
                "CREATE TABLE bf_a (id INT PRIMARY KEY, v BIGINT NOT NULL)",
                "CREATE TABLE bf_rows (id INT AUTO_INCREMENT PRIMARY KEY, tag VARCHAR(64))",
                "INSERT INTO bf_a VALUES (1, 0)"):
        c.q(sql)
    c.close()
    time.sleep(1)
    ok = True
    for _ in range(a.trials):
        for name, sql in CASES.items():
            ok = trial(a.dir, name, sql) and ok
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
