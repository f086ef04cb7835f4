#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The chaos checker (doc/RELIABILITY.md): reads a run directory written by tests/chaos/chaos.py
(the final database rows, every publish answer, the fault log, every handler and agent log, the
cursor followers' walks, roostd's RSS) and checks the invariants. Prints a table of figures and
every violation; exits 1 on any violation.

  check.py RUN_DIR
"""
import collections
import glob
import json
import os
import re
import statistics
import sys

# A fault's window: from its start to its end plus this much (reconnects, lease expiry, backoff).
GRACE_S = 10.0
# Work must flow again this soon after a fault ends.
RECOVERY_MAX_S = 60.0
RSS_MAX_KB = 128 * 1024
STATUS = {0: "scheduled", 1: "pending", 2: "claimed", 3: "completed", 4: "quarantined",
          5: "expired"}
FINAL = {"normal": {"completed"}, "delayed": {"completed"}, "patch": {"completed"},
         "ttl": {"completed", "expired"}, "ttl_dead": {"expired"},
         "poison": {"quarantined"}, "poison65": {"quarantined"}}


def load_ndjson(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


class Checker:
    def __init__(self, run_dir):
        self.dir = run_dir
        self.violations = []
        self.fig = collections.OrderedDict()
        with open(os.path.join(run_dir, "meta.json")) as f:
            self.meta = json.load(f)
        self.lease_s = self.meta["lease_s"]
        self.faults = load_ndjson(os.path.join(run_dir, "faults.ndjson"))
        self.publishes = load_ndjson(os.path.join(run_dir, "publishes.ndjson"))
        with open(os.path.join(run_dir, "rows.json")) as f:
            self.db = json.load(f)
        followers = load_ndjson(os.path.join(run_dir, "followers.ndjson"))
        self.followers = followers[-1] if followers else {}
        self.worker_node = {w[0]: w[2] for w in self.meta["workers"]}

    def bad(self, what, detail):
        self.violations.append((what, detail))

    def in_window(self, t0, t1=None):
        t1 = t0 if t1 is None else t1
        return any(f["start"] - 0.5 <= t1 and t0 <= f["end"] + GRACE_S for f in self.faults)

    # ---- publishes against rows ----

    def check_publishes(self):
        keys = {}
        answers = collections.Counter()
        for rec in self.publishes:
            answers[rec["status"]] += 1
            for i, it in enumerate(rec["items"]):
                k = keys.setdefault(it["key"], dict(it, attempts=[], ids=set(), seqs=set(),
                                                    producer=rec["p"]))
                k["attempts"].append((rec["status"], rec.get("code")))
                if rec["status"] in (200, 201):
                    ev = rec["events"][i]
                    # A duplicate names a row an earlier attempt wrote: that attempt must have
                    # been answered 2xx or not at all (or 503 unavailable: outcome unknown).
                    if ev["duplicate"] and not k["ids"] and not any(
                            s == -1 or (s == 503 and c == "unavailable")
                            for s, c in k["attempts"][:-1]):
                        self.bad("row for a publish answered with an error",
                                 f"{it['key']}: {k['attempts']}, then a duplicate")
                    k["ids"].add(ev["event_id"])
                    k["seqs"].add(ev["seq"])
            if rec["status"] >= 500 and not self.in_window(rec["t0"], rec["t"]):
                self.bad("5xx outside a fault window",
                         f"publish at {rec['t']:.3f} answered {rec['status']} {rec.get('code')}")
            if rec["status"] == -1 and not self.in_window(rec["t0"], rec["t"]):
                self.bad("no answer outside a fault window",
                         f"publish at {rec['t']:.3f}: {rec.get('error')}")
            if 400 <= rec["status"] < 500 and rec["status"] != 429:
                self.bad("publish refused", f"{rec['items'][0]['key']}: {rec['status']} "
                                            f"{rec.get('code')}")
        self.keys = keys
        rows_by_key = {}
        for r in self.db["inbox"]:
            if r["idempotency_key"] not in keys:
                self.bad("row nobody published", f"{r['event_id']} key {r['idempotency_key']}")
                continue
            rows_by_key[r["idempotency_key"]] = r
        self.rows_by_key = rows_by_key
        self.rows_by_id = {r["event_id"]: r for r in self.db["inbox"]}
        final = collections.Counter()
        kinds = collections.Counter()
        unanswered = 0
        for key, k in keys.items():
            kinds[k["kind"]] += 1
            r = rows_by_key.get(key)
            answered = bool(k["ids"])
            if answered:
                if r is None:
                    self.bad("lost: answered 2xx, no row", key)
                    continue
                if k["ids"] != {r["event_id"]} or k["seqs"] != {r["seq"]}:
                    self.bad("answer differs from row", f"{key}: {k['ids']} {k['seqs']} vs "
                                                        f"{r['event_id']} {r['seq']}")
                if r["agent_id"] != k["agent"]:
                    self.bad("row of another agent", key)
            else:
                unanswered += 1
                ambiguous = any(s == -1 or (s == 503 and c == "unavailable")
                                for s, c in k["attempts"])
                if r is not None and not ambiguous:
                    self.bad("row for a publish answered with an error", f"{key}: {k['attempts']}")
                if r is None:
                    continue
            status = STATUS.get(r["status"], str(r["status"]))
            final[status] += 1
            if status in ("scheduled", "pending", "claimed"):
                self.bad("lost: never finished", f"{key} ({k['kind']}) is {status}")
            elif status not in FINAL[k["kind"]]:
                self.bad(f"{status} but {k['kind']}", key)
        self.fig["events published (keys)"] = len(keys)
        self.fig["  by kind"] = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
        self.fig["  final status"] = ", ".join(f"{k} {n}" for k, n in sorted(final.items()))
        self.fig["publish answers"] = ", ".join(f"{'none' if s == -1 else s} {n}"
                                                for s, n in sorted(answers.items()))
        self.fig["publishes never answered 2xx"] = unanswered
        self.fig["lost (answered, not finished or no row)"] = sum(
            1 for v in self.violations if v[0].startswith("lost"))

    # ---- sequences and cursor walks ----

    def check_sequences(self):
        by_agent = collections.defaultdict(list)
        for r in self.db["inbox"]:
            by_agent[r["agent_id"]].append(r)
        heads = {a["agent_id"]: a["next_seq"] - 1 for a in self.db["agents"]}
        for agent, rows in by_agent.items():
            seqs = sorted(r["seq"] for r in rows)
            if seqs != list(range(1, len(seqs) + 1)) or heads.get(agent) != len(seqs):
                self.bad("sequence gap in the store", f"{agent}: {len(seqs)} rows, head "
                                                      f"{heads.get(agent)}")
        walked = 0
        for agent, f in self.followers.items():
            seen = f["seen"]
            walked += len(seen)
            seqs = [s for s, _ in seen]
            if seqs != list(range(1, len(seqs) + 1)):
                first = next((i for i, s in enumerate(seqs) if s != i + 1), None)
                self.bad("cursor walk not gap-free and ordered",
                         f"{agent}: at position {first}: {seqs[max(0, first - 2):first + 3]}")
            rows = {r["seq"]: r["event_id"] for r in by_agent.get(agent, [])}
            if len(seen) != len(rows):
                self.bad("cursor walk incomplete", f"{agent}: walked {len(seen)}, rows {len(rows)}")
            for s, eid in seen:
                if rows.get(s) != eid:
                    self.bad("cursor walk differs from the store", f"{agent} seq {s}: {eid}")
                    break
            for e in f["errors"]:
                if isinstance(e["status"], int) and e["status"] >= 500 and \
                        not self.in_window(e["t"]):
                    self.bad("5xx outside a fault window", f"inbox read {agent} at {e['t']:.3f}: "
                                                           f"{e['status']} {e['code']}")
        self.fig["cursor walks: events read in order"] = walked

    def check_state(self):
        expect = collections.defaultdict(dict)
        for key, k in self.keys.items():
            if k["kind"] != "patch" or key not in self.rows_by_key:
                continue
            cur = expect[k["agent"]].get(f"p{k['producer']}")
            if cur is None or k["patch"] > cur:
                expect[k["agent"]][f"p{k['producer']}"] = k["patch"]
        states = {a["agent_id"]: a["state"] for a in self.db["agents"]}
        n = 0
        for agent, want in expect.items():
            got = states.get(agent, {})
            for field, v in want.items():
                n += 1
                if got.get(field) != v:
                    self.bad("state patch lost or out of order",
                             f"{agent}.{field} = {got.get(field)}, last committed patch {v}")
        self.fig["state patches checked (agent x producer)"] = n

    # ---- handler runs ----

    def load_runs(self):
        runs = []
        for path in sorted(glob.glob(os.path.join(self.dir, "w*.handler.log"))):
            running = {}  # (worker, pid) -> run; pids are reused, so an S replaces an old one
            with open(path) as f:
                for line in f:
                    p = line.split()
                    if len(p) == 7 and p[0] == "S":
                        running[(p[2], p[6])] = {"s": float(p[1]), "w": p[2], "eid": p[3],
                                                 "attempt": int(p[4]), "e": None, "rc": None}
                        runs.append(running[(p[2], p[6])])
                    elif len(p) == 6 and p[0] == "E" and (p[2], p[5]) in running:
                        r = running.pop((p[2], p[5]))
                        if r["eid"] == p[3]:
                            r["e"], r["rc"] = float(p[1]), int(p[4])
        by_event = collections.defaultdict(list)
        for r in runs:
            by_event[r["eid"]].append(r)
        for lst in by_event.values():
            lst.sort(key=lambda r: r["s"])
        refused = collections.Counter()
        for path in glob.glob(os.path.join(self.dir, "w*.agent.log")):
            with open(path) as f:
                for m in re.finditer(r"ack of (evt_\w+) refused", f.read()):
                    refused[m.group(1)] += 1
        return by_event, refused

    def kill_after(self, w, t0, t1):
        """The first kill of worker w overlapping [t0, t1] (its start is taken just before the
        signal, so a run may begin between the two)."""
        return next((f for f in self.faults if f["kind"] == "worker_kill" and f["target"] == w
                     and f["start"] <= t1 and t0 <= f["end"]), None)

    def lease_fault(self, w, t0, t1):
        """A fault (not a worker kill) overlapping [t0, t1] that can cost worker w its lease or
        its ack: anything on its node, its proxy, the store or the clock."""
        for f in self.faults:
            if f["kind"] == "worker_kill" or not (f["start"] <= t1 and t0 <= f["end"] + 1):
                continue
            tgt = f["target"]
            node = self.worker_node[w]
            # A kill or a clock jump of another node, or a cut of another node's agents, leaves
            # this worker's lease and ack alone; a stopped node can hold its claim or ack
            # request; everything on the store concerns every worker.
            if f["kind"] == "node_kill" and tgt != f"node{node}":
                continue
            if tgt.startswith("agents") and tgt != f"agents{node}":
                continue
            return f
        return None

    def check_runs(self):
        by_event, refused = self.load_runs()
        classes = collections.Counter()
        runs_total = sum(len(v) for v in by_event.values())
        doubles = unknown_fate = 0
        for eid, runs in by_event.items():
            row = self.rows_by_id.get(eid)
            if row is None:
                self.bad("handler ran an event with no row", eid)
                continue
            key = row["idempotency_key"]
            kind = self.keys.get(key, {}).get("kind")
            for prev, nxt in zip(runs, runs[1:]):
                if prev["rc"] not in (None, 0):
                    continue  # a failed run is retried: a retry, not a re-run
                # The fault must come while the run or its ack was in flight: before the run
                # ended and its ack had a lease's time to get through.
                if prev["e"] is None:
                    f = self.kill_after(prev["w"], prev["s"], nxt["s"])
                    cls = "worker killed mid-run" if f else None
                    if f is None:
                        f = self.lease_fault(prev["w"], prev["s"], min(nxt["s"],
                                                                       prev["s"] + self.lease_s))
                        cls = f"lease lost mid-run ({f['kind']})" if f else None
                else:
                    end = min(nxt["s"], prev["e"] + self.lease_s)
                    f = self.kill_after(prev["w"], prev["e"] - 0.2, end)
                    cls = "worker killed before its ack" if f else None
                    if f is None:
                        f = self.lease_fault(prev["w"], prev["s"], end)
                        cls = f"ack lost or late ({f['kind']})" if f else None
                if cls is None:
                    self.bad("unexplained handler re-run",
                             f"{eid} ({kind}): {prev['w']} ran at {prev['s']:.3f} "
                             f"(end {prev['e']}, rc {prev['rc']}), {nxt['w']} again at "
                             f"{nxt['s']:.3f}")
                    cls = "unexplained"
                classes[cls] += 1
            # Two successful runs are a double completion when the first one's ack was
            # accepted. Its agent's keeper retries an ack until roostd answers definitively and
            # logs a refusal (409), so an agent that lived on for 10 s past the second run and
            # logged no refusal had its first ack accepted. One killed meanwhile took the ack's
            # fate with it (its restart forgets a refused recovery ack): counted, not judged.
            ok_runs = [r for r in runs if r["rc"] == 0]
            refusals = refused.get(eid, 0)
            for r1, r2 in zip(ok_runs, ok_runs[1:]):
                if self.kill_after(r1["w"], r1["e"] - 0.2, r2["e"] + 10):
                    unknown_fate += 1
                elif refusals > 0:
                    refusals -= 1
                else:
                    doubles += 1
                    self.bad("completed twice", f"{eid}: runs by {r1['w']} at {r1['s']:.3f} "
                                                f"and {r2['w']} at {r2['s']:.3f}, both acked")
            if row["status"] == 3 and ok_runs == 0:
                self.bad("completed without a successful handler run", eid)
            if kind == "poison" and len(runs) > self.meta["max_attempts"] + sum(classes.values()):
                self.bad("poison ran past claim.max_attempts", f"{eid}: {len(runs)} runs")
        for r in self.db["inbox"]:
            if r["status"] == 3 and r["event_id"] not in by_event:
                self.bad("completed without a handler run", r["event_id"])
        self.by_event = by_event
        self.fig["handler runs"] = runs_total
        self.fig["double completions"] = doubles
        self.fig["second successful runs, first ack's fate lost in a kill"] = unknown_fate
        self.fig["handler re-runs"] = sum(classes.values())
        for c, n in sorted(classes.items()):
            self.fig[f"  {c}"] = n

    # ---- faults, recovery, resources ----

    def check_faults(self):
        kinds = collections.Counter(f["kind"] for f in self.faults)
        self.fig["faults"] = len(self.faults)
        for k, n in sorted(kinds.items()):
            self.fig[f"  {k}"] = n
        done = sorted(r["e"] for runs in self.by_event.values() for r in runs if r["rc"] == 0)
        by_worker = collections.defaultdict(list)
        for runs in self.by_event.values():
            for r in runs:
                if r["rc"] == 0:
                    by_worker[r["w"]].append(r["e"])
        for v in by_worker.values():
            v.sort()
        pubs = sorted(r["t"] for r in self.publishes if r["status"] in (200, 201))
        rec = collections.defaultdict(list)
        last_useful = self.meta.get("drain_start", 0)
        for f in self.faults:
            if f["kind"] == "worker_kill":
                pool = by_worker.get(f["target"], [])
            elif f["target"].startswith(("node", "agents")) and "+" not in f["target"]:
                n = int(re.sub(r"\D", "", f["target"]) or 0)
                pool = sorted(t for w, v in by_worker.items() if self.worker_node[w] == n for t in v)
            else:
                pool = done
            t_work = next((t for t in pool if t > f["end"]), None)
            t_pub = next((t for t in pubs if t > f["end"]), None)
            if f["end"] + RECOVERY_MAX_S > last_useful and (t_work is None or t_pub is None):
                continue  # too close to the end of publishing to judge
            if t_work is None or t_work - f["end"] > RECOVERY_MAX_S or t_pub is None:
                self.bad("work did not flow again", f"{f['kind']} {f['target']} ended at "
                                                    f"{f['end']:.3f}")
                continue
            rec[f["kind"]].append(max(t_work, t_pub) - f["end"])
        for k, v in sorted(rec.items()):
            self.fig[f"recovery {k} (s): median/max"] = f"{statistics.median(v):.2f} / {max(v):.2f}"
        rss = self.meta.get("rss_kb", {})
        for name, kb in sorted(rss.items()):
            self.fig[f"max RSS {name} (MiB)"] = f"{kb / 1024:.1f}"
            if kb > RSS_MAX_KB:
                self.bad("roostd RSS unbounded", f"{name}: {kb} KiB > {RSS_MAX_KB}")
        for name, rc in self.meta.get("exit_codes", {}).items():
            if rc != 0:
                self.bad("unclean exit at the end", f"{name}: {rc}")
        if not self.meta.get("drained"):
            self.bad("did not drain", "open events left after the drain timeout")

    def report(self):
        m = self.meta
        print(f"chaos run: profile {m['profile']}, seed {m['seed']}, {m['minutes']} min, "
              f"{m.get('ended', 0) - m['started']:.0f} s wall")
        width = max(len(k) for k in self.fig)
        for k, v in self.fig.items():
            print(f"  {k:<{width}}  {v}")
        print(f"  {'violations':<{width}}  {len(self.violations)}")
        shown = collections.Counter()
        for what, detail in self.violations:
            shown[what] += 1
            if shown[what] <= 10:
                print(f"VIOLATION {what}: {detail}")
        for what, n in shown.items():
            if n > 10:
                print(f"VIOLATION {what}: ... {n - 10} more")
        with open(os.path.join(self.dir, "summary.json"), "w") as f:
            json.dump({"figures": self.fig, "violations": self.violations}, f, indent=1,
                      default=str)
        return 1 if self.violations else 0

    def main(self):
        self.check_publishes()
        self.check_sequences()
        self.check_state()
        self.check_runs()
        self.check_faults()
        return self.report()


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(Checker(sys.argv[1]).main())
