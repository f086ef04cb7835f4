# SPDX-License-Identifier: MIT
"""roost.Agent against the real roostd, in process and as a separate process under faults:
SIGKILL mid-handler, a lost ack answer, roostd restarted, the stream blocked, a cursor behind
retention, two processes on one agent id, SIGTERM, a handler longer than its lease."""

from __future__ import annotations

import asyncio
import itertools
import os
import sqlite3
import threading
import time
from typing import Any, Callable, Dict, List, Set

import pytest

from harness import AgentProc, HttpProxy, Roostd, ends, read_log, starts, wait_until

import roost

_ids = itertools.count()


def agent_name(tag: str) -> str:
    return f"pyag.{tag}.{os.getpid()}.{next(_ids)}"


def statuses(c: roost.Client, agent: str) -> Dict[str, str]:
    """Every kept event's status (from the oldest kept cursor when retention purged some)."""
    try:
        return {e.event_id: e.status or "" for e in c.iter_inbox(agent)}
    except roost.CursorExpired as gone:
        return {e.event_id: e.status or "" for e in c.iter_inbox(agent, gone.oldest_cursor or 0)}


def processed_ids(state_dir: str) -> Set[str]:
    db = sqlite3.connect(f"file:{os.path.join(state_dir, 'agent.db')}?mode=ro", uri=True)
    try:
        return {r[0] for r in db.execute("SELECT event_id FROM processed")}
    finally:
        db.close()


