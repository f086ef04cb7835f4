#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Issue 16: what a Galera node SIGSTOPped past evs.suspect_timeout says about itself after
SIGCONT, next to what the rest of the cluster says.

  ghost_window.py DIR [--trials N] [--pause S]

Before the stop, one connection to node 1 and one to node 2 are opened; after SIGCONT both are
polled every 50 ms for wsrep_ready, wsrep_local_state_comment, wsrep_cluster_status,
wsrep_cluster_size and wsrep_cluster_conf_id until node 1 is Synced in the same view as node 2.
Prints, per trial, how long node 1 kept claiming Synced/Primary in its old view (conf_id below
node 2's) and how long until it was back for real. Right after SIGCONT it also reads, on a node-1
session opened before the stop, with wsrep_sync_wait = 1, a table node 2 inserted into during the
stop: how long the read took and whether it saw node 2's rows.
"""
import argparse, os, signal, subprocess, sys, time

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cert_stress import Conn, GALERA, lib  # noqa: E402


def status(c):
    e, _, _ = c.q("SELECT 1")
    if e:
        return None
    sql = (b"SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready','wsrep_local_state_comment',"
           b"'wsrep_cluster_status','wsrep_cluster_size','wsrep_cluster_conf_id')")
    if lib.mysql_real_query(c.db, sql, len(sql)) != 0:
        return None
    res = lib.mysql_store_result(c.db)
    out = {}
    while True:
        r = lib.mysql_fetch_row(res)
        if not r:
            break
        out[r[0].decode().replace("wsrep_", "")] = r[1].decode()
    lib.mysql_free_result(res)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--trials", type=int, default=3)
    ap.add_argument("--pause", type=float, default=8)
    a = ap.parse_args()
    for t in range(a.trials):
        subprocess.run(["sh", GALERA, "wait", a.dir, "1"], check=True, capture_output=True)
        c1, c2 = Conn(a.dir, 1), Conn(a.dir, 2)
        c2.q("CREATE TABLE IF NOT EXISTS gw (id INT AUTO_INCREMENT PRIMARY KEY)")
        c1.q("SET SESSION wsrep_sync_wait = 1")
        before = status(c2)
        pid = int(subprocess.run(["sh", GALERA, "pid", a.dir, "1"], check=True,
                                 capture_output=True, text=True).stdout)
        os.kill(pid, signal.SIGSTOP)
        time.sleep(a.pause / 2)
        for _ in range(5):
            c2.q("INSERT INTO gw VALUES ()")
        time.sleep(a.pause / 2)
        os.kill(pid, signal.SIGCONT)
        t0 = time.time()
        e, _, n1_rows = c1.q("SELECT COUNT(*) FROM gw")
        read_s = time.time() - t0
        _, _, n2_rows = c2.q("SELECT COUNT(*) FROM gw")
        print(f"trial {t}: causal read on node 1 right after SIGCONT: {read_s:.2f}s, "
              f"error {e}, rows {n1_rows} (node 2: {n2_rows})", flush=True)
        ghost_until, back_at, trace, last = None, None, [], None
        while time.time() - t0 < 60:
            s1 = status(c1)
            if s1 is None:  # the node dropped this session: a new one
                c1.close()
                try:
                    c1 = Conn(a.dir, 1)
                except RuntimeError:
                    pass
                time.sleep(0.05)
                continue
            s2 = status(c2)
            dt = time.time() - t0
            key = (s1.get("ready"), s1.get("local_state_comment"), s1.get("cluster_status"),
                   s1.get("cluster_size"), s1.get("cluster_conf_id"), s2.get("cluster_conf_id"))
            if key != last:
                trace.append(f"{dt:.2f}s n1={key[:5]} n2_conf={key[5]}")
                last = key
            ghost = s1.get("local_state_comment") == "Synced" and \
                int(s1.get("cluster_conf_id", "0")) < int(s2.get("cluster_conf_id", "0"))
            if ghost:
                ghost_until = dt
            if s1.get("local_state_comment") == "Synced" and \
                    s1.get("cluster_conf_id") == s2.get("cluster_conf_id") and \
                    s1.get("cluster_size") == "3":
                back_at = dt
                break
            time.sleep(0.05)
        print(f"trial {t}: pause {a.pause}s; node 2 conf_id before {before.get('cluster_conf_id')}; "
              f"node 1 said Synced in its old view until {ghost_until}s after SIGCONT; "
              f"back for real at {back_at}s", flush=True)
        for line in trace:
            print("   ", line)
        c1.close()
        c2.close()


if __name__ == "__main__":
    main()
