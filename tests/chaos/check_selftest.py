#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Proves the chaos checker (tests/chaos/check.py) can fail: a small clean run directory passes,
and each mutation that breaks one invariant makes it exit 1 naming that invariant."""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
T0 = 1_800_000_000.0


def clean_run():
    """Two events of agent a1, each published once (201) and run once by w1; one kill fault."""
    ev = [("k1", "evt_A", 1, "normal", None), ("k2", "evt_B", 2, "patch", 1)]
    publishes = [{"t0": T0 + i, "t": T0 + i + 0.01, "p": 0, "node": 0, "attempt": 1,
                  "status": 201,
                  "items": [{"key": k, "agent": "a1", "kind": kind, "patch": patch}],
                  "events": [{"event_id": eid, "agent": "a1", "seq": seq, "duplicate": False}]}
                 for i, (k, eid, seq, kind, patch) in enumerate(ev)]
    rows = {"inbox": [{"agent_id": "a1", "seq": seq, "event_id": eid, "status": 3,
                       "idempotency_key": k, "attempts": 1, "timeouts": 0, "nacks": 0}
                      for k, eid, seq, _, _ in ev],
            "agents": [{"agent_id": "a1", "next_seq": 3, "state": {"p0": 1, "last": "k2"}}]}
    handler = [f"S {T0 + 1:.6f} w1 evt_A 1 1 100", f"E {T0 + 1.1:.6f} w1 evt_A 0 100",
               f"S {T0 + 2:.6f} w1 evt_B 1 2 101", f"E {T0 + 2.1:.6f} w1 evt_B 0 101"]
    return {
        "meta": {"profile": "sqlite", "seed": 1, "minutes": 1, "lease_s": 4, "max_attempts": 4,
                 "workers": [["w1", "a1", 0]], "started": T0, "ended": T0 + 100,
                 "drain_start": T0 + 90, "drained": True, "exit_codes": {"w1": 0, "node0": 0},
                 "rss_kb": {"node0": 20000}},
        "faults": [{"kind": "worker_kill", "target": "w1", "start": T0 + 50, "end": T0 + 51}],
        "publishes": publishes,
        "rows": rows,
        "followers": {"a1": {"seen": [[1, "evt_A"], [2, "evt_B"]], "errors": []}},
        "handler": handler,
    }


def write(run, d):
    with open(os.path.join(d, "meta.json"), "w") as f:
        json.dump(run["meta"], f)
    with open(os.path.join(d, "rows.json"), "w") as f:
        json.dump(run["rows"], f)
    for name in ("faults", "publishes"):
        with open(os.path.join(d, f"{name}.ndjson"), "w") as f:
            f.writelines(json.dumps(r) + "\n" for r in run[name])
    with open(os.path.join(d, "followers.ndjson"), "w") as f:
        f.write(json.dumps(run["followers"]) + "\n")
    with open(os.path.join(d, "w1.handler.log"), "w") as f:
        f.writelines(line + "\n" for line in run["handler"])
    with open(os.path.join(d, "w1.agent.log"), "w") as f:
        f.write("")


def check(run):
    with tempfile.TemporaryDirectory() as d:
        write(run, d)
        rc = subprocess.run([sys.executable, os.path.join(HERE, "check.py"), d],
                            stdout=subprocess.PIPE, text=True).returncode
        with open(os.path.join(d, "summary.json")) as f:
            return rc, {v[0] for v in json.load(f)["violations"]}


def mutations():
    def m(fn):
        run = clean_run()
        fn(run)
        return run

    def rerun(r):  # w1 runs evt_A again later, no fault anywhere near
        r["handler"] += [f"S {T0 + 20:.6f} w1 evt_A 2 1 102", f"E {T0 + 20.1:.6f} w1 evt_A 0 102"]

    def rerun_after_kill(r):  # the same, but w1 was killed while running it: allowed
        r["handler"][0] = f"S {T0 + 49.5:.6f} w1 evt_A 1 1 100"
        del r["handler"][1]  # killed: no end line
        r["handler"] += [f"S {T0 + 52:.6f} w1 evt_A 2 1 102", f"E {T0 + 52.1:.6f} w1 evt_A 0 102"]

    def publish_5xx(r):
        r["publishes"].append(dict(r["publishes"][0], status=500, t0=T0 + 10, t=T0 + 10.1))

    def dup_after_500(r):  # k1 answered 500, then 200 duplicate: the 500 had written it
        p = r["publishes"][0]
        r["publishes"][0] = dict(p, status=500, events=None, t0=T0 + 50.5, t=T0 + 50.6)
        r["publishes"].insert(1, dict(p, status=200, events=[dict(p["events"][0],
                                                                  duplicate=True)]))

    return [
        ("clean", lambda r: None, set()),
        ("row missing", lambda r: r["rows"]["inbox"].pop(0), {"lost: answered 2xx, no row"}),
        ("row pending", lambda r: r["rows"]["inbox"][0].update(status=1),
         {"lost: never finished"}),
        ("normal expired", lambda r: r["rows"]["inbox"][0].update(status=5),
         {"expired but normal"}),
        ("extra row", lambda r: r["rows"]["inbox"].append(
            dict(r["rows"]["inbox"][0], event_id="evt_Z", idempotency_key="kz", seq=3)),
         {"row nobody published"}),
        ("seq gap", lambda r: r["rows"]["agents"][0].update(next_seq=4),
         {"sequence gap in the store"}),
        ("walk out of order", lambda r: r["followers"]["a1"].update(
            seen=[[2, "evt_B"], [1, "evt_A"]]), {"cursor walk not gap-free and ordered"}),
        ("state lost", lambda r: r["rows"]["agents"][0].update(state={}),
         {"state patch lost or out of order"}),
        ("unexplained re-run", rerun, {"unexplained handler re-run", "completed twice"}),
        ("re-run after a kill", rerun_after_kill, set()),
        ("pid reused", lambda r: r["handler"].__setitem__(
            slice(2, 4), [x.replace(" 101", " 100") for x in r["handler"][2:4]]), set()),
        ("5xx outside faults", publish_5xx, {"5xx outside a fault window"}),
        ("duplicate after 500", dup_after_500, {"row for a publish answered with an error"}),
        ("rss", lambda r: r["meta"]["rss_kb"].update(node0=10 ** 7), {"roostd RSS unbounded"}),
        ("unclean exit", lambda r: r["meta"]["exit_codes"].update(w1="timeout"),
         {"unclean exit at the end"}),
        ("completed, never run", lambda r: r["handler"].__delitem__(slice(0, 2)),
         {"completed without a handler run"}),
    ], m


def main():
    cases, m = mutations()
    passed = failed = 0
    for name, fn, want in cases:
        rc, got = check(m(fn))
        ok = bool((rc == 0) == (not want) and want <= got and (want or not got))
        print(f"{'ok  ' if ok else 'FAIL'} {name}: exit {rc}, violations {sorted(got)}")
        passed += ok
        failed += not ok
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
