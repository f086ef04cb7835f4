/* SPDX-License-Identifier: MIT */
/* Unit tests of src/server/workers.c against a real SQLite store and a real event loop: group
 * commit (grouping, done() on the loop thread, seqs in order), a failing job rolled back alone
 * inside its group, reads running beside an open write transaction and seeing committed data only,
 * workers_free draining every queued job, the bounded retry of ROOST_ERETRY, and a mixed group of
 * batched publishes and acks and a lone claim where one request fails alone. With a mysql://
 * URL as argument (ctest test_workers_mysql) the same tests run on a fresh MariaDB database. */
#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness/check.h"
#include "mysql/mysql_testutil.h"
#include "server/workers.h"
#include "store/store.h"

#include "common/banned.h"

#define TENANT "t1"

static char tmpdir[256];
static char url[320];
static const struct store_options store_opt = {.busy_timeout_ms = 5000, .synchronous_full = true};
static struct event_base *base;
static pthread_t loop_thread;

/* ---- the loop ---- */

static int completed;   /* done() calls, loop thread only */
static int wanted = -1; /* loopbreak once completed reaches this */
static int off_loop;    /* done() calls made on another thread */
static bool loop_timed_out;

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    loop_timed_out = true;
    event_base_loopbreak(base);
}

/* Runs the loop until `target` done() calls in total have happened, or 30 s passed. */
static bool loop_until(int target)
{
    wanted = target;
    if (completed >= target) {
        return true;
    }
    loop_timed_out = false;
    struct event *deadline = evtimer_new(base, on_deadline, NULL);
    struct timeval tv = {30, 0};
    evtimer_add(deadline, &tv);
    event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY);
    event_free(deadline);
    wanted = -1;
    return !loop_timed_out && completed >= target;
}

static void note_done(void)
{
    if (!pthread_equal(pthread_self(), loop_thread)) {
        __atomic_add_fetch(&off_loop, 1, __ATOMIC_SEQ_CST);
    }
    completed++;
    if (completed == wanted) {
        event_base_loopbreak(base);
    }
}

/* ---- a gate: a write job that blocks the writer until released ---- */

struct gate {
    struct job job;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool entered, open;
    const char *publish_to; /* publish one event before blocking, or NULL */
    int done_calls;
};

static int publish_one(struct store *st, const char *agent, const char *payload)
{
    const char *recipients[1] = {agent};
    struct store_publish_item item = {
        .recipients = recipients, .n_recipients = 1, .payload = payload, .available_at_ms = 0};
    struct store_publish_req req = {
        .tenant_id = TENANT, .items = &item, .n_items = 1, .now_ms = 1700000000000};
    struct store_published out;
    struct store_touches touches = {0};
    int rc = store_call(st, publish, &req, &out, &touches);
    store_touches_cleanup(&touches);
    return rc;
}

static int run_gate(struct job *job, struct store *st)
{
    struct gate *g = (struct gate *)job;
    int rc = ROOST_OK;
    if (g->publish_to) {
        rc = publish_one(st, g->publish_to, "{\"gate\":true}");
    }
    pthread_mutex_lock(&g->mu);
    g->entered = true;
    pthread_cond_broadcast(&g->cv);
    while (!g->open) {
        pthread_cond_wait(&g->cv, &g->mu);
    }
    pthread_mutex_unlock(&g->mu);
    return rc;
}

static void done_gate(struct job *job)
{
    struct gate *g = (struct gate *)job;
    g->done_calls++;
    note_done();
}

static void gate_init(struct gate *g, const char *publish_to)
{
    memset(g, 0, sizeof *g);
    pthread_mutex_init(&g->mu, NULL);
    pthread_cond_init(&g->cv, NULL);
    g->job.run = run_gate;
    g->job.done = done_gate;
    g->job.write = true;
    g->publish_to = publish_to;
}

/* Submits the gate and waits until the writer is inside it (so later jobs queue up behind it). */
static void gate_close(struct workers *w, struct gate *g)
{
    workers_submit(w, &g->job);
    pthread_mutex_lock(&g->mu);
    while (!g->entered) {
        pthread_cond_wait(&g->cv, &g->mu);
    }
    pthread_mutex_unlock(&g->mu);
}

static void gate_open(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    g->open = true;
    pthread_cond_broadcast(&g->cv);
    pthread_mutex_unlock(&g->mu);
}

static void gate_destroy(struct gate *g)
{
    pthread_mutex_destroy(&g->mu);
    pthread_cond_destroy(&g->cv);
}

/* ---- a publish job ---- */

struct pub_job {
    struct job job;
    const char *agent;
    const char *payload;
    int fail_with; /* returned after publishing, when not ROOST_OK */
    int runs;      /* run() calls (writer thread) */
    int done_calls;
};

static int run_pub(struct job *job, struct store *st)
{
    struct pub_job *p = (struct pub_job *)job;
    p->runs++;
    int rc = publish_one(st, p->agent, p->payload ? p->payload : "{\"n\":1}");
    if (rc == ROOST_OK && p->fail_with != ROOST_OK) {
        rc = p->fail_with;
    }
    return rc;
}

static void done_pub(struct job *job)
{
    struct pub_job *p = (struct pub_job *)job;
    p->done_calls++;
    note_done();
}

static void pub_init(struct pub_job *p, const char *agent, int fail_with)
{
    memset(p, 0, sizeof *p);
    p->job.run = run_pub;
    p->job.done = done_pub;
    p->job.write = true;
    p->agent = agent;
    p->fail_with = fail_with;
}

/* ---- a read job: the agent's inbox ---- */

struct read_job {
    struct job job;
    const char *agent;
    int64_t head;
    size_t n_events;
    bool contiguous; /* seqs are 1..n */
    bool saw_failed; /* a payload written by a job that failed */
    int done_calls;
};

static int run_read(struct job *job, struct store *st)
{
    struct read_job *r = (struct read_job *)job;
    r->head = -1;
    r->n_events = 0;
    r->contiguous = true;
    r->saw_failed = false;
    struct store_inbox_page page;
    memset(&page, 0, sizeof page);
    int rc = store_call(st, inbox_read, TENANT, r->agent, 0, 10000, 0, &page);
    if (rc == ROOST_OK) {
        r->head = page.head;
        r->n_events = page.events.len;
        for (size_t i = 0; i < page.events.len; i++) {
            const struct store_event *ev = &page.events.items[i];
            if (ev->seq != (int64_t)i + 1) {
                r->contiguous = false;
            }
            if (ev->payload && strstr(ev->payload, "false")) {
                r->saw_failed = true;
            }
        }
    }
    store_events_cleanup(&page.events);
    return rc;
}