def run_in_thread(agent: roost.Agent) -> threading.Thread:
    t = threading.Thread(target=agent.run, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("kind", ["sync", "async"])
def test_outcomes_in_process(server: Roostd, tmp_dir: str, kind: str) -> None:
    """Ack, Retry(after), Quarantine(reason) and an exception (traceback as last_error), with
    a plain function on the pool or an async def on the loop; status() and on_conn."""
    c = roost.Client(server.url, token=server.token())
    a = agent_name("out")
    runs: Dict[str, int] = {}
    conns: List[str] = []

    def decide(ev: roost.Event) -> None:
        runs[ev.payload["k"]] = runs.get(ev.payload["k"], 0) + 1  # type: ignore[index]
        k = ev.payload["k"]  # type: ignore[index]
        if k == "retry" and ev.attempts == 1:
            raise roost.Retry(after=0, reason="not yet")
        if k == "poison":
            raise roost.Quarantine("cannot parse this")
        if k == "fail" and ev.attempts == 1:
            raise KeyError("missing-field")

    def handler(ev: roost.Event) -> None:
        decide(ev)

    async def ahandler(ev: roost.Event) -> None:
        await asyncio.sleep(0)
        decide(ev)

    agent = roost.Agent(handler if kind == "sync" else ahandler, agent_id=a,
                        state_dir=os.path.join(tmp_dir, "st"), base_url=server.url,
                        token=server.token(), concurrency=3, on_conn=conns.append)
    t = run_in_thread(agent)
    try:
        ids = {k: c.publish(a, {"k": k}).events[0].event_id
               for k in ("ok", "retry", "poison", "fail")}
        wait_until(lambda: statuses(c, a).get(ids["fail"]) == "completed"
                   and statuses(c, a).get(ids["retry"]) == "completed"
                   and statuses(c, a).get(ids["ok"]) == "completed", 30, "the events to finish")
        st = statuses(c, a)
        assert st[ids["poison"]] == "quarantined"
        assert c.get_quarantined(ids["poison"]).raw["last_error"] == "cannot parse this"
        assert runs == {"ok": 1, "retry": 2, "poison": 1, "fail": 2}
        s = agent.status()
        assert s.running and s.connection == "streaming" and s.handled == 3
        assert s.last_sync is not None and s.cursor == 4
    finally:
        agent.stop()
        t.join(60)
    assert not t.is_alive()
    assert conns[0] == "starting" and "streaming" in conns and conns[-1] == "stopped"
    assert roost.read_status(os.path.join(tmp_dir, "st")).outstanding_leases == 0


def test_failure_reason_is_the_traceback_end(make_server: Callable[..., Roostd],
                                             tmp_dir: str) -> None:
    """A handler's exception releases the event with the traceback's LAST lines (bounded) as
    its last_error; with claim.max_attempts=1 that release quarantines it, so it can be read."""
    d = make_server("claim.max_attempts=1", name="tb")
    c = roost.Client(d.url, token=d.token())
    a = agent_name("tb")
    e = c.publish(a, {}).events[0].event_id

    def handler(ev: roost.Event) -> None:
        raise RuntimeError("x" * 5000 + " THE-END")

    agent = roost.Agent(handler, agent_id=a, state_dir=os.path.join(tmp_dir, "st"),
                        base_url=d.url, token=d.token())
    t = run_in_thread(agent)
    try:
        wait_until(lambda: statuses(c, a).get(e) == "quarantined", 30, "the failed event")
    finally:
        agent.stop()
        t.join(60)
    last = c.get_quarantined(e).raw["last_error"]
    assert last.rstrip().endswith("x THE-END"), last[-200:]
    assert len(last.encode()) <= 2048


def test_state_dir_is_one_process(server: Roostd, tmp_dir: str) -> None:
    st = os.path.join(tmp_dir, "st")
    a1 = roost.Agent(lambda ev: None, agent_id="lock", state_dir=st, base_url=server.url,
                     token=server.token())
    t = run_in_thread(a1)
    try:
        wait_until(lambda: a1.status().connection == "streaming", 30, "the first agent")
        a2 = roost.Agent(lambda ev: None, agent_id="lock", state_dir=st, base_url=server.url,
                         token=server.token())
        with pytest.raises(roost.StateLocked) as ei:
            a2.run()
        assert "another running agent" in str(ei.value)
    finally:
        a1.stop()
        t.join(60)


def test_sigkill_mid_handler(server: Roostd, tmp_dir: str) -> None:
    """Every event handled, re-runs at most concurrency, none after a recorded success; the
    restart releases what the dead run held."""
    c = roost.Client(server.url, token=server.token())
    a = agent_name("kill")
    tok = server.token_file(tmp_dir)
    log = os.path.join(tmp_dir, "log")
    st = os.path.join(tmp_dir, "st")
    conc = 4
    ids = [e.event_id for e in c.publish_batch(
        [{"recipients": [a], "payload": {"i": i}} for i in range(60)]).events]
    p = AgentProc(server.url, tok, a, st, log, concurrency=conc, handler_ms=100, lease_s=120)
    wait_until(lambda: len(ends(log)) >= 15, 60, "15 handled events")
    p.kill()
    done_at_kill = processed_ids(st)
    lines_at_kill = len(read_log(log))
    assert done_at_kill
    p2 = AgentProc(server.url, tok, a, st, log, concurrency=conc, handler_ms=100, lease_s=120)
    try:
        wait_until(lambda: set(ends(log)) >= set(ids), 120, "every event handled")
        wait_until(lambda: set(statuses(c, a).values()) == {"completed"}, 30, "all completed")
    finally:
        p2.terminate()
    s = starts(log)
    dups = sum(n - 1 for n in s.values())
    assert dups <= conc, f"{dups} re-runs"
    after = [parts[1] for parts in read_log(log)[lines_at_kill:] if parts[0] == "start"]
    assert not (set(after) & done_at_kill), "an event recorded as done ran again"
    assert "recovery: released" in p2.stderr()


def test_lost_ack_never_reruns(server: Roostd, tmp_dir: str) -> None:
    """roostd's answers to acks are dropped by a proxy: the running agent retries the ack;
    then with every answer dropped the agent is SIGKILLed and the restart acks in recovery.
    The handler runs once per event."""
    c = roost.Client(server.url, token=server.token())
    a = agent_name("lostack")
    tok = server.token_file(tmp_dir)
    log = os.path.join(tmp_dir, "log")
    st = os.path.join(tmp_dir, "st")
    proxy = HttpProxy(server.port)
    budget = [2]

    def drop(method: str, path: str) -> bool:
        if path.endswith("/ack") and budget[0] > 0:
            budget[0] -= 1
            return True
        return False

    proxy.drop_reply = drop
    p = AgentProc(proxy.url, tok, a, st, log)
    try:
        e1 = c.publish(a, {"n": 1}).events[0].event_id
        # roostd completes the event at the first ack; the agent learns it at the third.
        wait_until(lambda: sum(1 for m, path in proxy.requests if path.endswith("/ack")) >= 3,
                   60, "the ack retried past two lost answers")
        assert len(proxy.dropped) == 2 and statuses(c, a).get(e1) == "completed"
        assert starts(log) == {e1: 1}
        # Now every ack answer is lost; the agent dies with the ack unconfirmed.
        proxy.drop_reply = lambda m, path: path.endswith("/ack")
        e2 = c.publish(a, {"n": 2}).events[0].event_id
        wait_until(lambda: len(proxy.dropped) >= 3 and e2 in processed_ids(st), 60,
                   "the second ack sent and lost")
        p.kill()
    finally:
        p.kill()
        proxy.close()
    p2 = AgentProc(server.url, tok, a, st, log)
    try:
        wait_until(lambda: "recovery: acked 1 processed event" in p2.stderr(), 60,
                   "recovery's ack")
        assert statuses(c, a).get(e2) == "completed"
    finally:
        p2.terminate()
    assert starts(log) == {e1: 1, e2: 1}


def test_roostd_restart_under_a_running_agent(make_server: Callable[..., Roostd],
                                              tmp_dir: str) -> None:
    d = make_server(name="restart")
    a = agent_name("rst")
    tok = d.token_file(tmp_dir)
    log = os.path.join(tmp_dir, "log")
    p = AgentProc(d.url, tok, a, os.path.join(tmp_dir, "st"), log, concurrency=2)
    try:
        with roost.Client(d.url, token=d.token()) as c:
            first = [c.publish(a, {"i": i}).events[0].event_id for i in range(5)]
        try:
            wait_until(lambda: set(ends(log)) >= set(first), 60, "the first events")
        except AssertionError:
            print(p.stderr())
            raise
        d.kill()  # SIGKILL: roostd and its embedded store die together
        d.start()  # the same port and data dir (or database)
        with roost.Client(d.url, token=d.token()) as c:
            later = [c.publish(a, {"i": i}).events[0].event_id for i in range(5, 10)]
            wait_until(lambda: set(ends(log)) >= set(later), 60,
                       "work published after the restart")
            wait_until(lambda: set(statuses(c, a).values()) == {"completed"}, 60,
                       "every ack taken")
    finally:
        p.terminate()
    assert all(n == 1 for n in starts(log).values())


def test_stream_blocked_long_polls_take_over(server: Roostd, tmp_dir: str) -> None:
    c = roost.Client(server.url, token=server.token())
    a = agent_name("blocked")
    tok = server.token_file(tmp_dir)
    log = os.path.join(tmp_dir, "log")
    st = os.path.join(tmp_dir, "st")
    proxy = HttpProxy(server.port)
    proxy.refuse = lambda m, path: path.endswith("/subscribe")
    p = AgentProc(proxy.url, tok, a, st, log)
    try:
        e1 = c.publish(a, {}).events[0].event_id
        wait_until(lambda: e1 in ends(log), 60, "the first event")
        # The agent pulls before it streams, so e1 may come through that first pull; the
        # stream's refusal and the switch to long polls follow it.
        wait_until(lambda: proxy.refused >= 1, 30, "the stream refused")
        wait_until(lambda: roost.read_status(st).connection == "polling", 30, "the agent polling")
        # Idle: the claims are long polls, a handful at most in a few seconds (not a tight loop).
        n0 = sum(1 for m, path in proxy.requests if path.endswith("/claim"))
        time.sleep(3)
        n1 = sum(1 for m, path in proxy.requests if path.endswith("/claim"))
        assert n1 - n0 <= 2
        for _ in range(3):
            e = c.publish(a, {}).events[0].event_id
            wait_until(lambda: e in ends(log), 30, "an event while the stream is blocked")
    finally:
        p.terminate()
        proxy.close()


def test_cursor_behind_retention_calls_on_state(make_server: Callable[..., Roostd],
                                                tmp_dir: str) -> None:
    d = make_server("retention.completed_s=0", "retention.interval_ms=50", name="gone")
    c = roost.Client(d.url, token=d.token())
    a = agent_name("gone")
    c.publish(a, {}, state_patch={"phase": 1})
    c.publish(a, {})
    c.publish(a, {})
    for e in c.claim(a, limit=3):
        c.ack(a, e.event_id, e.lease_token or "")

    def gone() -> bool:
        try:
            c.inbox(a, 0)
            return False
        except roost.CursorExpired as e:
            assert e.oldest_cursor is not None and e.resync
            return True

    wait_until(gone, 60, "retention to purge the completed events (410)")
    e4 = c.publish(a, {}).events[0].event_id
    seen: List[roost.AgentState] = []
    ran: List[str] = []
    agent = roost.Agent(lambda ev: ran.append(ev.event_id), agent_id=a,
                        state_dir=os.path.join(tmp_dir, "st"), base_url=d.url, token=d.token(),
                        on_state=seen.append)
    t = run_in_thread(agent)
    try:
        # (Once acked, retention deletes it at once too: the handler's run is the evidence.)
        wait_until(lambda: ran == [e4], 60, "the fourth event")
    finally:
        agent.stop()
        t.join(60)
    assert seen and seen[0].state == {"phase": 1} and seen[0].cursor >= 1


def test_two_processes_share_one_agent(server: Roostd, tmp_dir: str) -> None:
    c = roost.Client(server.url, token=server.token())
    a = agent_name("pair")
    tok = server.token_file(tmp_dir)
    log = os.path.join(tmp_dir, "log")
    procs = [AgentProc(server.url, tok, a, os.path.join(tmp_dir, f"st{i}"), log,
                       concurrency=2, handler_ms=100) for i in range(2)]
    try:
        for i in range(2):
            wait_until(lambda: _conn(os.path.join(tmp_dir, f"st{i}")) == "streaming", 60,
                       "both agents streaming")
        ids = [e.event_id for e in c.publish_batch(
            [{"recipients": [a], "payload": {"i": i}} for i in range(40)]).events]
        wait_until(lambda: set(ends(log)) >= set(ids), 90, "all 40 handled")
    finally:
        for p in procs:
            p.terminate()
    by_pid: Dict[str, Set[str]] = {}
    for parts in read_log(log):
        if parts[0] == "start":
            by_pid.setdefault(parts[2], set()).add(parts[1])
    assert all(n == 1 for n in starts(log).values()), "an event ran twice"
    assert len(by_pid) == 2 and all(by_pid.values()), "both processes got work"


def _conn(st: str) -> str:
    try:
        return roost.read_status(st).connection
    except (roost.RoostError, sqlite3.Error):
        return ""


def test_sigterm_releases_claims(server: Roostd, tmp_dir: str) -> None:
    c = roost.Client(server.url, token=server.token())
    a = agent_name("term")
    tok = server.token_file(tmp_dir)
    log = os.path.join(tmp_dir, "log")
    st = os.path.join(tmp_dir, "st")
    p = AgentProc(server.url, tok, a, st, log, concurrency=2, handler_ms=1500)
    for i in range(6):
        c.publish(a, {"i": i})
    wait_until(lambda: len(starts(log)) >= 1, 60, "a handler running")
    assert p.terminate() == 0
    assert ("stopped",) == read_log(log)[-1][:1]
    # Running handlers finished and were acked; nothing is left claimed by the stopped agent.
    sts = statuses(c, a)
    assert "claimed" not in sts.values()
    assert sum(1 for v in sts.values() if v == "completed") == len(ends(log))
    assert roost.read_status(st).outstanding_leases == 0


def test_handler_longer_than_its_lease(server: Roostd, tmp_dir: str) -> None:
    c = roost.Client(server.url, token=server.token())
    a = agent_name("long")
    e = c.publish(a, {}).events[0].event_id
    runs = []

    def handler(ev: roost.Event) -> None:
        runs.append(ev.attempts)
        time.sleep(22)  # the lease is 10 s: extended at half-life (5 s of slack) meanwhile

    agent = roost.Agent(handler, agent_id=a, state_dir=os.path.join(tmp_dir, "st"),
                        base_url=server.url, token=server.token(), lease_s=10)
    t = run_in_thread(agent)
    try:
        wait_until(lambda: statuses(c, a).get(e) == "completed", 60, "the long event")
    finally:
        agent.stop()
        t.join(60)
    assert runs == [1]


@pytest.mark.skipif(not os.environ.get("ROOST_TEST_MYSQL_URL"),
                    reason="the MariaDB run only (on SQLite the store restarts with roostd)")
def test_database_restart_under_a_running_agent(tmp_dir: str) -> None:
    """roostd's MariaDB stopped and started again under a running agent (a private server of
    its own: the fixture's is shared by the tests beside this one); work published afterwards
    runs, each event once."""
    import subprocess

    from harness import REPO

    script = os.path.join(REPO, "scripts", "mariadb_test.sh")
    mdir = os.path.join(tmp_dir, "mdb")
    base = subprocess.run([script, "start", mdir], check=True, capture_output=True,
                          text=True).stdout.strip()
    saved = os.environ["ROOST_TEST_MYSQL_URL"]
    os.environ["ROOST_TEST_MYSQL_URL"] = base
    try:
        d = Roostd(name="dbrst").start()
    finally:
        os.environ["ROOST_TEST_MYSQL_URL"] = saved
    a = agent_name("dbrst")
    log = os.path.join(tmp_dir, "log")
    p = AgentProc(d.url, d.token_file(tmp_dir), a, os.path.join(tmp_dir, "st"), log)
    try:
        with roost.Client(d.url, token=d.token()) as c:
            e1 = c.publish(a, {}).events[0].event_id
            wait_until(lambda: e1 in ends(log), 60, "the first event")
            subprocess.run([script, "pause", mdir], check=True, capture_output=True)
            subprocess.run([script, "resume", mdir], check=True, capture_output=True)
            later = [c.publish(a, {"i": i}).events[0].event_id for i in range(3)]
            wait_until(lambda: set(ends(log)) >= set(later), 60, "work after the DB restart")
    finally:
        p.terminate()
        d.cleanup()
        subprocess.run([script, "stop", mdir], capture_output=True)
    assert all(n == 1 for n in starts(log).values())
