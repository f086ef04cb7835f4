# SPDX-License-Identifier: MIT
"""roost.Client and roost.AsyncClient against the real roostd: every call and every error
class a caller can meet, each test run once per client (``client_factory``), plus a direct
comparison of the two clients' answers."""

from __future__ import annotations

import asyncio
import itertools
import os
import socket
import time
from typing import Any, Callable, List

import pytest

from harness import HttpProxy, Roostd, wait_until

import roost

_ids = itertools.count()


def agent_name(tag: str) -> str:
    return f"py.{tag}.{os.getpid()}.{next(_ids)}"


def test_publish_one_and_batch(server: Roostd, client_factory: Callable[..., Any]) -> None:
    c = client_factory(server.url, token=server.token())
    a, b = agent_name("pub"), agent_name("pub")
    r = c.publish(a, {"n": 1}, priority=5, correlation_id="c-1")
    assert r.status == 201 and not r.duplicate
    assert len(r.events) == 1 and r.events[0].agent_id == a
    assert r.events[0].sequence_number == 1 and r.events[0].event_id.startswith("evt_")
    assert r.idempotency_keys[0].startswith("rk_")
    fan = c.publish([a, b], {"n": 2})
    assert [e.agent_id for e in fan.events] == [a, b]
    batch = c.publish_batch([{"recipients": a, "payload": {"n": 3}},
                             {"recipients": [b], "payload": {"n": 4}, "delay_s": 3600}])
    assert [e.sequence_number for e in batch.events] == [3, 2]
    assert len(set(batch.idempotency_keys)) == 2
    page = c.inbox(a)
    assert [e.payload for e in page.events] == [{"n": 1}, {"n": 2}, {"n": 3}]
    assert page.events[0].priority == 5 and page.events[0].correlation_id == "c-1"
    assert page.head == 3 and page.next_cursor == 3 and not page.has_more
    delayed = c.inbox(b, 1).events[0]
    assert delayed.status == "scheduled"


def test_peek_is_what_the_next_claim_takes(server: Roostd,
                                           client_factory: Callable[..., Any]) -> None:
    c = client_factory(server.url, token=server.token())
    a = agent_name("peek")
    assert c.peek(a) is None
    c.publish(a, {"n": 1})
    c.publish(a, {"n": 2}, priority=5)
    c.publish(a, {"n": 3}, priority=9, delay_s=3600)  # scheduled: passed over
    p = c.peek(a)
    assert p is not None and p.payload == {"n": 2} and p.status == "pending"
    assert p.lease_token is None and p.claim_expires_at is None and p.attempts == 0
    assert c.peek(a) == p  # nothing changed
    got = c.claim(a, limit=1)
    assert [e.event_id for e in got] == [p.event_id] and got[0].attempts == 1
    nxt = c.peek(a)
    assert nxt is not None and nxt.payload == {"n": 1}
    reader = client_factory(server.url, token=server.token(scope=f"agent:{a}:read"))
    assert reader.peek(a) == nxt  # the read scope is enough
    with pytest.raises(roost.Forbidden) as ef:
        reader.peek(agent_name("other"))
    assert ef.value.required_scope.endswith(":read")
    assert [e.event_id for e in c.claim(a, limit=5)] == [nxt.event_id]
    assert c.peek(a) is None


def test_publish_same_key_is_one_event(server: Roostd, client_factory: Callable[..., Any]) -> None:
    c = client_factory(server.url, token=server.token())
    a = agent_name("idem")
    first = c.publish(a, {"x": 1}, idempotency_key="order-42")
    again = c.publish(a, {"x": 2}, idempotency_key="order-42")
    assert again.duplicate and again.status == 200
    assert again.events[0].event_id == first.events[0].event_id
    assert c.inbox(a).head == 1


def test_publish_retries_a_lost_answer_with_the_same_key(
        server: Roostd, client_factory: Callable[..., Any]) -> None:
    """The first publish's answer is dropped after roostd committed: the client retries with
    the key it generated, and roostd answers with the original event, not a second one."""
    proxy = HttpProxy(server.port)
    try:
        drops = [1]

        def drop(method: str, path: str) -> bool:
            if path == "/api/v1/events" and drops[0] > 0:
                drops[0] -= 1
                return True
            return False

        proxy.drop_reply = drop
        c = client_factory(proxy.url, token=server.token())
        a = agent_name("lost")
        r = c.publish(a, {"once": True})
        assert proxy.dropped == ["/api/v1/events"]
        assert r.duplicate, "the retry must find the first attempt's event"
        direct = client_factory(server.url, token=server.token())
        assert direct.inbox(a).head == 1
    finally:
        proxy.close()