static void done_read(struct job *job)
{
    struct read_job *r = (struct read_job *)job;
    r->done_calls++;
    note_done();
}

static void read_init(struct read_job *r, const char *agent)
{
    memset(r, 0, sizeof *r);
    r->job.run = run_read;
    r->job.done = done_read;
    r->job.write = false;
    r->agent = agent;
}

/* ---- helpers ---- */

static struct workers *new_workers_s(int readers, int scan_readers, int writers, int group_max)
{
    struct workers *w = NULL;
    char err[256] = "";
    int rc = workers_new(base, url, &store_opt, readers, scan_readers, writers, group_max, &w, err,
                         sizeof err);
    CHECK_EQ(rc, ROOST_OK);
    if (rc != ROOST_OK) {
        fprintf(stderr, "workers_new: %s\n", err);
    }
    return w;
}

static struct workers *new_workers_w(int readers, int writers, int group_max)
{
    return new_workers_s(readers, 1, writers, group_max);
}

static struct workers *new_workers(int readers, int group_max)
{
    return new_workers_w(readers, 1, group_max);
}

/* The agent's inbox through a connection of our own (outside the pool). */
static int64_t inbox_of(const char *agent, struct store_events *out)
{
    struct store *st = NULL;
    const char *why = NULL;
    if (store_open(url, &store_opt, &st, &why) != ROOST_OK) {
        return -1;
    }
    struct store_inbox_page page;
    memset(&page, 0, sizeof page);
    int64_t head = -1;
    if (store_call(st, inbox_read, TENANT, agent, 0, 10000, 0, &page) == ROOST_OK) {
        head = page.head;
        *out = page.events;
    } else {
        store_events_cleanup(&page.events);
    }
    store_close(st);
    return head;
}

static int64_t head_of(const char *agent)
{
    struct store_events evs = {0};
    int64_t head = inbox_of(agent, &evs);
    store_events_cleanup(&evs);
    return head;
}

/* ---- tests ---- */

#define N_GROUP 200

static void test_workers_group_commit(void)
{
    struct workers *w = new_workers(2, 64);
    if (!w) {
        return;
    }
    static struct pub_job jobs[N_GROUP];
    struct gate gate;
    gate_init(&gate, NULL);
    int base_done = completed;
    /* Hold the writer so that the 200 jobs are all queued when it next looks. */
    gate_close(w, &gate);
    for (int i = 0; i < N_GROUP; i++) {
        pub_init(&jobs[i], "g", ROOST_OK);
        workers_submit(w, &jobs[i].job);
    }
    gate_open(&gate);
    CHECK(loop_until(base_done + N_GROUP + 1));
    CHECK_EQ(__atomic_load_n(&off_loop, __ATOMIC_SEQ_CST), 0);
    CHECK_EQ(gate.done_calls, 1);
    CHECK_EQ(gate.job.rc, ROOST_OK);
    int ok = 0, once = 0;
    for (int i = 0; i < N_GROUP; i++) {
        ok += jobs[i].job.rc == ROOST_OK;
        once += jobs[i].done_calls == 1;
    }
    CHECK_EQ(ok, N_GROUP);
    CHECK_EQ(once, N_GROUP);

    struct workers_stats stats;
    workers_get_stats(w, &stats);
    CHECK(stats.commits < N_GROUP);
    CHECK(stats.commits >= (N_GROUP + 63) / 64 + 1); /* group_max bounds a group */
    CHECK(stats.max_group > 1);
    CHECK(stats.max_group <= 64);
    CHECK_EQ(stats.write_jobs, N_GROUP + 1);
    CHECK_EQ(stats.retries, 0);
    workers_free(w);
    gate_destroy(&gate);

    /* Every event is there, seqs 1..200 in order. */
    struct store_events evs = {0};
    CHECK_EQ(inbox_of("g", &evs), N_GROUP);
    CHECK_EQ(evs.len, N_GROUP);
    bool in_order = evs.len == N_GROUP;
    for (size_t i = 0; in_order && i < evs.len; i++) {
        in_order = evs.items[i].seq == (int64_t)i + 1;
    }
    CHECK(in_order);
    store_events_cleanup(&evs);
}

/* Without a gate: 200 jobs submitted in one go still commit in fewer than 200 transactions. */
static void test_workers_group_commit_ungated(void)
{
    struct workers *w = new_workers(1, 1000);
    if (!w) {
        return;
    }
    static struct pub_job jobs[N_GROUP];
    int base_done = completed;
    for (int i = 0; i < N_GROUP; i++) {
        pub_init(&jobs[i], "g2", ROOST_OK);
        workers_submit(w, &jobs[i].job);
    }
    CHECK(loop_until(base_done + N_GROUP));
    CHECK_EQ(__atomic_load_n(&off_loop, __ATOMIC_SEQ_CST), 0);
    int ok = 0;
    for (int i = 0; i < N_GROUP; i++) {
        ok += jobs[i].job.rc == ROOST_OK && jobs[i].done_calls == 1;
    }
    CHECK_EQ(ok, N_GROUP);
    struct workers_stats stats;
    workers_get_stats(w, &stats);
    CHECK(stats.commits < N_GROUP);
    CHECK(stats.max_group > 1);
    CHECK_EQ(stats.write_jobs, N_GROUP);
    workers_free(w);
    CHECK_EQ(head_of("g2"), N_GROUP);
}

/* A writer fills a group in turn between tenants, up to group_max rows: tenant A's five big
 * publishes (each declared group_max rows) queued before tenant B's small one commit one per
 * group, and B's commits alone right after A's first, instead of waiting for a group full of
 * A's (first come, first grouped: A1..A4, then A5 and B). The agent's seqs show the commit
 * order. */
