#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What one big publish costs the store's writer (issue 33): a benchmark, never gating.

    scripts/bench_big_publish.py ROOST ROOSTD [ROOSTD ...] [--rounds R] [--fanout N] [--batch N]
                                 [--count C] [--store URL] [--set K=V ...]

For each roostd build in turn (rounds alternate the order), starts roostd on a fresh SQLite data
dir (store.synchronous=normal, as scripts/bench_fairness.py) or on --store's empty database, gives
one tenant --fanout agents (one event each), then publishes, one request at a time: C fan-outs
(one event of 1 KiB to every one of those agents) and C batches (--batch events of 1 KiB to one
agent). Reports per build the writer's time per publish from roostd's /metrics
(roost_store_op_duration_seconds: the publish job's statements, op="publish", and its group's
COMMIT, op="commit"; each publish is a group of its own here), in microseconds per row, and the
publishes per second the client saw. Medians over the rounds; the load average beside each.
"""
import argparse
import http.client
import json
import os
import statistics
import time

import bench_roostd
from bench_roostd import call


def op_sums(c):
    """{op: (sum seconds, count)} of roost_store_op_duration_seconds."""
    st, raw = call(c, "GET", "/metrics")
    assert st == 200, st
    out = {}
    for line in raw.decode().splitlines():
        for kind in ("_sum", "_count"):
            head = "roost_store_op_duration_seconds" + kind + "{"
            if line.startswith(head):
                labels, val = line[len(head):].split("} ")
                op = labels.split('op="')[1].split('"')[0]
                s, n = out.get(op, (0.0, 0))
                out[op] = (s + float(val), n) if kind == "_sum" else (s, n + int(float(val)))
    return out


def delta(a, b, op):
    s0, n0 = a.get(op, (0.0, 0))
    s1, n1 = b.get(op, (0.0, 0))
    return s1 - s0, n1 - n0


def run_one(roostd, roost, a):
    rd = bench_roostd.start(roostd, "roost-bench-bigpub-", a.store,
                            ["limits.max_recipients=%d" % max(a.fanout, 1000)] + a.set)
    try:
        port = rd.port
        tok = bench_roostd.mint(roost, rd, "ta", "agent:*:publish")
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
        recips = ["fa.%06d" % i for i in range(a.fanout)]
        st, raw = call(c, "POST", "/api/v1/events", tok, {"recipients": recips, "payload": {"n": 1}})
        assert st in (200, 201), (st, raw[:300])
        blob = "y" * 1024
        bodies = {
            "fanout": json.dumps({"recipients": recips, "payload": {"b": blob}}).encode(),
            "batch": json.dumps({"events": [{"recipients": ["fa.pub"], "payload": {"b": blob}}
                                            for _ in range(a.batch)]}).encode(),
        }
        rows = {"fanout": a.fanout, "batch": a.batch}
        res = {}
        for kind in ("fanout", "batch"):
            m0 = op_sums(c)
            t0 = time.monotonic()
            for _ in range(a.count):
                c.request("POST", "/api/v1/events", body=bodies[kind],
                          headers={"Authorization": "Bearer " + tok,
                                   "Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                assert r.status in (200, 201), r.status
            wall = time.monotonic() - t0
            m1 = op_sums(c)
            ps, pn = delta(m0, m1, "publish")
            cs, cn = delta(m0, m1, "commit")
            assert pn == a.count, (kind, pn)
            res[kind] = {
                "stmt_us_row": ps / pn / rows[kind] * 1e6,
                "commit_us_row": cs / max(cn, 1) / rows[kind] * 1e6,
                "txn_ms": (ps / pn + cs / max(cn, 1)) * 1e3,
                "per_s": a.count / wall,
            }
        res["load"] = os.getloadavg()[0]
        return res
    finally:
        bench_roostd.stop(rd)
        bench_roostd.cleanup(rd)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("roost")
    ap.add_argument("roostd", nargs="+")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--fanout", type=int, default=10000)
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--count", type=int, default=10, help="publishes of each kind per run")
    ap.add_argument("--store")
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()
    runs = {b: [] for b in a.roostd}
    print("load average at the start: %.2f %.2f %.2f (%d CPUs)" % (os.getloadavg() +
                                                                   (os.cpu_count(),)))
    for r in range(a.rounds):
        order = a.roostd if r % 2 == 0 else list(reversed(a.roostd))
        for b in order:
            res = run_one(b, a.roost, a)
            runs[b].append(res)
            print("round %d %s: fan-out %.1f + %.1f us/row (%.0f ms, %.2f/s), batch %.1f + %.1f "
                  "us/row (%.1f ms, %.2f/s), load %.2f" % (
                      r + 1, b, res["fanout"]["stmt_us_row"], res["fanout"]["commit_us_row"],
                      res["fanout"]["txn_ms"], res["fanout"]["per_s"],
                      res["batch"]["stmt_us_row"], res["batch"]["commit_us_row"],
                      res["batch"]["txn_ms"], res["batch"]["per_s"], res["load"]), flush=True)
    print("\n| build | kind | statements us/row | COMMIT us/row | transaction ms | publishes/s |"
          " load |")
    print("|---|---|---|---|---|---|---|")
    for b in a.roostd:
        for kind, n in (("fanout", a.fanout), ("batch", a.batch)):
            med = {k: statistics.median(x[kind][k] for x in runs[b])
                   for k in ("stmt_us_row", "commit_us_row", "txn_ms", "per_s")}
            print("| %s | %s of %d | %.1f | %.1f | %.1f | %.2f | %s |" % (
                b, "fan-out" if kind == "fanout" else "batch", n, med["stmt_us_row"],
                med["commit_us_row"], med["txn_ms"], med["per_s"],
                "–".join("%.1f" % x["load"] for x in runs[b])))


if __name__ == "__main__":
    main()
