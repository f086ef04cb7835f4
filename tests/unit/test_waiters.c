/* SPDX-License-Identifier: MIT */
/* Unit tests of src/server/waiters.c on a real event loop: notify fires only the waiters of the
 * (tenant, agent) it names (also within one hash bucket), the timer fires with timed_out near the
 * deadline, waiters_wait refuses to park after the serial moved, cancel is idempotent, a waiter may
 * re-park itself from its fire callback, waiters_fire_all fires everything, and a drained agent is
 * remembered until its bucket's serial moves. */
#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "harness/check.h"
#include "server/waiters.h"

#include "common/banned.h"

static struct event_base *base;

/* A waiter with what happened to it. */
struct tw {
    struct waiter w;
    int fired;
    int timeouts;
    int64_t fired_at_ms;
    int repark; /* re-park this many more times from the fire callback */
    int64_t repark_after_ms;
    bool repark_ok;
};

static void on_fire(struct waiter *w, bool timed_out)
{
    struct tw *t = (struct tw *)w;
    t->fired++;
    t->timeouts += timed_out;
    t->fired_at_ms = time_mono_ms();
    if (t->repark > 0) {
        t->repark--;
        uint64_t serial = waiters_serial(w->ws, w->tenant_id, w->agent_id);
        char tenant[sizeof w->tenant_id], agent[sizeof w->agent_id];
        snprintf(tenant, sizeof tenant, "%s", w->tenant_id);
        snprintf(agent, sizeof agent, "%s", w->agent_id);
        t->repark_ok =
            waiters_wait(w->ws, w, tenant, agent, serial, time_mono_ms() + t->repark_after_ms);
    }
}

static void tw_init(struct tw *t)
{
    memset(t, 0, sizeof *t);
    t->w.fire = on_fire;
    t->repark_after_ms = 60000;
}

static bool park(struct waiters *ws, struct tw *t, const char *tenant, const char *agent,
                 int64_t after_ms)
{
    return waiters_wait(ws, &t->w, tenant, agent, waiters_serial(ws, tenant, agent),
                        time_mono_ms() + after_ms);
}

static bool loop_timed_out;

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    loop_timed_out = true;
}

/* Drives the loop one iteration at a time until *counter reaches target or max_ms passed. */
static bool loop_until(const int *counter, int target, int max_ms)
{
    loop_timed_out = false;
    struct event *deadline = evtimer_new(base, on_deadline, NULL);
    struct timeval tv = {max_ms / 1000, (max_ms % 1000) * 1000};
    evtimer_add(deadline, &tv);
    while (*counter < target && !loop_timed_out) {
        event_base_loop(base, EVLOOP_ONCE);
    }
    event_free(deadline);
    return *counter >= target;
}

/* Runs the loop for `ms` (timers due meanwhile fire). */
static void loop_for(int ms)
{
    int never = 0;
    loop_until(&never, 1, ms);
}

static void test_waiters_notify_matches(void)
{
    struct waiters *ws = waiters_new(base);
    struct tw a1, a1b, a2, other_tenant, swapped;
    tw_init(&a1);
    tw_init(&a1b);
    tw_init(&a2);
    tw_init(&other_tenant);
    tw_init(&swapped);
    CHECK(park(ws, &a1, "t1", "a1", 60000));
    CHECK(park(ws, &a1b, "t1", "a1", 60000));
    CHECK(park(ws, &a2, "t1", "a2", 60000));
    CHECK(park(ws, &other_tenant, "t2", "a1", 60000));
    CHECK(park(ws, &swapped, "a1", "t1", 60000));
    waiters_notify(ws, "t1", "a1");
    CHECK_EQ(a1.fired, 1);
    CHECK_EQ(a1b.fired, 1);
    CHECK_EQ(a1.timeouts + a1b.timeouts, 0);
    CHECK_EQ(a2.fired, 0);
    CHECK_EQ(other_tenant.fired, 0);
    CHECK_EQ(swapped.fired, 0);
    CHECK(!a1.w.linked);
    CHECK(a1.w.timer == NULL);
    CHECK(a2.w.linked);
    /* Fired waiters are gone: a second notify fires nothing more. */
    waiters_notify(ws, "t1", "a1");
    CHECK_EQ(a1.fired, 1);
    CHECK_EQ(a1b.fired, 1);
    waiters_notify(ws, "t1", "a2");
    CHECK_EQ(a2.fired, 1);
    CHECK_EQ(other_tenant.fired, 0);
    waiters_cancel(&other_tenant.w);
    waiters_cancel(&swapped.w);
    waiters_free(ws);
    CHECK_EQ(other_tenant.fired, 0);
    CHECK_EQ(swapped.fired, 0);
}