static void test_workers_writes_fair_between_tenants(void)
{
    struct workers *w = new_workers(1, 4);
    if (!w) {
        return;
    }
    static struct pub_job a[5], b;
    static const char *payloads[] = {"{\"n\":\"A1\"}", "{\"n\":\"A2\"}", "{\"n\":\"A3\"}",
                                     "{\"n\":\"A4\"}", "{\"n\":\"A5\"}"};
    struct gate gate;
    gate_init(&gate, NULL);
    int base_done = completed;
    gate_close(w, &gate);
    for (int i = 0; i < 5; i++) {
        pub_init(&a[i], "fair", ROOST_OK);
        a[i].payload = payloads[i];
        a[i].job.tenant = workers_tenant_key("tenant-a");
        a[i].job.rows = 4;
        workers_submit(w, &a[i].job);
    }
    pub_init(&b, "fair", ROOST_OK);
    b.payload = "{\"n\":\"B\"}";
    b.job.tenant = workers_tenant_key("tenant-b");
    workers_submit(w, &b.job);
    gate_open(&gate);
    CHECK(loop_until(base_done + 7));
    struct workers_stats stats;
    workers_get_stats(w, &stats);
    CHECK_EQ(stats.commits, 7); /* the gate, A1, B, A2, A3, A4, A5 */
    workers_free(w);
    gate_destroy(&gate);

    struct store_events evs = {0};
    CHECK_EQ(inbox_of("fair", &evs), 6);
    const char *want[] = {"A1", "B", "A2", "A3", "A4", "A5"};
    for (size_t i = 0; i < evs.len && i < 6; i++) {
        char text[32];
        snprintf(text, sizeof text, "{\"n\":\"%s\"}", want[i]);
        CHECK_STREQ(evs.items[i].payload, text);
    }
    store_events_cleanup(&evs);
}

/* Two writers (MySQL: each its own connection). Jobs of one affinity go to the writer that has
 * one in flight: held behind a gate of affinity 1, agent a1's publishes wait for it while a2's
 * (affinity 2) run on the other writer at once; each agent's seqs come out 1..N in order, and
 * neither writer ever waited on the other's row locks (no retry). */
#define N_AFF 20
static void test_workers_writer_affinity(void)
{
    struct workers *w = new_workers_w(1, 2, 64);
    if (!w) {
        return;
    }
    static struct pub_job a1[N_AFF], a2[N_AFF];
    struct gate gate;
    gate_init(&gate, "a1");
    gate.job.affinity = 1;
    int base_done = completed;
    gate_close(w, &gate);
    for (int i = 0; i < N_AFF; i++) {
        pub_init(&a1[i], "a1", ROOST_OK);
        a1[i].job.affinity = 1;
        workers_submit(w, &a1[i].job);
        pub_init(&a2[i], "a2", ROOST_OK);
        a2[i].job.affinity = 2;
        workers_submit(w, &a2[i].job);
    }
    CHECK(loop_until(base_done + N_AFF));
    int a1_ran = 0, a2_done = 0;
    for (int i = 0; i < N_AFF; i++) {
        a1_ran += a1[i].runs + a1[i].done_calls;
        a2_done += a2[i].done_calls == 1 && a2[i].job.rc == ROOST_OK;
    }
    CHECK_EQ(a1_ran, 0);
    CHECK_EQ(a2_done, N_AFF);
    gate_open(&gate);
    CHECK(loop_until(base_done + 2 * N_AFF + 1));
    int a1_done = 0;
    for (int i = 0; i < N_AFF; i++) {
        a1_done += a1[i].done_calls == 1 && a1[i].job.rc == ROOST_OK;
    }
    CHECK_EQ(a1_done, N_AFF);
    CHECK_EQ(gate.job.rc, ROOST_OK);
    struct workers_stats stats;
    workers_get_stats(w, &stats);
    CHECK_EQ(stats.retries, 0);
    CHECK_EQ(stats.overlaps + stats.handoffs, 0); /* overlap is off by default */
    workers_free(w);
    gate_destroy(&gate);
    const char *agents[] = {"a1", "a2"};
    for (int a = 0; a < 2; a++) {
        struct store_events evs = {0};
        CHECK_EQ(inbox_of(agents[a], &evs), N_AFF + (a == 0));
        bool in_order = evs.len == (size_t)N_AFF + (a == 0);
        for (size_t i = 0; in_order && i < evs.len; i++) {
            in_order = evs.items[i].seq == (int64_t)i + 1;
        }
        CHECK(in_order);
        store_events_cleanup(&evs);
    }
}

/* Two writers (MySQL): the next group's statements run while the previous group's COMMIT waits.
 * BACKUP STAGE BLOCK_COMMIT holds every COMMIT on the server (statements go on). The gate, a
 * publish to agent ov, holds writer 1 while N_OV publishes to ov queue behind it (affinity); once
 * it commits, they move to the idle writer 2 (handoffs), whose group begins while writer 1's
 * COMMIT is in flight (overlaps) and waits on ov's row lock, which writer 1 holds until its COMMIT.
 * Nothing completes before the commits resume; then all do, without a retry, and ov's seqs are
 * 1..N_OV+1 in commit order with no gap (DESIGN §4.2). */
#define N_OV 10
static void block_commits(MYSQL *db, bool on)
{
    static const char *const stages[] = {"BACKUP STAGE START", "BACKUP STAGE FLUSH",
                                         "BACKUP STAGE BLOCK_DDL", "BACKUP STAGE BLOCK_COMMIT"};
    for (size_t i = 0; on && i < sizeof stages / sizeof stages[0]; i++) {
        CHECK_EQ(mysql_testutil_exec(db, stages[i]), 0);
    }
    if (!on) {
        CHECK_EQ(mysql_testutil_exec(db, "BACKUP STAGE END"), 0);
    }
}

