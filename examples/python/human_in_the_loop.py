# SPDX-License-Identifier: MIT
"""A human-in-the-loop agent without a browser: it waits on its inbox and asks a person at the
terminal about each request. Approved → ack; rejected → quarantine with the reason; "later" →
retry in ten minutes. The lease is extended while the person thinks.

    python examples/python/human_in_the_loop.py --agent approvals --state-dir ./approvals
"""

from __future__ import annotations

import argparse
import json
import os

import roost


def ask(event: roost.Event) -> None:
    print(f"\nRequest {event.event_id}:\n{json.dumps(event.payload, indent=2)}")
    answer = input("approve? [y]es / [n]o / [l]ater: ").strip().lower()
    if answer.startswith("n"):
        raise roost.Quarantine("rejected: " + (input("why? ") or "no reason given"))
    if answer.startswith("l"):
        raise roost.Retry(after=600, reason="deferred by the reviewer")
    print("approved")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--state-dir", required=True)
    a = ap.parse_args()
    roost.Agent(
        ask,
        agent_id=a.agent,
        state_dir=a.state_dir,
        base_url=os.environ.get("ROOST_SERVER"),
        token=os.environ["ROOST_TOKEN"],
        concurrency=1,  # one question at a time
        lease_s=120,  # extended every minute while the person answers
    ).run()


if __name__ == "__main__":
    main()