def test_publish_retries_503_honouring_retry_after(
        server: Roostd, client_factory: Callable[..., Any]) -> None:
    proxy = HttpProxy(server.port)
    try:
        refusals = [2]

        def refuse(method: str, path: str) -> bool:
            if path == "/api/v1/events" and refusals[0] > 0:
                refusals[0] -= 1
                return True
            return False

        proxy.refuse = refuse
        c = client_factory(proxy.url, token=server.token())
        a = agent_name("r503")
        t0 = time.monotonic()
        r = c.publish(a, {})
        assert proxy.refused == 2 and r.status == 201
        assert time.monotonic() - t0 >= 2.0  # Retry-After: 1, twice
        # Without retries the 503 comes out typed.
        proxy.refuse = lambda m, p: True
        c0 = client_factory(proxy.url, token=server.token(), max_retries=0)
        with pytest.raises(roost.Unavailable) as ei:
            c0.publish(a, {})
        assert ei.value.status == 503 and ei.value.retry_after == 1
    finally:
        proxy.close()


def test_rate_limited_has_retry_after(make_server: Callable[..., Roostd],
                                      client_factory: Callable[..., Any]) -> None:
    d = make_server("limits.publish_rows_per_s=1", name="rate")
    c = client_factory(d.url, token=d.token(), max_retries=0)
    a = agent_name("rate")
    with pytest.raises(roost.RateLimited) as ei:
        for i in range(20):
            c.publish(a, {"i": i})
    assert ei.value.status == 429 and ei.value.code == "too_many_requests"
    assert ei.value.retry_after is not None and ei.value.retry_after >= 1
    # With retries, the client waits as told and the publish goes through, exactly once.
    before = c.inbox(a).head
    c2 = client_factory(d.url, token=d.token(), max_retries=5)
    r = c2.publish(a, {"after": "wait"})
    assert r.status == 201 and c.inbox(a).head == before + 1


def test_claim_ack_release_extend(server: Roostd, client_factory: Callable[..., Any]) -> None:
    c = client_factory(server.url, token=server.token())
    a = agent_name("lease")
    for i in range(4):
        c.publish(a, {"i": i})
    evs = c.claim(a, limit=2, lease_s=30, consumer="c1")
    assert [e.payload for e in evs] == [{"i": 0}, {"i": 1}]
    e0, e1 = evs
    assert e0.lease_token and e0.attempts == 1 and e0.claim_expires_at
    assert c.ack(a, e0.event_id, e0.lease_token) == "completed"
    assert c.ack(a, e0.event_id, e0.lease_token) == "completed"  # a repeat is safe
    with pytest.raises(roost.LeaseMismatch) as ei:
        c.ack(a, e1.event_id, "lt_" + "0" * 26)
    assert ei.value.status == 409 and ei.value.code == "lease_mismatch"
    exp = c.extend(a, e1.event_id, e1.lease_token, 120)
    assert exp > e1.claim_expires_at
    assert c.release(a, e1.event_id, e1.lease_token, delay_s=0, reason="transient",
                     error="boom") == "released"
    again = c.claim(a, limit=10, lease_s=30, consumer="c1")
    assert {e.event_id for e in again} >= {e1.event_id}
    assert [e for e in again if e.event_id == e1.event_id][0].attempts == 2
    results = c.ack_batch(a, [(e.event_id, e.lease_token) for e in again] +
                          [(e0.event_id, "lt_" + "1" * 26)])
    assert [r.ok for r in results] == [True] * len(again) + [False]
    assert isinstance(results[-1].error, roost.LeaseMismatch)
    with pytest.raises(roost.EventNotFound):
        c.ack(a, "evt_01KBQ4Z0J7K3V8R5S2W9X6Y1TQ", e0.lease_token)


def test_release_all_and_long_poll(server: Roostd, client_factory: Callable[..., Any]) -> None:
    c = client_factory(server.url, token=server.token())
    a = agent_name("rall")
    for i in range(3):
        c.publish(a, {"i": i})
    assert len(c.claim(a, limit=3, consumer="mine")) == 3
    assert c.release_all(a, "other") == 0
    assert c.release_all(a, "mine") == 3
    assert len(c.claim(a, limit=10)) == 3
    t0 = time.monotonic()
    assert c.claim(a, limit=1, wait_s=1) == []
    assert time.monotonic() - t0 >= 0.9  # it waited (a long poll), then answered empty