/* Waits (30 s at most) until the pool's stats show at least `overlaps` overlapping groups. */
static bool wait_overlaps(struct workers *w, unsigned long long overlaps, struct workers_stats *st)
{
    for (int i = 0; i < 3000; i++) {
        workers_get_stats(w, st);
        if (st->overlaps >= overlaps) {
            return true;
        }
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return false;
}

static void test_workers_overlap_commit(void)
{
    MYSQL *ctl = mysql_testutil_connect(url);
    CHECK(ctl != NULL);
    struct workers *w = ctl ? new_workers_w(1, 2, 64) : NULL;
    if (!w) {
        if (ctl) {
            mysql_close(ctl);
        }
        return;
    }
    workers_set_overlap(w, true);
    static struct pub_job rest[N_OV];
    struct gate gate;
    gate_init(&gate, "ov");
    gate.job.affinity = 1;
    int base_done = completed;
    gate_close(w, &gate);
    for (int i = 0; i < N_OV; i++) {
        pub_init(&rest[i], "ov", ROOST_OK);
        rest[i].job.affinity = 1;
        workers_submit(w, &rest[i].job);
    }
    block_commits(ctl, true);
    gate_open(&gate);
    struct workers_stats stats;
    CHECK(wait_overlaps(w, 1, &stats));
    CHECK_EQ(stats.handoffs, N_OV);
    int done = 0;
    for (int i = 0; i < N_OV; i++) {
        done += rest[i].done_calls;
    }
    CHECK_EQ(done + gate.done_calls, 0);
    block_commits(ctl, false);
    CHECK(loop_until(base_done + N_OV + 1));
    int ok = gate.job.rc == ROOST_OK && gate.done_calls == 1;
    for (int i = 0; i < N_OV; i++) {
        ok += rest[i].job.rc == ROOST_OK && rest[i].done_calls == 1;
    }
    CHECK_EQ(ok, N_OV + 1);
    workers_get_stats(w, &stats);
    CHECK_EQ(stats.retries, 0);
    CHECK_EQ(stats.commits, 2);
    workers_free(w);
    gate_destroy(&gate);
    mysql_close(ctl);
    struct store_events evs = {0};
    CHECK_EQ(inbox_of("ov", &evs), N_OV + 1);
    bool in_order = evs.len == (size_t)N_OV + 1;
    for (size_t i = 0; in_order && i < evs.len; i++) {
        in_order = evs.items[i].seq == (int64_t)i + 1;
    }
    CHECK(in_order);
    store_events_cleanup(&evs);
}

static void test_workers_failing_job_rolled_back_alone(void)
{
    struct workers *w = new_workers(1, 64);
    if (!w) {
        return;
    }
    struct gate gate;
    gate_init(&gate, NULL);
    struct pub_job a, b, c;
    pub_init(&a, "sb1", ROOST_OK);
    pub_init(&b, "sb2", ROOST_EINVAL);
    pub_init(&c, "sb3", ROOST_OK);
    int base_done = completed;
    gate_close(w, &gate);
    workers_submit(w, &a.job);
    workers_submit(w, &b.job);
    workers_submit(w, &c.job);
    gate_open(&gate);
    CHECK(loop_until(base_done + 4));
    struct workers_stats stats;
    workers_get_stats(w, &stats);
    CHECK_EQ(stats.commits, 2); /* the gate, then a, b and c in one transaction */
    CHECK_EQ(stats.max_group, 3);
    CHECK_EQ(a.job.rc, ROOST_OK);
    CHECK_EQ(b.job.rc, ROOST_EINVAL);
    CHECK_EQ(c.job.rc, ROOST_OK);
    CHECK_EQ(a.done_calls + b.done_calls + c.done_calls, 3);
    workers_free(w);
    gate_destroy(&gate);
    CHECK_EQ(head_of("sb1"), 1);
    CHECK_EQ(head_of("sb2"), 0); /* its row and its agent are gone */
    CHECK_EQ(head_of("sb3"), 1);
}

/* A read submitted while the writer holds an open transaction (a published, uncommitted row) runs
 * to completion meanwhile and does not see the row; after the commit it does. */
static void test_workers_reads_beside_open_write(void)
{
    struct workers *w = new_workers(2, 64);
    if (!w) {
        return;
    }
    struct gate gate;
    gate_init(&gate, "rc");
    int base_done = completed;
    gate_close(w, &gate); /* the writer has published into "rc" and waits, uncommitted */
    struct read_job r1;
    read_init(&r1, "rc");
    workers_submit(w, &r1.job);
    CHECK(loop_until(base_done + 1));
    CHECK_EQ(r1.done_calls, 1);
    CHECK_EQ(gate.done_calls, 0); /* the write is still open */
    CHECK_EQ(r1.job.rc, ROOST_OK);
    CHECK_EQ(r1.head, 0);
    CHECK_EQ(r1.n_events, 0);
    gate_open(&gate);
    CHECK(loop_until(base_done + 2));
    CHECK_EQ(gate.job.rc, ROOST_OK);
    struct read_job r2;
    read_init(&r2, "rc");
    workers_submit(w, &r2.job);
    CHECK(loop_until(base_done + 3));
    CHECK_EQ(r2.job.rc, ROOST_OK);
    CHECK_EQ(r2.head, 1);
    CHECK_EQ(r2.n_events, 1);
    workers_free(w);
    gate_destroy(&gate);
}

/* A read gate of `tenant` (a scan when scan): blocks its reader until opened. */
static void read_gate_init(struct gate *g, const char *tenant, bool scan)
{
    gate_init(g, NULL);
    g->job.write = false;
    g->job.tenant = workers_tenant_key(tenant);
    g->job.scan = scan;
}

static bool gate_entered(struct gate *g)
{
    pthread_mutex_lock(&g->mu);
    bool entered = g->entered;
    pthread_mutex_unlock(&g->mu);
    return entered;
}

/* One tenant never holds every reader: with two readers, tenant A's first read holds one and its
 * second waits for it, so tenant B's read runs on the other although it came after A's. */
static void test_workers_tenant_share_of_readers(void)
{
    struct workers *w = new_workers(2, 64);
    if (!w) {
        return;
    }
    struct gate a1, a2;
    read_gate_init(&a1, "tenant-a", false);
    read_gate_init(&a2, "tenant-a", false);
    int base_done = completed;
    gate_close(w, &a1);
    workers_submit(w, &a2.job);
    struct read_job b;
    read_init(&b, "share");
    b.job.tenant = workers_tenant_key("tenant-b");
    workers_submit(w, &b.job);
    CHECK(loop_until(base_done + 1));
    CHECK_EQ(b.done_calls, 1);
    CHECK_EQ(b.job.rc, ROOST_OK);
    CHECK(!gate_entered(&a2)); /* A's second read still waits for A's first */
    struct workers_stats ws;
    workers_get_stats(w, &ws);
    CHECK(ws.reads_deferred >= 1);
    gate_open(&a2);
    gate_open(&a1);
    CHECK(loop_until(base_done + 3));
    CHECK_EQ(a1.done_calls, 1);
    CHECK_EQ(a2.done_calls, 1);
    workers_free(w);
    gate_destroy(&a1);
    gate_destroy(&a2);
}

/* A scan runs on the scan reader: while one is held, inbox reads of every tenant (the scanning
 * one's too) still run on the one reader; and the scan lane takes tenants in turn, so B's scan
 * queued behind A's second one runs first once A's first ends. */
static void test_workers_scans_off_the_readers(void)
{
    struct workers *w = new_workers_s(1, 1, 1, 64);
    if (!w) {
        return;
    }
    struct gate s1, s2, sb;
    read_gate_init(&s1, "tenant-a", true);
    read_gate_init(&s2, "tenant-a", true);
    read_gate_init(&sb, "tenant-b", true);
    int base_done = completed;
    gate_close(w, &s1);
    workers_submit(w, &s2.job);
    workers_submit(w, &sb.job);
    struct read_job ra, rb;
    read_init(&ra, "scan");
    ra.job.tenant = workers_tenant_key("tenant-a");
    read_init(&rb, "scan");
    rb.job.tenant = workers_tenant_key("tenant-b");
    workers_submit(w, &ra.job);
    workers_submit(w, &rb.job);
    CHECK(loop_until(base_done + 2));
    CHECK_EQ(ra.done_calls, 1);
    CHECK_EQ(rb.done_calls, 1);
    CHECK_EQ(s1.done_calls, 0);
    /* Round robin: with s1 done, B's scan is taken before A's second. */
    gate_open(&sb);
    gate_open(&s1);
    CHECK(loop_until(base_done + 4));
    CHECK_EQ(sb.done_calls, 1);
    CHECK_EQ(s2.done_calls, 0);
    gate_open(&s2);
    CHECK(loop_until(base_done + 5));
    struct workers_stats ws;
    workers_get_stats(w, &ws);
    CHECK_EQ(ws.scans, 3);
    workers_free(w);
    gate_destroy(&s1);
    gate_destroy(&s2);
    gate_destroy(&sb);
}

#define N_MIX 120

/* Many reads interleaved with writes, a third of which fail after writing: every read sees a
 * gap-free prefix of committed rows and never a row of a failed job. */
static void test_workers_reads_concurrent_with_writes(void)
{
    struct workers *w = new_workers(3, 8);
    if (!w) {
        return;
    }
    static struct pub_job writes[N_MIX];
    static struct read_job reads[N_MIX];
    int base_done = completed;
    for (int i = 0; i < N_MIX; i++) {
        bool fail = i % 3 == 1;
        pub_init(&writes[i], "mix", fail ? ROOST_EINVAL : ROOST_OK);
        writes[i].payload = fail ? "{\"ok\":false}" : "{\"ok\":true}";
        workers_submit(w, &writes[i].job);
        read_init(&reads[i], "mix");
        workers_submit(w, &reads[i].job);
    }
    CHECK(loop_until(base_done + 2 * N_MIX));
    CHECK_EQ(__atomic_load_n(&off_loop, __ATOMIC_SEQ_CST), 0);
    int good_reads = 0, good_writes = 0;
    int64_t committed = 0;
    for (int i = 0; i < N_MIX; i++) {
        struct read_job *r = &reads[i];
        good_reads += r->done_calls == 1 && r->job.rc == ROOST_OK && r->contiguous &&
                      !r->saw_failed && r->head == (int64_t)r->n_events;
        bool fail = i % 3 == 1;
        good_writes += writes[i].done_calls == 1 && writes[i].job.rc == (fail ? ROOST_EINVAL : 0);
        committed += !fail;
    }
    CHECK_EQ(good_reads, N_MIX);
    CHECK_EQ(good_writes, N_MIX);
    workers_free(w);
    struct store_events evs = {0};
    CHECK_EQ(inbox_of("mix", &evs), committed);
    bool clean = (int64_t)evs.len == committed;
    for (size_t i = 0; clean && i < evs.len; i++) {
        clean = evs.items[i].seq == (int64_t)i + 1 && evs.items[i].payload &&
                strstr(evs.items[i].payload, "true") != NULL;
    }
    CHECK(clean);
    store_events_cleanup(&evs);
}

/* Jobs queued right before workers_free still run and get exactly one done(). */
static void test_workers_free_drains(void)
{
    struct workers *w = new_workers(2, 16);
    if (!w) {
        return;
    }
    static struct pub_job writes[50];
    static struct read_job reads[30];
    int base_done = completed;
    for (int i = 0; i < 50; i++) {
        pub_init(&writes[i], "drain", ROOST_OK);
        workers_submit(w, &writes[i].job);
        if (i < 30) {
            read_init(&reads[i], "drain");
            workers_submit(w, &reads[i].job);
        }
    }
    workers_free(w); /* the loop never ran: completions are delivered from here */
    event_base_loop(base, EVLOOP_NONBLOCK);
    CHECK_EQ(completed - base_done, 80);
    CHECK_EQ(__atomic_load_n(&off_loop, __ATOMIC_SEQ_CST), 0);
    int once = 0;
    for (int i = 0; i < 50; i++) {
        once += writes[i].done_calls == 1 && writes[i].job.rc == ROOST_OK;
    }
    for (int i = 0; i < 30; i++) {
        once += reads[i].done_calls == 1 && reads[i].job.rc == ROOST_OK;
    }
    CHECK_EQ(once, 80);
    CHECK_EQ(head_of("drain"), 50);
}

/* A done() delivered by workers_free that submits the request's next job (a body parsed on a
 * scan reader, then the handler's write): that job gets its done() too, with ROOST_ESHUTDOWN, or
 * its request would never end (and the job would leak with the freed pool). */
struct chain_job {
    struct read_job first;
    struct read_job next;
    struct workers *w;
};

static void done_chain_first(struct job *job)
{
    struct chain_job *c = (struct chain_job *)job;
    c->first.done_calls++;
    read_init(&c->next, "chain");
    workers_submit(c->w, &c->next.job);
}

static void test_workers_free_chained_submit(void)
{
    struct workers *w = new_workers(1, 4);
    if (!w) {
        return;
    }
    static struct chain_job chains[3];
    for (int i = 0; i < 3; i++) {
        read_init(&chains[i].first, "chain");
        chains[i].first.job.done = done_chain_first;
        chains[i].first.job.scan = i == 1;
        chains[i].w = w;
        workers_submit(w, &chains[i].first.job);
    }
    workers_free(w); /* the loop never ran: every done() comes from here */
    event_base_loop(base, EVLOOP_NONBLOCK);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(chains[i].first.done_calls, 1);
        CHECK_EQ(chains[i].first.job.rc, ROOST_OK);
        CHECK_EQ(chains[i].next.done_calls, 1);
        CHECK_EQ(chains[i].next.job.rc, ROOST_ESHUTDOWN);
    }
}