/* Two agents that share a bucket (found through the serials): notify fires only its own. */
static void test_waiters_notify_same_bucket(void)
{
    struct waiters *ws = waiters_new(base);
    enum { N = 40000 };
    static uint64_t before[N];
    char name[32];
    for (int i = 0; i < N; i++) {
        snprintf(name, sizeof name, "agent-%d", i);
        before[i] = waiters_serial(ws, "tb", name);
    }
    waiters_notify(ws, "tb", "agent-0");
    int twin = -1;
    for (int i = 1; i < N && twin < 0; i++) {
        snprintf(name, sizeof name, "agent-%d", i);
        if (waiters_serial(ws, "tb", name) != before[i]) {
            twin = i;
        }
    }
    CHECK(twin > 0);
    if (twin > 0) {
        char twin_name[32];
        snprintf(twin_name, sizeof twin_name, "agent-%d", twin);
        struct tw mine, theirs;
        tw_init(&mine);
        tw_init(&theirs);
        CHECK(park(ws, &mine, "tb", "agent-0", 60000));
        CHECK(park(ws, &theirs, "tb", twin_name, 60000));
        CHECK_EQ(mine.w.bucket, theirs.w.bucket);
        waiters_notify(ws, "tb", twin_name);
        CHECK_EQ(theirs.fired, 1);
        CHECK_EQ(mine.fired, 0);
        CHECK(mine.w.linked);
        waiters_notify(ws, "tb", "agent-0");
        CHECK_EQ(mine.fired, 1);
        CHECK_EQ(theirs.fired, 1);
    }
    waiters_free(ws);
}

static void test_waiters_timeout(void)
{
    struct waiters *ws = waiters_new(base);
    struct tw t, later;
    tw_init(&t);
    tw_init(&later);
    int64_t start = time_mono_ms();
    CHECK(waiters_wait(ws, &t.w, "t1", "a1", waiters_serial(ws, "t1", "a1"), start + 150));
    CHECK(park(ws, &later, "t1", "a1", 60000));
    CHECK(loop_until(&t.fired, 1, 5000));
    CHECK_EQ(t.fired, 1);
    CHECK_EQ(t.timeouts, 1);
    CHECK(t.fired_at_ms >= start + 140); /* not early (clock granularity aside) */
    CHECK(t.fired_at_ms < start + 150 + 1000);
    CHECK(!t.w.linked);
    CHECK(t.w.timer == NULL);
    CHECK_EQ(later.fired, 0);
    CHECK(later.w.linked);
    /* Timed out means unparked: a notify does not fire it again. */
    waiters_notify(ws, "t1", "a1");
    CHECK_EQ(t.fired, 1);
    CHECK_EQ(later.fired, 1);
    CHECK_EQ(later.timeouts, 0);

    /* A deadline already past fires on the next loop turn, timed out. */
    struct tw past;
    tw_init(&past);
    CHECK(park(ws, &past, "t1", "a9", -1000));
    CHECK_EQ(past.fired, 0);
    CHECK(loop_until(&past.fired, 1, 5000));
    CHECK_EQ(past.timeouts, 1);
    waiters_free(ws);
}

