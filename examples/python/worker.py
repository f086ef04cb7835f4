# SPDX-License-Identifier: MIT
"""A worker agent: handles its events on a thread pool, survives kills and restarts.

    export ROOST_SERVER=http://127.0.0.1:8080 ROOST_TOKEN=$(roost token mint ...)
    python examples/python/worker.py --agent worker-1 --state-dir ./worker-state
"""

from __future__ import annotations

import argparse
import logging
import os

import roost


def handle(event: roost.Event) -> None:
    """Returning acks the event; raising releases it (retried with backoff)."""
    task = (event.payload or {}).get("task")
    if task is None:
        raise roost.Quarantine("no task in the payload")  # poison: retrying cannot help
    if task == "later":
        raise roost.Retry(after=30, reason="the resource is busy")
    print(f"event {event.event_id} (attempt {event.attempts}): {task}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--concurrency", type=int, default=4)
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO)
    agent = roost.Agent(
        handle,
        agent_id=a.agent,
        state_dir=a.state_dir,
        base_url=os.environ.get("ROOST_SERVER"),
        token=os.environ["ROOST_TOKEN"],
        signing_key=roost.SigningKey.from_env(),
        concurrency=a.concurrency,
    )
    agent.run()  # until SIGINT/SIGTERM, which release this process's claims


if __name__ == "__main__":
    main()