/* Same, but the loop is running: some completions go through the loop, the rest through
 * workers_free; each job still gets exactly one done(). */
static void test_workers_free_drains_after_loop(void)
{
    struct workers *w = new_workers(1, 4);
    if (!w) {
        return;
    }
    static struct pub_job writes[40];
    int base_done = completed;
    for (int i = 0; i < 40; i++) {
        pub_init(&writes[i], "drain2", ROOST_OK);
        workers_submit(w, &writes[i].job);
    }
    CHECK(loop_until(base_done + 1)); /* at least one came back through the loop */
    workers_free(w);
    event_base_loop(base, EVLOOP_NONBLOCK);
    CHECK_EQ(completed - base_done, 40);
    int once = 0;
    for (int i = 0; i < 40; i++) {
        once += writes[i].done_calls == 1 && writes[i].job.rc == ROOST_OK;
    }
    CHECK_EQ(once, 40);
}

struct retry_job {
    struct job job;
    int runs;
    int done_calls;
};

static int run_retry(struct job *job, struct store *st)
{
    (void)st;
    ((struct retry_job *)job)->runs++;
    return ROOST_ERETRY;
}

static void done_retry(struct job *job)
{
    ((struct retry_job *)job)->done_calls++;
    note_done();
}

/* A job that keeps returning ROOST_ERETRY makes its group retry a bounded number of times, then
 * fails with ROOST_ERETRY; nothing of the group is committed and the writer goes on working. */