static void test_waiters_serial_moved(void)
{
    struct waiters *ws = waiters_new(base);
    struct tw t;
    tw_init(&t);
    uint64_t serial = waiters_serial(ws, "t1", "a1");
    waiters_notify(ws, "t1", "a1"); /* a commit landed while the query ran */
    CHECK(waiters_serial(ws, "t1", "a1") != serial);
    CHECK(!waiters_wait(ws, &t.w, "t1", "a1", serial, time_mono_ms() + 60000));
    CHECK(!t.w.linked);
    CHECK(t.w.timer == NULL);
    waiters_notify(ws, "t1", "a1");
    CHECK_EQ(t.fired, 0);
    /* Another agent's notify does not move this agent's serial (unless they share a bucket). */
    uint64_t now = waiters_serial(ws, "t1", "a1");
    waiters_notify(ws, "t1", "a2");
    if (waiters_serial(ws, "t1", "a2") != waiters_serial(ws, "t1", "a1")) {
        CHECK_EQ(waiters_serial(ws, "t1", "a1"), now);
    }
    CHECK(
        waiters_wait(ws, &t.w, "t1", "a1", waiters_serial(ws, "t1", "a1"), time_mono_ms() + 60000));
    CHECK(t.w.linked);
    waiters_notify(ws, "t1", "a1");
    CHECK_EQ(t.fired, 1);
    waiters_free(ws);
}

/* A drained agent stays known drained until its bucket's serial moves; a note taken at an old
 * serial is refused, and the memo names exactly one (tenant, agent): a bucket twin or another
 * tenant's agent of the same name is never taken for it. */
static void test_waiters_drained(void)
{
    struct waiters *ws = waiters_new(base);
    CHECK(!waiters_known_drained(ws, "t1", "a1"));
    uint64_t serial = waiters_serial(ws, "t1", "a1");
    waiters_note_drained(ws, "t1", "a1", serial);
    CHECK(waiters_known_drained(ws, "t1", "a1"));
    CHECK(!waiters_known_drained(ws, "t2", "a1"));
    CHECK(!waiters_known_drained(ws, "t1", "a2"));
    waiters_notify(ws, "t1", "a1");
    CHECK(!waiters_known_drained(ws, "t1", "a1"));
    /* A claim submitted before that notify answers after it: its note says nothing. */
    waiters_note_drained(ws, "t1", "a1", serial);
    CHECK(!waiters_known_drained(ws, "t1", "a1"));
    waiters_note_drained(ws, "t1", "a1", waiters_serial(ws, "t1", "a1"));
    CHECK(waiters_known_drained(ws, "t1", "a1"));
    /* A twin in the same bucket: its own note replaces a1's, its notify ends both. */
    char twin[32] = "";
    for (int i = 0; i < 40000 && twin[0] == '\0'; i++) {
        char name[32];
        snprintf(name, sizeof name, "agent-%d", i);
        uint64_t before = waiters_serial(ws, "t1", name);
        waiters_notify(ws, "t1", "a1");
        if (waiters_serial(ws, "t1", name) != before) {
            snprintf(twin, sizeof twin, "%s", name);
        }
    }
    CHECK(twin[0] != '\0');
    waiters_note_drained(ws, "t1", "a1", waiters_serial(ws, "t1", "a1"));
    CHECK(!waiters_known_drained(ws, "t1", twin));
    waiters_note_drained(ws, "t1", twin, waiters_serial(ws, "t1", twin));
    CHECK(waiters_known_drained(ws, "t1", twin));
    CHECK(!waiters_known_drained(ws, "t1", "a1"));
    waiters_free(ws);
}

static void test_waiters_cancel_idempotent(void)
{
    struct waiters *ws = waiters_new(base);
    struct tw t, never_parked, neighbour;
    tw_init(&t);
    tw_init(&never_parked);
    tw_init(&neighbour);
    CHECK(park(ws, &neighbour, "t1", "a1", 60000));
    CHECK(park(ws, &t, "t1", "a1", 50));
    waiters_cancel(&t.w);
    CHECK(!t.w.linked);
    CHECK(t.w.timer == NULL);
    waiters_cancel(&t.w);
    waiters_cancel(&never_parked.w);
    CHECK(!t.w.linked);
    CHECK(neighbour.w.linked); /* the list is intact */
    loop_for(200);             /* the cancelled timer never fires */
    CHECK_EQ(t.fired, 0);
    waiters_notify(ws, "t1", "a1");
    CHECK_EQ(t.fired, 0);
    CHECK_EQ(never_parked.fired, 0);
    CHECK_EQ(neighbour.fired, 1);
    /* Cancel after firing is a no-op too; the waiter can be parked again. */
    waiters_cancel(&neighbour.w);
    CHECK(park(ws, &t, "t1", "a1", 60000));
    waiters_notify(ws, "t1", "a1");
    CHECK_EQ(t.fired, 1);
    waiters_free(ws);
}

