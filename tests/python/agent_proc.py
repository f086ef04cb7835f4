# SPDX-License-Identifier: MIT
"""A roost.Agent process for the fault tests (tests/python/harness.py starts it).

The handler appends ``start EVENT_ID`` when it begins and ``end EVENT_ID`` when it returns to
the log file (one O_APPEND write each, so lines never interleave across processes), sleeping
``--handler-ms`` in between (or the payload's ``sleep_ms``). ``--mode async`` makes it an
``async def`` handler. A payload ``{"fail": true}`` raises, ``{"retry": S}`` raises
``roost.Retry(after=S)``, ``{"poison": "why"}`` raises ``roost.Quarantine``.
"""

from __future__ import annotations

import argparse
import asyncio
import faulthandler
import logging
import os
import signal
import sys
import time
from typing import Any

import roost


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--agent", required=True)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--log", required=True)
    ap.add_argument("--concurrency", type=int, default=1)
    ap.add_argument("--handler-ms", type=int, default=0)
    ap.add_argument("--mode", choices=("sync", "async"), default="sync")
    ap.add_argument("--lease", type=int, default=60)
    ap.add_argument("--long-poll", type=int, default=25)
    ap.add_argument("--consumer")
    a = ap.parse_args()
    faulthandler.register(signal.SIGUSR1)  # a test that times out can ask for the stacks
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(message)s")
    logging.getLogger("httpx").setLevel(logging.WARNING)
    fd = os.open(a.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)

    def note(what: str, ev: roost.Event) -> None:
        os.write(fd, f"{what} {ev.event_id} {os.getpid()}\n".encode())

    def outcome(ev: roost.Event) -> None:
        p: Any = ev.payload or {}
        if p.get("fail"):
            raise ValueError(f"failing on purpose: {ev.event_id}")
        if p.get("retry") is not None:
            raise roost.Retry(after=float(p["retry"]), reason="not yet")
        if p.get("poison"):
            raise roost.Quarantine(str(p["poison"]))

    def handle(ev: roost.Event) -> None:
        note("start", ev)
        ms = (ev.payload or {}).get("sleep_ms", a.handler_ms)
        time.sleep(ms / 1000.0)
        outcome(ev)
        note("end", ev)

    async def handle_async(ev: roost.Event) -> None:
        note("start", ev)
        ms = (ev.payload or {}).get("sleep_ms", a.handler_ms)
        await asyncio.sleep(ms / 1000.0)
        outcome(ev)
        note("end", ev)

    def on_state(st: roost.AgentState) -> None:
        os.write(fd, f"state {st.cursor} {os.getpid()}\n".encode())

    agent = roost.Agent(
        handle_async if a.mode == "async" else handle,
        agent_id=a.agent,
        state_dir=a.state_dir,
        base_url=a.url,
        token=roost.TokenFile(a.token_file),
        concurrency=a.concurrency,
        lease_s=a.lease,
        long_poll_s=a.long_poll,
        consumer=a.consumer,
        on_state=on_state,
        poll_ceiling_s=5.0,
    )
    agent.run()
    os.write(fd, f"stopped {os.getpid()} {os.getpid()}\n".encode())
    return 0


if __name__ == "__main__":
    sys.exit(main())