static void test_workers_retry_bounded(void)
{
    struct workers *w = new_workers(1, 64);
    if (!w) {
        return;
    }
    struct gate gate;
    gate_init(&gate, NULL);
    struct pub_job before, after;
    pub_init(&before, "re", ROOST_OK);
    struct retry_job rj = {.job = {.run = run_retry, .done = done_retry, .write = true}};
    int base_done = completed;
    gate_close(w, &gate);
    workers_submit(w, &before.job);
    workers_submit(w, &rj.job);
    gate_open(&gate);
    if (!loop_until(base_done + 3)) {
        /* The retry never ended: workers_free would wait for it forever. */
        CHECK(!"the retried group never completed");
        exit(check_summary());
    }
    CHECK_EQ(rj.job.rc, ROOST_ERETRY);
    CHECK_EQ(rj.done_calls, 1);
    CHECK(rj.runs > 1);
    CHECK(rj.runs <= 16);
    CHECK_EQ(before.done_calls, 1);
    CHECK_EQ(before.runs, rj.runs); /* the whole group re-ran each time */
    struct workers_stats stats;
    workers_get_stats(w, &stats);
    CHECK_EQ(stats.retries, (unsigned long long)rj.runs - 1);
    CHECK_EQ(stats.commits, 1); /* only the gate */
    /* A failed group fails every job of it: none of its work is durable. */
    CHECK_EQ(before.job.rc, ROOST_ERETRY);
    CHECK_EQ(head_of("re"), 0);

    pub_init(&after, "re", ROOST_OK);
    workers_submit(w, &after.job);
    CHECK(loop_until(base_done + 4));
    CHECK_EQ(after.job.rc, ROOST_OK);
    workers_free(w);
    gate_destroy(&gate);
    CHECK_EQ(head_of("re"), 1);
}

/* ---- mixed groups through the batch kinds ---- */

/* A publish, ack or claim job as the server's: publishes and acks have a batch kind (they run
 * together through store_publish_batch / store_ack_batch), claims run alone. */
enum mix_kind { MIX_PUB, MIX_ACK, MIX_CLAIM };

struct mix_job {
    struct job job;
    enum mix_kind kind;
    const char *agent;
    const char *patch;                     /* publish: a state patch, or NULL */
    char event_id[STORE_EVENT_ID_LEN + 1]; /* ack */
    char token[STORE_LEASE_TOKEN_LEN + 1]; /* ack */
    const char *recipients[1];
    struct store_publish_item item;
    struct store_publish_req req;
    struct store_published out;
    struct store_touches touches;
    struct store_events claimed;
    size_t limit; /* claim */
    bool has_more;
    int done_calls;
};

#define MIX_NOW 1700000000000LL
#define MIX_MAX_STATE 64

static void mix_req(struct mix_job *m)
{
    m->recipients[0] = m->agent;
    m->item = (struct store_publish_item){.recipients = m->recipients,
                                          .n_recipients = 1,
                                          .payload = "{\"mix\":1}",
                                          .state_patch = m->patch};
    m->req = (struct store_publish_req){.tenant_id = TENANT,
                                        .items = &m->item,
                                        .n_items = 1,
                                        .now_ms = MIX_NOW,
                                        .max_state_bytes = MIX_MAX_STATE};
}

static int run_mix(struct job *job, struct store *st)
{
    struct mix_job *m = (struct mix_job *)job;
    switch (m->kind) {
    case MIX_PUB:
        store_touches_cleanup(&m->touches);
        mix_req(m);
        return store_call(st, publish, &m->req, &m->out, &m->touches);
    case MIX_ACK:
        return store_call(st, ack, TENANT, m->agent, m->event_id, m->token, MIX_NOW, NULL);
    case MIX_CLAIM:
        store_events_cleanup(&m->claimed);
        return store_call(st, claim, TENANT, m->agent, m->limit, 0, 60, "c", MIX_NOW, &m->claimed,
                          &m->has_more);
    }
    return ROOST_EINTERNAL;
}

static int run_mix_pubs(struct job *const *jobs, size_t n, struct store *st)
{
    struct store_publish_entry entries[16];
    CHECK(n <= 16);
    for (size_t i = 0; i < n && i < 16; i++) {
        struct mix_job *m = (struct mix_job *)jobs[i];
        store_touches_cleanup(&m->touches);
        mix_req(m);
        entries[i] =
            (struct store_publish_entry){.req = &m->req, .out = &m->out, .touches = &m->touches};
    }
    int rc = store_publish_batch(st, entries, n);
    for (size_t i = 0; i < n && i < 16; i++) {
        jobs[i]->rc = entries[i].rc;
    }
    return rc;
}

static int run_mix_acks(struct job *const *jobs, size_t n, struct store *st)
{
    struct store_ack_entry entries[16];
    CHECK(n <= 16);
    for (size_t i = 0; i < n && i < 16; i++) {
        struct mix_job *m = (struct mix_job *)jobs[i];
        entries[i] = (struct store_ack_entry){.tenant_id = TENANT,
                                              .agent_id = m->agent,
                                              .event_id = m->event_id,
                                              .lease_token = m->token};
    }
    int rc = store_ack_batch(st, entries, n, MIX_NOW);
    for (size_t i = 0; i < n && i < 16; i++) {
        jobs[i]->rc = entries[i].rc;
    }
    return rc;
}

