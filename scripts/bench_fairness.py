#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""One tenant never slows another (issue 33; DESIGN 6.4): an attack benchmark, never gating.

    scripts/bench_fairness.py ROOSTD ROOST [--agents N] [--seconds S] [--store URL] [--set K=V ...]

Starts roostd (SQLite in a temp dir, or --store's empty database; --listen 127.0.0.1:0), gives tenant A N agents (default
50,000, one pending event each) and one agent holding 1,000 events of 4 KiB, then measures
tenant B's cycle -- publish one event, read it (GET inbox after the cursor), claim it, ack it --
for S seconds (default 10) idle, and again while tenant A attacks from other processes:
six loops of GET /api/v1/admin/agents?sort=age&limit=1000 and two loops of big inbox reads
(limit=1000, about 4 MiB a page). Prints B's cycles, p50 and p99 (ms) both ways, the ratio of
the p99s, the load average (a shared machine's other work moves B's idle p99 too), what A's
loops got through, and the roostd shutdown line (scans, reads_deferred).
Every request runs on a kept-alive connection of its own process, so the client's GIL is not
part of B's numbers. --scans and --reads change A's loops (one kind alone); --publishes N adds N
loops of A's big publishes (the write side: each a batch of --batch events of 1 KiB to one agent,
or with --fanout one event to that many of A's agents), which share the writers' queue with B's
publish, claim and ack; --attack-nice N runs A's client processes at nice N, so what is left of
B's loss is roostd's and not the clients' share of the CPU (A's clients never parse an answer:
they read its bytes and drop them); BENCH_STEPS=1 prints where each of B's cycles over 100 ms spent its time.
"""
import argparse
import http.client
import json
import multiprocessing as mp
import os
import sys
import time

import bench_roostd
from bench_roostd import call


def conn(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.connect()
    return c


def attacker(kind, port, token, stop, counts, idx, batch=1000, fanout=0, nice=0):
    if nice:
        os.nice(nice)  # A's client is not roostd: how much of B's loss is only the clients' CPU
    c = conn(port)
    n = 0
    blob = "y" * 1024
    while not stop.is_set():
        if kind == "scan":
            st, _ = call(c, "GET", "/api/v1/admin/agents?sort=age&limit=1000", token)
        elif kind == "publish" and fanout:
            st, _ = call(c, "POST", "/api/v1/events", token,
                         {"recipients": ["fa.%06d" % i for i in range(fanout)],
                          "payload": {"b": blob}})
        elif kind == "publish":
            st, _ = call(c, "POST", "/api/v1/events", token,
                         {"events": [{"recipients": ["fa.pub"], "payload": {"b": blob}}
                                     for _ in range(batch)]})
        else:
            st, _ = call(c, "GET", "/api/v1/agents/fa.big/inbox?limit=1000", token)
        if st < 300:  # answered; a refusal (429 past limits.admin_scans_per_s) is not a scan
            n += 1
            counts[idx] = n
        if st >= 500 and kind != "scan":
            time.sleep(0.01)


def cycles(port, token, seconds, out):
    """Tenant B's publish -> read -> claim -> ack, timed per cycle (ms)."""
    c = conn(port)
    cursor = 0
    lat = []
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        t0 = time.perf_counter()
        steps = []
        st, _ = call(c, "POST", "/api/v1/events", token,
                     {"recipients": ["fb.agent"], "payload": {"n": 1}})
        assert st in (200, 201), st
        st, raw = call(c, "GET", "/api/v1/agents/fb.agent/inbox?after_cursor=%d&limit=10" % cursor,
                       token)
        assert st == 200, (st, raw[:200])
        steps.append(time.perf_counter())
        cursor = json.loads(raw)["next_cursor"]
        st, raw = call(c, "POST", "/api/v1/agents/fb.agent/inbox/claim", token,
                       {"limit": 1, "lease_s": 30})
        assert st == 200, (st, raw[:200])
        steps.append(time.perf_counter())
        evs = json.loads(raw)["events"]
        assert evs, raw[:200]
        ev = evs[0]
        st, raw = call(c, "POST", "/api/v1/agents/fb.agent/inbox/%s/ack" % ev["event_id"], token,
                       {"lease_token": ev["lease_token"]})
        assert st == 200, (st, raw[:200])
        lat.append((time.perf_counter() - t0) * 1000.0)
        if os.environ.get("BENCH_STEPS") and lat[-1] > 100:
            steps.append(time.perf_counter())
            print("slow cycle %.0f ms: read done +%.0f claim done +%.0f ack done +%.0f" % (
                lat[-1], (steps[0] - t0) * 1000, (steps[1] - t0) * 1000, (steps[2] - t0) * 1000),
                file=sys.stderr)
    out.put(lat)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p / 100.0 * len(xs)))] if xs else float("nan")


