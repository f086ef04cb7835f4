#!/usr/bin/env python3
"""Where a paced event's publish -> ack latency goes, from roost_load's BENCH_EVENT_TRACE file.

Joins each event's producer line (P) and consumer line (A) on its scheduled time and splits its
latency into stages, in order:
  lag       scheduled -> publish sent (the producer behind its schedule)
  publish   publish sent -> answered (HTTP, the writer's queue, statements, COMMIT)
  wait      publish answered -> the claim that took it was sent (0 when a claim was waiting)
  claim     max(publish answered, claim sent) -> claim answered (the wake-up and the claim)
  behind    claim answered -> its ack sent (the acks of the events before it in that claim)
  ack       ack sent -> answered
Prints each stage's p50, p90 and p99 over every event, then the mean of each stage over the
slowest 1 % (and 5 %) of events: what the tail is made of. Usage: event_stages.py TRACE
"""
import sys

STAGES = ("lag", "publish", "wait", "claim", "behind", "ack")


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else 0.0


def main():
    pubs, acks = {}, []
    with open(sys.argv[1]) as f:
        for line in f:
            p = line.split()
            if p[0] == "P":
                pubs[int(p[1])] = (int(p[2]), int(p[3]))
            elif p[0] == "A":
                acks.append([int(x) for x in p[1:]])
    rows = []
    for t0, cs, ce, s, e, i, n in acks:
        if t0 not in pubs:
            continue
        ps, pe = pubs[t0]
        ms = 1e-6
        start = max(cs, pe)
        rows.append({
            "total": (e - t0) * ms,
            "lag": (ps - t0) * ms,
            "publish": (pe - ps) * ms,
            "wait": max(0, cs - pe) * ms,
            "claim": max(0, ce - start) * ms,
            "behind": (s - ce) * ms,
            "ack": (e - s) * ms,
            "index": i,
            "claimed": n,
        })
    if not rows:
        print("no joined events")
        return 1
    print(f"events {len(rows)} (acks {len(acks)}, publishes {len(pubs)})")
    print(f"{'stage':8} {'p50':>7} {'p90':>7} {'p99':>7}   ms")
    for k in ("total",) + STAGES:
        xs = [r[k] for r in rows]
        print(f"{k:8} {pct(xs, .5):7.2f} {pct(xs, .9):7.2f} {pct(xs, .99):7.2f}")
    rows.sort(key=lambda r: r["total"])
    for share in (0.01, 0.05):
        tail = rows[int(len(rows) * (1 - share)):]
        mean = {k: sum(r[k] for r in tail) / len(tail) for k in ("total",) + STAGES}
        parts = ", ".join(f"{k} {mean[k]:.2f}" for k in STAGES)
        idx = sum(r["index"] for r in tail) / len(tail)
        n = sum(r["claimed"] for r in tail) / len(tail)
        print(f"slowest {share:.0%} ({len(tail)} events): mean total {mean['total']:.2f} ms = "
              f"{parts}; index in its claim {idx:.1f} of {n:.1f}")
    allidx = sum(r["claimed"] for r in rows) / len(rows)
    print(f"every event: claimed with {allidx:.1f} others on average (its claim's size)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