static int run_mix_claims(struct job *const *jobs, size_t n, struct store *st)
{
    struct store_claim_entry entries[16];
    CHECK(n <= 16);
    for (size_t i = 0; i < n && i < 16; i++) {
        struct mix_job *m = (struct mix_job *)jobs[i];
        store_events_cleanup(&m->claimed);
        entries[i] = (struct store_claim_entry){.tenant_id = TENANT,
                                                .agent_id = m->agent,
                                                .limit = m->limit,
                                                .lease_s = 60,
                                                .consumer = "c",
                                                .out = &m->claimed};
    }
    int rc = store_claim_batch(st, entries, n, MIX_NOW);
    for (size_t i = 0; i < n && i < 16; i++) {
        ((struct mix_job *)jobs[i])->has_more = entries[i].has_more;
        jobs[i]->rc = entries[i].rc;
    }
    return rc;
}

static const struct job_batch mix_claims = {.run = run_mix_claims};
static const struct job_batch mix_pubs = {.run = run_mix_pubs, .last = true};
static const struct job_batch mix_acks = {.run = run_mix_acks};

static void done_mix(struct job *job)
{
    struct mix_job *m = (struct mix_job *)job;
    m->done_calls++;
    note_done();
}

static void mix_init(struct mix_job *m, enum mix_kind kind, const char *agent)
{
    memset(m, 0, sizeof *m);
    m->kind = kind;
    m->agent = agent;
    m->job.run = run_mix;
    m->job.done = done_mix;
    m->job.write = true;
    m->job.batch = kind == MIX_PUB ? &mix_pubs : kind == MIX_ACK ? &mix_acks : &mix_claims;
    m->limit = 10;
}

static void mix_cleanup(struct mix_job *m)
{
    store_touches_cleanup(&m->touches);
    store_events_cleanup(&m->claimed);
}

/* Publishes `n` events to agent and claims them through a connection of our own; the claimed
 * events go to out. */
static void mix_setup(const char *agent, int n, struct store_events *out)
{
    struct store *st = NULL;
    const char *why = NULL;
    CHECK_EQ(store_open(url, &store_opt, &st, &why), ROOST_OK);
    if (st == NULL) {
        return;
    }
    CHECK_EQ(store_call0(st, begin), ROOST_OK);
    for (int i = 0; i < n; i++) {
        CHECK_EQ(publish_one(st, agent, "{\"setup\":1}"), ROOST_OK);
    }
    CHECK_EQ(store_call0(st, commit), ROOST_OK);
    if (out != NULL) {
        CHECK_EQ(store_call0(st, begin), ROOST_OK);
        CHECK_EQ(store_call(st, claim, TENANT, agent, 100, 0, 60, "s", MIX_NOW, out, NULL),
                 ROOST_OK);
        CHECK_EQ(store_call0(st, commit), ROOST_OK);
    }
    store_close(st);
}

static char *state_of(const char *agent)
{
    struct store *st = NULL;
    const char *why = NULL;
    char *state = NULL;
    int64_t cursor = 0;
    if (store_open(url, &store_opt, &st, &why) == ROOST_OK) {
        CHECK_EQ(store_call(st, state_get, TENANT, agent, &state, &cursor), ROOST_OK);
        store_close(st);
    }
    return state;
}

/* One group of publishes (batched), acks (batched) and a claim (alone) where one publish fails
 * after writing (its state patch passes max_state_bytes) and one ack names a stale token: the
 * others commit, the failed publish leaves no row, no agent and no state, the stale ack changes
 * nothing. A second group without failures shares its statements (two batches). */
