/* SPDX-License-Identifier: MIT */
/* Unit tests of src/server/workers.c against a real SQLite store and a real event loop: group
 * commit (grouping, done() on the loop thread, seqs in order), a failing job rolled back alone
 * inside its group, reads running beside an open write transaction and seeing committed data only,
 * workers_free draining every queued job, and the bounded retry of ROOST_ERETRY. With a mysql://
 * URL as argument (ctest test_workers_mysql) the same tests run on a fresh MariaDB database. */
#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
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

static struct workers *new_workers(int readers, int group_max)
{
    struct workers *w = NULL;
    char err[256] = "";
    int rc = workers_new(base, url, &store_opt, readers, 1, group_max, &w, err, sizeof err);
    CHECK_EQ(rc, ROOST_OK);
    if (rc != ROOST_OK) {
        fprintf(stderr, "workers_new: %s\n", err);
    }
    return w;
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
    RUN(test_workers_failing_job_rolled_back_alone);
    RUN(test_workers_reads_beside_open_write);
    RUN(test_workers_reads_concurrent_with_writes);
    RUN(test_workers_free_drains);
    RUN(test_workers_free_drains_after_loop);
    RUN(test_workers_retry_bounded);

    event_base_free(base);
    remove_dir();
    if (argc > 1) {
        mysql_testutil_drop_db(url);
    }
    return check_summary();
}