def test_quarantine_admin_routes(server: Roostd, client_factory: Callable[..., Any]) -> None:
    c = client_factory(server.url, token=server.token())
    a = agent_name("quar")
    ids = [c.publish(a, {"i": i}).events[0].event_id for i in range(3)]
    for e in c.claim(a, limit=3):
        assert c.release(a, e.event_id, e.lease_token, reason="poison",
                         error="bad input") == "quarantined"
    page = c.list_quarantine(agent_id=a)
    assert sorted(x["event_id"] for x in page.items) == sorted(ids)
    q = c.get_quarantined(ids[0])
    assert q.raw["last_error"] == "bad input" and q.payload == {"i": 0}
    assert c.requeue(ids[0]) is not None
    assert c.requeue_all(agent_id=a, limit=1)["requeued"] == 1
    assert c.purge_quarantined(ids[2])["purged"] == 1
    assert c.list_quarantine(agent_id=a).items == []
    agents = c.list_agents(limit=1000)
    assert a in [x["agent_id"] for x in agents.items]
    with pytest.raises(roost.EventNotFound):
        c.get_quarantined(ids[0])


def test_state_and_cursor_reads(server: Roostd, client_factory: Callable[..., Any]) -> None:
    c = client_factory(server.url, token=server.token())
    a = agent_name("state")
    c.publish(a, {}, state_patch={"mode": "on", "n": 1})
    for i in range(5):
        c.publish(a, {"i": i})
    st = c.state(a)
    assert st.state == {"mode": "on", "n": 1} and st.cursor >= 1
    seen = [e.sequence_number for e in c.iter_inbox(a, 0, page_size=2)]
    assert seen == [1, 2, 3, 4, 5, 6]
    assert c.inbox(a, 2, limit=2).has_more
    assert c.inbox(agent_name("never")).head == 0


def test_subscribe_pings_and_ticket(server: Roostd, client_factory: Callable[..., Any]) -> None:
    c = client_factory(server.url, token=server.token())
    a = agent_name("sub")
    c.publish(a, {})
    if client_factory.kind == "sync":  # type: ignore[attr-defined]
        it = c.subscribe(a)
        first = next(it)
        assert first.event == "inbox_updated" and first.cursor_hint == 1 and first.id == "1"
        c.publish(a, {})
        nxt = next(it)
        assert nxt.cursor_hint == 2
        it.close()
    else:
        async def run() -> List[roost.Ping]:
            async with roost.AsyncClient(server.url, token=server.token()) as ac:
                got = []
                async for p in ac.subscribe(a):
                    got.append(p)
                    if len(got) == 1:
                        await ac.publish(a, {})
                    else:
                        break
                return got
        pings = asyncio.run(run())
        assert [p.cursor_hint for p in pings] == [1, 2]
    t = c.subscribe_ticket(a)
    assert t.ticket and t.expires_in_s > 0


def test_errors_are_typed(server: Roostd, client_factory: Callable[..., Any]) -> None:
    c = client_factory(server.url, token=server.token())
    a = agent_name("err")
    with pytest.raises(roost.BadRequest) as ei:
        c.claim(a, limit=5000)
    assert ei.value.code == "invalid_limit" and ei.value.details["param"] == "limit"
    with pytest.raises(roost.BadRequest) as ei:
        c.inbox(a, 99)
    assert ei.value.code == "invalid_cursor"
    bad = client_factory(server.url, token="not.a.token")
    with pytest.raises(roost.Unauthorized) as eu:
        bad.inbox(a)
    assert eu.value.status == 401 and eu.value.code == "unauthenticated"
    reader = client_factory(server.url, token=server.token(scope=f"agent:{a}:read"))
    with pytest.raises(roost.Forbidden) as ef:
        reader.claim(a)
    assert ef.value.required_scope == f"agent:{a}:consume"
    with pytest.raises(roost.Forbidden):
        reader.list_agents()
    expired = client_factory(server.url, token=server.token(exp=int(time.time()) - 3600))
    with pytest.raises(roost.Unauthorized) as ee:
        expired.inbox(a)
    assert "expired_at" in ee.value.details
    with pytest.raises(roost.AlreadyExists):
        c.add_key("dup-key", "*", "hmac-sha256", secret="A" * 44)
        c.add_key("dup-key", "*", "hmac-sha256", secret="A" * 44)
    with pytest.raises(roost.NotFound) as en:
        c.revoke_key("no-such-key")
    assert en.value.code == "key_not_found"
    with pytest.raises(roost.NotFound):
        c.get_endpoint("ep_nope")


def test_payload_too_large(make_server: Callable[..., Roostd],
                           client_factory: Callable[..., Any]) -> None:
    d = make_server("limits.max_payload_bytes=64", name="big")
    c = client_factory(d.url, token=d.token())
    with pytest.raises(roost.PayloadTooLarge) as ei:
        c.publish(agent_name("big"), {"x": "y" * 200})
    assert ei.value.code == "payload_too_large"


def test_lease_cap_reached(make_server: Callable[..., Roostd],
                           client_factory: Callable[..., Any]) -> None:
    d = make_server("lease.max_total_s=3", "lease.max_s=3", "lease.default_s=3", name="cap")
    c = client_factory(d.url, token=d.token())
    a = agent_name("cap")
    c.publish(a, {})
    e = c.claim(a, lease_s=3)[0]
    with pytest.raises(roost.LeaseCapReached):
        c.extend(a, e.event_id, e.lease_token, 3)


