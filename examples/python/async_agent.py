# SPDX-License-Identifier: MIT
"""An asyncio agent: ``async def`` handlers on the application's own loop, beside its tasks.

    python examples/python/async_agent.py --agent llm-1 --state-dir ./llm-state
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal

import roost


async def handle(event: roost.Event) -> None:
    prompt = (event.payload or {}).get("prompt", "")
    await asyncio.sleep(0.1)  # stands for an awaited model call
    print(f"{event.event_id}: answered {prompt!r}")


async def heartbeat(agent: roost.Agent) -> None:
    while True:
        s = agent.status()
        print(f"connection={s.connection} handled={s.handled} cursor={s.cursor}")
        await asyncio.sleep(30)


async def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--agent", required=True)
    ap.add_argument("--state-dir", required=True)
    a = ap.parse_args()
    logging.basicConfig(level=logging.INFO)

    def on_state(st: roost.AgentState) -> None:
        print(f"resync after 410: state {st.state} at cursor {st.cursor}")

    agent = roost.Agent(
        handle,
        agent_id=a.agent,
        state_dir=a.state_dir,
        base_url=os.environ.get("ROOST_SERVER"),
        token=roost.TokenFile(os.environ.get("ROOST_TOKEN_FILE", "token")),
        concurrency=8,
        on_state=on_state,
        handle_signals=False,  # this application handles its signals itself
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, agent.stop)
    beat = asyncio.ensure_future(heartbeat(agent))
    try:
        await agent.run_async()
    finally:
        beat.cancel()


if __name__ == "__main__":
    asyncio.run(main())