static void test_waiters_repark_in_fire(void)
{
    struct waiters *ws = waiters_new(base);
    struct tw a, b, c;
    tw_init(&a);
    tw_init(&b);
    tw_init(&c);
    a.repark = 1;
    b.repark = 1;
    CHECK(park(ws, &a, "t1", "a1", 60000));
    CHECK(park(ws, &b, "t1", "a1", 60000));
    CHECK(park(ws, &c, "t1", "a1", 60000));
    /* One notify fires each waiter once, even those that re-park onto the same list. */
    waiters_notify(ws, "t1", "a1");
    CHECK_EQ(a.fired, 1);
    CHECK_EQ(b.fired, 1);
    CHECK_EQ(c.fired, 1);
    CHECK(a.repark_ok);
    CHECK(b.repark_ok);
    CHECK(a.w.linked);
    CHECK(b.w.linked);
    CHECK(!c.w.linked);
    waiters_notify(ws, "t1", "a1");
    CHECK_EQ(a.fired, 2);
    CHECK_EQ(b.fired, 2);
    CHECK_EQ(c.fired, 1);
    CHECK(!a.w.linked);
    CHECK(!b.w.linked);

    /* Re-parking from the timer callback: fires timed out twice, then stays unparked. */
    struct tw t;
    tw_init(&t);
    t.repark = 1;
    t.repark_after_ms = 30;
    CHECK(park(ws, &t, "t1", "a2", 30));
    CHECK(loop_until(&t.fired, 2, 5000));
    CHECK_EQ(t.timeouts, 2);
    CHECK(t.repark_ok);
    CHECK(!t.w.linked);
    CHECK(t.w.timer == NULL);
    waiters_free(ws);
}

static void test_waiters_fire_all(void)
{
    struct waiters *ws = waiters_new(base);
    enum { N = 50 };
    static struct tw ts[N];
    char agent[32];
    for (int i = 0; i < N; i++) {
        tw_init(&ts[i]);
        snprintf(agent, sizeof agent, "a%d", i % 7);
        CHECK(park(ws, &ts[i], i % 2 ? "t1" : "t2", agent, 60000));
    }
    waiters_fire_all(ws);
    int ok = 0;
    for (int i = 0; i < N; i++) {
        ok += ts[i].fired == 1 && ts[i].timeouts == 1 && !ts[i].w.linked && !ts[i].w.timer;
    }
    CHECK_EQ(ok, N);
    waiters_fire_all(ws);
    waiters_notify(ws, "t1", "a1");
    int once = 0;
    for (int i = 0; i < N; i++) {
        once += ts[i].fired == 1;
    }
    CHECK_EQ(once, N);

    /* waiters_free fires what is still parked, timed out. */
    struct tw last;
    tw_init(&last);
    CHECK(park(ws, &last, "t3", "a1", 60000));
    waiters_free(ws);
    CHECK_EQ(last.fired, 1);
    CHECK_EQ(last.timeouts, 1);
}

int main(void)
{
    base = event_base_new();
    if (!base) {
        fprintf(stderr, "cannot create the event base\n");
        return 2;
    }
    RUN(test_waiters_notify_matches);
    RUN(test_waiters_notify_same_bucket);
    RUN(test_waiters_timeout);
    RUN(test_waiters_serial_moved);
    RUN(test_waiters_drained);
    RUN(test_waiters_cancel_idempotent);
    RUN(test_waiters_repark_in_fire);
    RUN(test_waiters_fire_all);
    event_base_free(base);
    return check_summary();
}