def test_connection_failed(client_factory: Callable[..., Any]) -> None:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    c = client_factory(f"http://127.0.0.1:{port}", token="x.y.z", max_retries=1)
    with pytest.raises(roost.ConnectionFailed) as ei:
        c.inbox("a1")
    assert ei.value.status == 0 and ei.value.code == "connect_failed"


def test_admin_keys_endpoints_stats(server: Roostd, client_factory: Callable[..., Any]) -> None:
    c = client_factory(server.url, token=server.token())
    kid = agent_name("key").replace(".", "-")
    k = c.add_key(kid, "agent-x", "hmac-sha256", secret="B" * 44)
    assert k["key_id"] == kid and k["revoked_at"] is None
    assert kid in [x["key_id"] for x in c.list_keys(limit=1000).items]
    assert c.revoke_key(kid)["revoked_at"] is not None
    assert c.list_endpoints().items == []
    assert c.list_callbacks("agent-x").items == []
    stats = wait_until(lambda: _stats_or_none(c), 30, "the first metrics snapshot")
    assert stats["tenant"] == "py"
    assert c.server_keys()["keys"][0]["kty"] == "OKP"


def _stats_or_none(c: Any) -> Any:
    try:
        return c.stats()
    except roost.Unavailable:
        return None


def test_token_sources(server: Roostd, tmp_dir: str, client_factory: Callable[..., Any]) -> None:
    a = agent_name("tok")
    path = os.path.join(tmp_dir, "tok")
    with open(path, "w") as f:
        f.write("garbage.token.here\n")
    src = roost.TokenFile(path)
    c = client_factory(server.url, token=src)
    with pytest.raises(roost.Unauthorized):
        c.inbox(a)
    with open(path + ".new", "w") as f:
        f.write(server.token() + "\n")
    os.replace(path + ".new", path)  # the file changed: it is read again
    assert c.inbox(a).head == 0
    calls = []

    def fn() -> str:
        calls.append(1)
        return server.token()

    c2 = client_factory(server.url, token=fn)
    c2.inbox(a)
    c2.inbox(a)
    assert len(calls) == 2
    cmd = roost.TokenCommand(["cat", path])
    c3 = client_factory(server.url, token=cmd)
    assert c3.inbox(a).head == 0


def test_sync_and_async_answer_alike(server: Roostd) -> None:
    """The same sequence through both clients gives the same answers, field for field."""

    def scrub(x: Any) -> Any:
        if isinstance(x, list):
            return [scrub(i) for i in x]
        if hasattr(x, "__dataclass_fields__"):
            return {k: scrub(getattr(x, k)) for k in x.__dataclass_fields__
                    if k not in ("raw", "lease_token", "claim_expires_at", "created_at",
                                 "available_at", "event_id", "idempotency_keys", "agent_id")}
        return x

    def run_sync(a: str) -> List[Any]:
        with roost.Client(server.url, token=server.token()) as c:
            out: List[Any] = [c.publish(a, {"k": 1}, state_patch={"s": 1})]
            out.append(c.publish_batch([{"recipients": [a], "payload": {"k": 2}}]))
            out.append(c.inbox(a, 0, limit=1))
            evs = c.claim(a, limit=5)
            out.append(evs)
            out.append(c.ack_batch(a, [(e.event_id, e.lease_token or "") for e in evs]))
            out.append(c.state(a))
            try:
                c.ack(a, evs[0].event_id, "lt_" + "2" * 26)
            except roost.RoostError as e:
                out.append((type(e).__name__, e.code, e.status))
            return out

    async def run_async(a: str) -> List[Any]:
        async with roost.AsyncClient(server.url, token=server.token()) as c:
            out: List[Any] = [await c.publish(a, {"k": 1}, state_patch={"s": 1})]
            out.append(await c.publish_batch([{"recipients": [a], "payload": {"k": 2}}]))
            out.append(await c.inbox(a, 0, limit=1))
            evs = await c.claim(a, limit=5)
            out.append(evs)
            out.append(await c.ack_batch(a, [(e.event_id, e.lease_token or "") for e in evs]))
            out.append(await c.state(a))
            try:
                await c.ack(a, evs[0].event_id, "lt_" + "2" * 26)
            except roost.RoostError as e:
                out.append((type(e).__name__, e.code, e.status))
            return out

    s = scrub(run_sync(agent_name("par")))
    t = scrub(asyncio.run(run_async(agent_name("par"))))
    assert s == t
    assert s[-1] == ("LeaseMismatch", "lease_mismatch", 409)