static void test_workers_mixed_group_one_fails(void)
{
    struct store_events held = {0};
    mix_setup("mx-acked", 3, &held);
    mix_setup("mx-claim", 2, NULL);
    CHECK_EQ(held.len, 3);
    if (held.len != 3) {
        store_events_cleanup(&held);
        return;
    }
    struct workers *w = new_workers(1, 64);
    if (!w) {
        store_events_cleanup(&held);
        return;
    }
    enum { N = 9 };
    static struct mix_job jobs[N];
    mix_init(&jobs[0], MIX_PUB, "mx-a");
    mix_init(&jobs[1], MIX_ACK, "mx-acked");
    mix_init(&jobs[2], MIX_PUB, "mx-b");
    jobs[2].patch =
        "{\"big\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}";
    mix_init(&jobs[3], MIX_CLAIM, "mx-claim");
    mix_init(&jobs[4], MIX_ACK, "mx-acked");
    mix_init(&jobs[5], MIX_PUB, "mx-a");
    mix_init(&jobs[6], MIX_ACK, "mx-acked");
    mix_init(&jobs[7], MIX_PUB, "mx-c");
    mix_init(&jobs[8], MIX_PUB, "mx-a");
    int acks[3] = {1, 4, 6};
    for (int i = 0; i < 3; i++) {
        struct mix_job *m = &jobs[acks[i]];
        memcpy(m->event_id, held.items[i].event_id, sizeof m->event_id);
        memcpy(m->token, held.items[i].lease_token, sizeof m->token);
    }
    memcpy(jobs[4].token, held.items[2].lease_token, sizeof jobs[4].token); /* stale: another's */

    struct gate gate;
    gate_init(&gate, NULL);
    int base_done = completed;
    gate_close(w, &gate);
    for (int i = 0; i < N; i++) {
        workers_submit(w, &jobs[i].job);
    }
    gate_open(&gate);
    CHECK(loop_until(base_done + N + 1));
    struct workers_stats stats;
    workers_get_stats(w, &stats);
    CHECK_EQ(stats.commits, 2); /* the gate, then the group */
    CHECK_EQ(stats.max_group, N);
    int want[N] = {ROOST_OK,
                   ROOST_OK,
                   ROOST_ESTATETOOLARGE,
                   ROOST_OK,
                   ROOST_ELEASEMISMATCH,
                   ROOST_OK,
                   ROOST_OK,
                   ROOST_OK,
                   ROOST_OK};
    for (int i = 0; i < N; i++) {
        CHECK_EQ(jobs[i].job.rc, want[i]);
        CHECK_EQ(jobs[i].done_calls, 1);
    }
    /* mx-a's three publishes took 1, 2, 3 in queue order, the touches carry the heads. */
    CHECK_EQ(jobs[0].out.seq, 1);
    CHECK_EQ(jobs[5].out.seq, 2);
    CHECK_EQ(jobs[8].out.seq, 3);
    CHECK_EQ(jobs[7].out.seq, 1);
    CHECK_EQ(jobs[8].touches.len, 1);
    CHECK_EQ(jobs[3].claimed.len, 2);
    workers_free(w);
    gate_destroy(&gate);
    CHECK_EQ(head_of("mx-a"), 3);
    CHECK_EQ(head_of("mx-c"), 1);
    CHECK_EQ(head_of("mx-b"), 0); /* no row, no agent */
    char *state = state_of("mx-b");
    CHECK(state != NULL && strcmp(state, "{}") == 0);
    free(state);
    struct store_events evs = {0};
    CHECK_EQ(inbox_of("mx-acked", &evs), 3);
    CHECK_EQ(evs.len, 3);
    for (size_t i = 0; i < evs.len && i < 3; i++) {
        /* The stale ack (of the second event, with the third's token) left it claimed; the
         * others completed it and the third. */
        CHECK_EQ(evs.items[i].status, i == 1 ? STORE_CLAIMED : STORE_COMPLETED);
    }
    store_events_cleanup(&evs);
    for (int i = 0; i < N; i++) {
        mix_cleanup(&jobs[i]);
    }

    /* No failure: the publishes share one batch, the acks another, and two claims of one agent
     * with 3 pending events a third: one read, split in claim order (2 and 1, disjoint). */
    mix_setup("mx-claim2", 3, NULL);
    w = new_workers(1, 64);
    if (!w) {
        store_events_cleanup(&held);
        return;
    }
    mix_init(&jobs[0], MIX_PUB, "mx-d");
    mix_init(&jobs[1], MIX_ACK, "mx-acked");
    mix_init(&jobs[2], MIX_PUB, "mx-e");
    mix_init(&jobs[3], MIX_ACK, "mx-acked");
    mix_init(&jobs[4], MIX_PUB, "mx-d");
    mix_init(&jobs[5], MIX_CLAIM, "mx-claim2");
    mix_init(&jobs[6], MIX_CLAIM, "mx-claim2");
    jobs[5].limit = jobs[6].limit = 2;
    memcpy(jobs[1].event_id, held.items[1].event_id, sizeof jobs[1].event_id);
    memcpy(jobs[1].token, held.items[1].lease_token, sizeof jobs[1].token);
    memcpy(jobs[3].event_id, held.items[1].event_id, sizeof jobs[3].event_id);
    memcpy(jobs[3].token, held.items[1].lease_token, sizeof jobs[3].token); /* repeated ack */
    gate_init(&gate, NULL);
    base_done = completed;
    gate_close(w, &gate);
    for (int i = 0; i < 7; i++) {
        workers_submit(w, &jobs[i].job);
    }
    gate_open(&gate);
    CHECK(loop_until(base_done + 8));
    workers_get_stats(w, &stats);
    CHECK_EQ(stats.commits, 2);
    CHECK_EQ(stats.batches, 3);
    CHECK_EQ(stats.batched_jobs, 7);
    for (int i = 0; i < 7; i++) {
        CHECK_EQ(jobs[i].job.rc, ROOST_OK);
    }
    CHECK_EQ(jobs[5].claimed.len, 2);
    CHECK_EQ(jobs[6].claimed.len, 1);
    CHECK(jobs[5].has_more);
    CHECK(!jobs[6].has_more);
    if (jobs[5].claimed.len == 2 && jobs[6].claimed.len == 1) {
        CHECK_EQ(jobs[5].claimed.items[0].seq, 1);
        CHECK_EQ(jobs[5].claimed.items[1].seq, 2);
        CHECK_EQ(jobs[6].claimed.items[0].seq, 3);
        CHECK(strcmp(jobs[5].claimed.items[0].lease_token, jobs[6].claimed.items[0].lease_token) !=
              0);
    }
    CHECK_EQ(jobs[0].out.seq, 1);
    CHECK_EQ(jobs[4].out.seq, 2);
    CHECK_EQ(jobs[2].out.seq, 1);
    workers_free(w);
    gate_destroy(&gate);
    CHECK_EQ(head_of("mx-d"), 2);
    CHECK_EQ(inbox_of("mx-acked", &evs), 3);
    for (size_t i = 0; i < evs.len; i++) {
        CHECK_EQ(evs.items[i].status, STORE_COMPLETED);
    }
    store_events_cleanup(&evs);
    CHECK_EQ(inbox_of("mx-claim2", &evs), 3);
    for (size_t i = 0; i < evs.len; i++) {
        CHECK_EQ(evs.items[i].status, STORE_CLAIMED);
        CHECK_EQ(evs.items[i].attempts, 1);
    }
    store_events_cleanup(&evs);
    for (int i = 0; i < 7; i++) {
        mix_cleanup(&jobs[i]);
    }
    store_events_cleanup(&held);
}

static void remove_dir(void)
{
    static const char *const names[] = {"roost.db", "roost.db-wal", "roost.db-shm",
                                        "roost.db-journal"};
    char path[400];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", tmpdir, names[i]);
        unlink(path);
    }
    rmdir(tmpdir);
}

int main(int argc, char **argv)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/roost-workers-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    snprintf(url, sizeof url, "sqlite://%s/roost.db", tmpdir);
    if (argc > 1 && mysql_testutil_fresh_db(argv[1], "workers", url, sizeof url) != 0) {
        fprintf(stderr, "cannot create a database on %s\n", argv[1]);
        return 2;
    }
    if (evthread_use_pthreads() != 0 || !(base = event_base_new())) {
        fprintf(stderr, "cannot create the event base\n");
        return 2;
    }
    loop_thread = pthread_self();

    RUN(test_workers_group_commit);
    RUN(test_workers_group_commit_ungated);
    RUN(test_workers_writes_fair_between_tenants);
    RUN(test_workers_failing_job_rolled_back_alone);
    RUN(test_workers_reads_beside_open_write);
    RUN(test_workers_reads_concurrent_with_writes);
    RUN(test_workers_free_drains);
    RUN(test_workers_free_drains_after_loop);
    RUN(test_workers_free_chained_submit);
    RUN(test_workers_retry_bounded);
    RUN(test_workers_mixed_group_one_fails);
    RUN(test_workers_tenant_share_of_readers);
    RUN(test_workers_scans_off_the_readers);
    if (argc > 1) {
        /* SQLite has one writer at a time: a second writer would wait on the gate's lock. */
        RUN(test_workers_writer_affinity);
        RUN(test_workers_overlap_commit);
    }

    event_base_free(base);
    remove_dir();
    if (argc > 1) {
        mysql_testutil_drop_db(url);
    }
    return check_summary();
}