def measure(port, token, seconds):
    q = mp.Queue()
    p = mp.Process(target=cycles, args=(port, token, seconds, q))
    p.start()
    lat = q.get()
    p.join()
    return lat


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("roostd")
    ap.add_argument("roost")
    ap.add_argument("--agents", type=int, default=50000)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--scans", type=int, default=6, help="A's admin agent-sort loops")
    ap.add_argument("--reads", type=int, default=2, help="A's big inbox read loops")
    ap.add_argument("--publishes", type=int, default=0, help="A's big publish loops")
    ap.add_argument("--batch", type=int, default=1000, help="events per big publish")
    ap.add_argument("--fanout", type=int, default=0,
                    help="big publishes as one event to this many of A's agents instead")
    ap.add_argument("--store", help="a store URL (an empty MariaDB or PostgreSQL database) "
                    "instead of SQLite in the temp dir")
    ap.add_argument("--attack-nice", type=int, default=0,
                    help="run A's client processes at this nice value (they share the machine)")
    ap.add_argument("--set", action="append", default=[])
    a = ap.parse_args()

    r = bench_roostd.start(a.roostd, "roost-bench-fair-", a.store,
                           ["limits.max_recipients=10000"] + a.set)
    try:
        port = r.port

        def mint(tenant):
            return bench_roostd.mint(a.roost, r, tenant,
                                     "agent:*:consume agent:*:publish agent:*:read tenant:admin")
        tok_a, tok_b = mint("ta"), mint("tb")

        c = conn(port)
        for start in range(0, a.agents, 10000):
            recips = ["fa.%06d" % i for i in range(start, min(a.agents, start + 10000))]
            st, raw = call(c, "POST", "/api/v1/events", tok_a,
                           {"recipients": recips, "payload": {"n": 1}})
            assert st in (200, 201), (st, raw[:300])
        blob = "x" * 4096
        for _ in range(10):
            st, raw = call(c, "POST", "/api/v1/events", tok_a,
                           {"events": [{"recipients": ["fa.big"], "payload": {"b": blob}}
                                       for _ in range(100)]})
            assert st in (200, 201), (st, raw[:300])
        st, raw = call(c, "GET", "/api/v1/agents/fa.big/inbox?limit=1000", tok_a)
        page_kib = len(raw) // 1024

        measure(port, tok_b, 1.0)  # warm-up
        idle = measure(port, tok_b, a.seconds)
        load_idle = os.getloadavg()[0]

        stop = mp.Event()
        kinds = ["scan"] * a.scans + ["read"] * a.reads + ["publish"] * a.publishes
        counts = mp.Array("l", len(kinds))
        procs = [mp.Process(target=attacker,
                            args=(k, port, tok_a, stop, counts, i, a.batch, a.fanout,
                                  a.attack_nice))
                 for i, k in enumerate(kinds)]
        for p in procs:
            p.start()
        time.sleep(1.0)  # the attack is under way before B is measured
        load0 = os.getloadavg()[0]
        busy = measure(port, tok_b, a.seconds)
        load1 = os.getloadavg()[0]
        stop.set()
        for p in procs:
            p.join(120)

        print("agents of A: %d; A's big page: %d KiB; load average %.2f idle, %.2f -> %.2f "
              "under attack (%d CPUs)" % (a.agents, page_kib, load_idle, load0, load1,
                                         os.cpu_count()))
        print("B idle:         %5d cycles, p50 %7.2f ms, p99 %7.2f ms" %
              (len(idle), pct(idle, 50), pct(idle, 99)))
        print("B under attack: %5d cycles, p50 %7.2f ms, p99 %7.2f ms" %
              (len(busy), pct(busy, 50), pct(busy, 99)))
        print("p99 under attack / idle: %.2f" % (pct(busy, 99) / pct(idle, 99)))
        print("A's scans: %d, A's big reads: %d, A's big publishes: %d (over %.0f s)" %
              (sum(counts[:a.scans]), sum(counts[a.scans:a.scans + a.reads]),
               sum(counts[a.scans + a.reads:]), a.seconds + 1))
    finally:
        bench_roostd.stop(r)
        for line in open(r.log_path):
            if "store writes" in line:
                print(line.strip())
        bench_roostd.cleanup(r)


if __name__ == "__main__":
    main()
