/* SPDX-License-Identifier: MIT */
/* The store conformance suite: every behaviour store.h promises, run against one backend named on
 * the command line (`test_store_conformance sqlite`, `test_store_conformance mysql://...`,
 * `postgres://...` or `mysql` with ROOST_TEST_STORE_URL). Only backend_fresh()/backend_dispose()
 * know about a backend; every test gets a fresh, migrated database. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/check.h"
#include "mysql/mysql_testutil.h"
#include "pg/pg_testutil.h"
#include "store/conformance_webhooks.h"
#include "store/store.h"
#include "store/store_sources.h"

#include "common/banned.h"

#define T0 1700000000000LL /* the tests' "now" */
#define TA "tenant-a"
#define TB "tenant-b"

static const char *g_backend;
static const char *g_base_url; /* mysql: the server's URL; each test gets its own database */
static struct store *g_st;     /* for error detail in failure lines */

/* A store call's return code, with the store's error detail on failure. */
#define CHECK_RC(expr, want)                                                                       \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ == (want)) {                                                                       \
            check_pass();                                                                          \
        } else {                                                                                   \
            check_fail(__FILE__, __LINE__, "%s = %s, want %s (%s)", #expr, roost_err_name(rc_),    \
                       roost_err_name(want), g_st != NULL ? g_st->ops->errmsg(g_st) : "");         \
        }                                                                                          \
    } while (0)

/* ---- backend-specific: the only place that knows how to make a fresh database ---- */

struct fx {
    struct store *st;
    char url[1024];
    char dir[512];
    bool own_db;     /* mysql: drop the database at the end */
    bool own_schema; /* postgres: drop the schema at the end */
};

/* Prepares a fresh, empty database and writes its URL. */
static int backend_fresh(struct fx *f)
{
    if (strcmp(g_backend, "sqlite") == 0) {
        const char *tmp = getenv("TMPDIR");
        snprintf(f->dir, sizeof f->dir, "%s/roost-store-XXXXXX", tmp != NULL ? tmp : "/tmp");
        if (mkdtemp(f->dir) == NULL) {
            printf("mkdtemp: %s\n", strerror(errno));
            return -1;
        }
        snprintf(f->url, sizeof f->url, "sqlite://%s/roost.db", f->dir);
        return 0;
    }
    /* mysql: a database of its own on the server the test script started; postgres: a schema
     * of its own. */
    f->dir[0] = '\0';
    if (g_base_url == NULL) {
        printf("backend %s needs a URL argument or ROOST_TEST_STORE_URL\n", g_backend);
        return -1;
    }
    if (strcmp(g_backend, "postgres") == 0) {
        if (pg_testutil_fresh_schema(g_base_url, check_test + 5, f->url, sizeof f->url) != 0) {
            return -1;
        }
        f->own_schema = true;
        return 0;
    }
    if (mysql_testutil_fresh_db(g_base_url, check_test + 5, f->url, sizeof f->url) != 0) {
        return -1;
    }
    f->own_db = true;
    return 0;
}

static void backend_dispose(struct fx *f)
{
    if (f->own_db) {
        mysql_testutil_drop_db(f->url);
        f->own_db = false;
    }
    if (f->own_schema) {
        pg_testutil_drop_schema(f->url);
        f->own_schema = false;
    }
    if (f->dir[0] == '\0') {
        return;
    }
    static const char *const files[] = {"roost.db", "roost.db-wal", "roost.db-shm",
                                        "roost.db-journal"};
    char path[600];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", f->dir, files[i]);
        unlink(path);
    }
    rmdir(f->dir);
}

/* ---- fixture and helpers ---- */

static struct store *open_conn(const char *url)
{
    struct store *st = NULL;
    const char *err = NULL;
    struct store_options opt = {.busy_timeout_ms = 10000, .synchronous_full = false};
    int rc = store_open(url, &opt, &st, &err);
    if (rc != ROOST_OK) {
        printf("store_open(%s): %s: %s\n", url, roost_err_name(rc), err != NULL ? err : "");
        return NULL;
    }
    return st;
}

static int fx_open(struct fx *f)
{
    memset(f, 0, sizeof *f);
    if (backend_fresh(f) != 0 || (f->st = open_conn(f->url)) == NULL) {
        return -1;
    }
    g_st = f->st;
    int rc = f->st->ops->migrate(f->st);
    if (rc != ROOST_OK) {
        printf("migrate: %s: %s\n", roost_err_name(rc), f->st->ops->errmsg(f->st));
        return -1;
    }
    return 0;
}

static void fx_close(struct fx *f)
{
    store_close(f->st);
    g_st = NULL;
    backend_dispose(f);
}

static int tx_begin(struct store *st)
{
    int rc;
    while ((rc = st->ops->begin(st)) == ROOST_ERETRY) {
    }
    return rc;
}

/* Commits when the operation succeeded, rolls back otherwise; returns the operation's code. */
static int tx_end(struct store *st, int rc)
{
    if (rc == ROOST_OK) {
        return st->ops->commit(st);
    }
    st->ops->rollback(st);
    return rc;
}

/* Runs one write operation in its own transaction, as the server's workers do. */
#define IN_TX(st, call) (tx_begin(st) == ROOST_OK ? tx_end((st), (call)) : ROOST_ESTORE)

struct pubopt {
    int priority;
    const char *idem;
    int64_t available_at;
    int64_t expires_at;
    const char *patch;
    const char *corr;
    size_t max_state;
};

/* Publishes one event to one or more recipients in one transaction. */
static int publish_to(struct store *st, const char *tenant, const char *const *recipients, size_t n,
                      const char *payload, const struct pubopt *o, int64_t now,
                      struct store_published *out, struct store_touches *touches)
{
    static const struct pubopt none = {0};
    if (o == NULL) {
        o = &none;
    }
    struct store_publish_item item = {
        .recipients = recipients,
        .n_recipients = n,
        .payload = payload,
        .priority = o->priority,
        .correlation_id = o->corr,
        .idempotency_key = o->idem,
        .available_at_ms = o->available_at,
        .expires_at_ms = o->expires_at,
        .state_patch = o->patch,
    };
    struct store_publish_req req = {.tenant_id = tenant,
                                    .items = &item,
                                    .n_items = 1,
                                    .now_ms = now,
                                    .max_state_bytes = o->max_state};
    return IN_TX(st, st->ops->publish(st, &req, out, touches));
}

static int64_t pub1(struct store *st, const char *tenant, const char *agent, const char *payload,
                    const struct pubopt *o, int64_t now, char *event_id)
{
    struct store_published out;
    const char *r[] = {agent};
    int rc = publish_to(st, tenant, r, 1, payload, o, now, &out, NULL);
    CHECK_RC(rc, ROOST_OK);
    if (rc != ROOST_OK) {
        return -1;
    }
    if (event_id != NULL) {
        memcpy(event_id, out.event_id, sizeof out.event_id);
    }
    return out.seq;
}

static int claim(struct store *st, const char *tenant, const char *agent, size_t limit,
                 int64_t lease_s, const char *consumer, int64_t now, struct store_events *out)
{
    return IN_TX(st,
                 st->ops->claim(st, tenant, agent, limit, 0, lease_s, consumer, now, out, NULL));
}

static int ack(struct store *st, const char *tenant, const char *agent, const char *event_id,
               const char *token, int64_t now)
{
    return IN_TX(st, st->ops->ack(st, tenant, agent, event_id, token, now, NULL));
}

static int release(struct store *st, const char *tenant, const char *agent,
                   const struct store_event *ev, enum store_release_reason reason, int64_t delay_s,
                   const char *error, int max_attempts, int64_t now, struct store_touches *touches)
{
    return IN_TX(st, st->ops->release(st, tenant, agent, ev->event_id, ev->lease_token, reason,
                                      delay_s, error, max_attempts, now, touches, NULL));
}

static int scavenge_lim(struct store *st, int64_t now, const struct store_scavenge_limits *lim,
                        size_t *count, size_t *quarantined, struct store_touches *touches)
{
    return IN_TX(st, st->ops->scavenge(st, now, lim, 1000, count, quarantined, touches));
}

static int scavenge(struct store *st, int64_t now, int max_attempts, size_t *count,
                    size_t *quarantined, struct store_touches *touches)
{
    const struct store_scavenge_limits lim = {.max_attempts = max_attempts};
    return scavenge_lim(st, now, &lim, count, quarantined, touches);
}

/* Reads one event (by seq) of an agent, whatever its status; 0 when found. */
static int find_event(struct store *st, const char *tenant, const char *agent, int64_t seq,
                      struct store_event *out)
{
    struct store_inbox_page page;
    memset(&page, 0, sizeof page);
    int rc = st->ops->inbox_read(st, tenant, agent, seq - 1, 1, 0, &page);
    int found = -1;
    if (rc == ROOST_OK && page.events.len == 1 && page.events.items[0].seq == seq) {
        *out = page.events.items[0];
        page.events.items[0].payload = NULL;
        page.events.items[0].correlation_id = NULL;
        page.events.items[0].last_error = NULL;
        found = 0;
    }
    store_events_cleanup(&page.events);
    return found;
}

static enum store_status status_of(struct store *st, const char *tenant, const char *agent,
                                   int64_t seq)
{
    struct store_event ev;
    if (find_event(st, tenant, agent, seq, &ev) != 0) {
        return (enum store_status) - 1;
    }
    enum store_status s = ev.status;
    store_event_cleanup(&ev);
    return s;
}

static int64_t head_of(struct store *st, const char *tenant, const char *agent)
{
    int64_t head = -1;
    CHECK_RC(st->ops->head(st, tenant, agent, &head), ROOST_OK);
    return head;
}

static bool touched(const struct store_touches *t, const char *tenant, const char *agent,
                    int64_t head)
{
    for (size_t i = 0; i < t->len; i++) {
        if (strcmp(t->items[i].tenant_id, tenant) == 0 &&
            strcmp(t->items[i].agent_id, agent) == 0) {
            return head < 0 || t->items[i].head == head;
        }
    }
    return false;
}

/* ---- tests ---- */

static void test_store_publish_assigns_gapfree_seqs(struct fx *f)
{
    struct store *st = f->st;
    struct store_touches touches = {0};
    char id1[STORE_EVENT_ID_LEN + 1];
    CHECK(pub1(st, TA, "a", "{\"n\":1}", NULL, T0, id1) == 1);
    CHECK(strlen(id1) == STORE_EVENT_ID_LEN && strncmp(id1, "evt_", 4) == 0);

    /* A batch of three items to one agent: consecutive seqs in request order. */
    const char *ra[] = {"a"};
    struct store_publish_item items[3];
    for (int i = 0; i < 3; i++) {
        items[i] =
            (struct store_publish_item){.recipients = ra, .n_recipients = 1, .payload = "{}"};
    }
    struct store_publish_req req = {.tenant_id = TA, .items = items, .n_items = 3, .now_ms = T0};
    struct store_published out[4];
    CHECK_RC(IN_TX(st, st->ops->publish(st, &req, out, &touches)), ROOST_OK);
    CHECK(out[0].seq == 2 && out[1].seq == 3 && out[2].seq == 4);
    CHECK(!out[0].duplicate && strcmp(out[2].agent_id, "a") == 0);
    CHECK(strcmp(out[0].event_id, out[1].event_id) != 0);
    CHECK(touched(&touches, TA, "a", 4));

    /* Fan-out: one row per recipient, out in request order, each agent its own sequence. */
    const char *fan[] = {"c", "a", "b"};
    CHECK_RC(publish_to(st, TA, fan, 3, "{\"x\":true}", NULL, T0, out, &touches), ROOST_OK);
    CHECK(strcmp(out[0].agent_id, "c") == 0 && out[0].seq == 1);
    CHECK(strcmp(out[1].agent_id, "a") == 0 && out[1].seq == 5);
    CHECK(strcmp(out[2].agent_id, "b") == 0 && out[2].seq == 1);
    CHECK(strcmp(out[0].event_id, out[1].event_id) != 0);
    CHECK(touched(&touches, TA, "b", 1) && touched(&touches, TA, "a", 5));

    /* A recipient listed twice gets one row. */
    const char *dup[] = {"d", "d"};
    CHECK_RC(publish_to(st, TA, dup, 2, "{}", NULL, T0, out, NULL), ROOST_OK);
    CHECK(out[0].seq == 1 && out[1].seq == 1 && strcmp(out[0].event_id, out[1].event_id) == 0);
    CHECK(head_of(st, TA, "d") == 1);

    CHECK(head_of(st, TA, "a") == 5);
    CHECK(head_of(st, TA, "c") == 1);
    struct store_inbox_page page;
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "a", 0, 100, 0, &page), ROOST_OK);
    CHECK(page.events.len == 5);
    for (size_t i = 0; i < page.events.len; i++) {
        CHECK(page.events.items[i].seq == (int64_t)i + 1);
        CHECK(page.events.items[i].status == STORE_PENDING);
    }
    if (page.events.len == 5) {
        CHECK(strcmp(page.events.items[0].payload, "{\"n\":1}") == 0);
        CHECK(strcmp(page.events.items[0].event_id, id1) == 0);
        CHECK(strcmp(page.events.items[0].agent_id, "a") == 0);
        CHECK(page.events.items[0].created_at_ms == T0 &&
              page.events.items[0].available_at_ms == T0);
        CHECK(page.events.items[0].expires_at_ms == 0 && page.events.items[0].attempts == 0);
    }
    store_events_cleanup(&page.events);
    store_touches_cleanup(&touches);
}

/* One batch of several requests over agents in every state: existing ones whose last seq this
 * connection wrote, existing ones another connection moved on since, new ones, each taking a
 * different number of rows (x_k: k rows, one from each of the first k requests), and a second
 * tenant. Each agent's rows take consecutive seqs after its head, in request order. */
static void test_store_publish_batch_seqs_across_agents(struct fx *f)
{
    struct store *st = f->st;
    struct store *other = open_conn(f->url);
    CHECK(other != NULL);
    if (other == NULL) {
        return;
    }
    const char *seed[] = {"x0", "x1", "x2", "x3", "x4", "x5"};
    const char *seed_b[] = {"y0"};
    struct store_published seed_out[6];
    CHECK_RC(publish_to(other, TA, seed, 6, "{}", NULL, T0, seed_out, NULL), ROOST_OK);
    CHECK_RC(publish_to(other, TB, seed_b, 1, "{}", NULL, T0, seed_out, NULL), ROOST_OK);
    CHECK(pub1(st, TA, "x0", "{}", NULL, T0, NULL) == 2);
    CHECK(pub1(other, TA, "x0", "{}", NULL, T0, NULL) == 3);
    /* Request e (1..5) goes to x_e .. x_5; the first also to x0 and n1, the first two to n2. */
    const char *all[] = {"x1", "x2", "x3", "x4", "x5", "x0", "n1", "n2"};
    const char *r2[] = {"n2", "x2", "x3", "x4", "x5"};
    const char *rb[] = {"n3", "y0"};
    struct store_publish_item items[6] = {
        {.recipients = all, .n_recipients = 8, .payload = "{\"e\":1}"},
        {.recipients = r2, .n_recipients = 5, .payload = "{\"e\":2}"},
        {.recipients = all + 2, .n_recipients = 3, .payload = "{\"e\":3}"},
        {.recipients = all + 3, .n_recipients = 2, .payload = "{\"e\":4}"},
        {.recipients = all + 4, .n_recipients = 1, .payload = "{\"e\":5}"},
        {.recipients = rb, .n_recipients = 2, .payload = "{\"e\":6}"},
    };
    struct store_publish_req reqs[6];
    struct store_publish_entry entries[6];
    struct store_touches touches[6];
    struct store_published out[6][8];
    memset(touches, 0, sizeof touches);
    for (int e = 0; e < 6; e++) {
        reqs[e] = (struct store_publish_req){
            .tenant_id = e < 5 ? TA : TB, .items = &items[e], .n_items = 1, .now_ms = T0};
        entries[e] =
            (struct store_publish_entry){.req = &reqs[e], .out = out[e], .touches = &touches[e]};
    }
    CHECK_RC(tx_begin(st), ROOST_OK);
    int rc = store_publish_batch(st, entries, 6);
    CHECK_RC(tx_end(st, rc), ROOST_OK);
    for (int e = 0; e < 6; e++) {
        CHECK_RC(entries[e].rc, ROOST_OK);
    }
    /* x_k's row of request e (e <= k) is its (e + 1)th: seq e + 1. */
    for (int e = 0; e < 5; e++) {
        for (size_t i = 0; i < items[e].n_recipients; i++) {
            const char *a = items[e].recipients[i];
            if (a[0] == 'x' && a[1] != '0') {
                CHECK(out[e][i].seq == e + 2);
                CHECK(strcmp(out[e][i].agent_id, a) == 0);
            }
        }
    }
    CHECK(out[0][5].seq == 4 && out[0][6].seq == 1 && out[0][7].seq == 1 && out[1][0].seq == 2);
    CHECK(out[5][0].seq == 1 && out[5][1].seq == 2);
    static const int64_t heads[] = {2, 3, 4, 5, 6};
    for (int k = 1; k <= 5; k++) {
        char a[8];
        snprintf(a, sizeof a, "x%d", k);
        CHECK(head_of(st, TA, a) == heads[k - 1]);
        CHECK(head_of(other, TA, a) == heads[k - 1]);
    }
    CHECK(head_of(st, TA, "x0") == 4 && head_of(st, TA, "n1") == 1 && head_of(st, TA, "n2") == 2);
    CHECK(head_of(st, TB, "y0") == 2 && head_of(st, TB, "n3") == 1);
    /* Gap-free, in request order. */
    struct store_inbox_page page;
    memset(&page, 0, sizeof page);
    CHECK_RC(other->ops->inbox_read(other, TA, "x5", 0, 100, 0, &page), ROOST_OK);
    CHECK(page.events.len == 6);
    for (size_t i = 0; i < page.events.len; i++) {
        char want[32];
        snprintf(want, sizeof want, "{\"e\":%zu}", i);
        CHECK(page.events.items[i].seq == (int64_t)i + 1);
        CHECK(i == 0 || strcmp(page.events.items[i].payload, want) == 0);
    }
    store_events_cleanup(&page.events);
    for (int e = 0; e < 6; e++) {
        store_touches_cleanup(&touches[e]);
    }
    store_close(other);
}

static void test_store_publish_rollback_leaves_nothing(struct fx *f)
{
    struct store *st = f->st;
    const char *r[] = {"a"};
    struct store_publish_item item = {.recipients = r, .n_recipients = 1, .payload = "{}"};
    struct store_publish_req req = {.tenant_id = TA, .items = &item, .n_items = 1, .now_ms = T0};
    struct store_published out;
    CHECK_RC(tx_begin(st), ROOST_OK);
    CHECK_RC(st->ops->publish(st, &req, &out, NULL), ROOST_OK);
    CHECK_RC(st->ops->rollback(st), ROOST_OK);
    CHECK(head_of(st, TA, "a") == 0);
    CHECK(pub1(st, TA, "a", "{}", NULL, T0, NULL) == 1);
}

static void test_store_publish_fields_roundtrip(struct fx *f)
{
    struct store *st = f->st;
    struct pubopt o = {.priority = -7, .corr = "corr-1", .expires_at = T0 + 60000};
    int64_t seq = pub1(st, TA, "a", "{\"k\":[1,2]}", &o, T0, NULL);
    struct store_event ev;
    CHECK(find_event(st, TA, "a", seq, &ev) == 0);
    CHECK(ev.priority == -7);
    CHECK(ev.correlation_id != NULL && strcmp(ev.correlation_id, "corr-1") == 0);
    CHECK(ev.expires_at_ms == T0 + 60000);
    CHECK(ev.lease_token[0] == '\0' && ev.last_error == NULL && ev.completed_at_ms == 0);
    store_event_cleanup(&ev);
}

/* The state's bound counts the merged document, as each backend merges it (in the database or in
 * C): a patch that leaves it at the bound is taken, one past it fails the request whole. */
static void test_store_state_patch_bound(struct fx *f)
{
    struct store *st = f->st;
    struct store_published out[1];
    const char *ra[] = {"a"};
    const char *merged = "{\"n\":1,\"s\":\"abcdef\"}"; /* 20 bytes */
    struct pubopt o = {.patch = "{\"n\":1}", .max_state = strlen(merged)};
    CHECK_RC(publish_to(st, TA, ra, 1, "{}", &o, T0, out, NULL), ROOST_OK);
    o.patch = "{\"s\":\"abcdef\"}";
    CHECK_RC(publish_to(st, TA, ra, 1, "{}", &o, T0 + 1, out, NULL), ROOST_OK);
    o.patch = "{\"s\":\"abcdefg\"}";
    CHECK_RC(publish_to(st, TA, ra, 1, "{}", &o, T0 + 2, out, NULL), ROOST_ESTATETOOLARGE);
    o.patch = "{\"s\":null,\"t\":[1,2]}";
    CHECK_RC(publish_to(st, TA, ra, 1, "{}", &o, T0 + 3, out, NULL), ROOST_OK);
    char *state = NULL;
    int64_t cursor = -1;
    CHECK_RC(st->ops->state_get(st, TA, "a", &state, &cursor), ROOST_OK);
    CHECK(state != NULL && strcmp(state, "{\"n\":1,\"t\":[1,2]}") == 0);
    CHECK(cursor == 3 && head_of(st, TA, "a") == 3);
    free(state);
}

static void test_store_idempotency_key_dedups(struct fx *f)
{
    struct store *st = f->st;
    struct store_published out[2];
    const char *ra[] = {"a"};
    struct pubopt o = {.idem = "k1", .patch = "{\"count\":1}"};
    CHECK_RC(publish_to(st, TA, ra, 1, "{\"v\":1}", &o, T0, out, NULL), ROOST_OK);
    struct store_published first = out[0];
    CHECK(!first.duplicate && first.seq == 1);

    struct store_touches touches = {0};
    struct pubopt again = {.idem = "k1", .patch = "{\"count\":2}"};
    CHECK_RC(publish_to(st, TA, ra, 1, "{\"v\":2}", &again, T0 + 1, out, &touches), ROOST_OK);
    CHECK(out[0].duplicate);
    CHECK(out[0].seq == first.seq && strcmp(out[0].event_id, first.event_id) == 0);
    CHECK(head_of(st, TA, "a") == 1);
    CHECK(touches.len == 0);
    char *state = NULL;
    int64_t cursor = -1;
    CHECK_RC(st->ops->state_get(st, TA, "a", &state, &cursor), ROOST_OK);
    CHECK(state != NULL && strcmp(state, "{\"count\":1}") == 0);
    CHECK(cursor == 1);
    free(state);
    struct store_event ev;
    CHECK(find_event(st, TA, "a", 1, &ev) == 0);
    CHECK(ev.payload != NULL && strcmp(ev.payload, "{\"v\":1}") == 0);
    store_event_cleanup(&ev);

    /* Same key, other agent: a new row. The key is per (tenant, agent). */
    CHECK(pub1(st, TA, "b", "{}", &again, T0, NULL) == 1);
    /* Same key, other tenant: a new row too. */
    CHECK(pub1(st, TB, "a", "{}", &again, T0, NULL) == 1);

    /* Fan-out: the check is per recipient. */
    const char *fan[] = {"a", "c"};
    struct pubopt k2 = {.idem = "k2"};
    CHECK_RC(publish_to(st, TA, ra, 1, "{}", &k2, T0, out, NULL), ROOST_OK);
    CHECK(!out[0].duplicate && out[0].seq == 2);
    CHECK_RC(publish_to(st, TA, fan, 2, "{}", &k2, T0, out, NULL), ROOST_OK);
    CHECK(out[0].duplicate && out[0].seq == 2);
    CHECK(!out[1].duplicate && out[1].seq == 1 && strcmp(out[1].agent_id, "c") == 0);
    CHECK(head_of(st, TA, "a") == 2);
    store_touches_cleanup(&touches);
}

static void test_store_delayed_event_scheduled_then_promoted(struct fx *f)
{
    struct store *st = f->st;
    struct store_touches touches = {0};
    struct store_events evs = {0};
    struct pubopt o = {.available_at = T0 + 10000};
    int64_t seq = pub1(st, TA, "a", "{}", &o, T0, NULL);
    CHECK(seq == 1);
    CHECK(status_of(st, TA, "a", seq) == STORE_SCHEDULED);
    CHECK(head_of(st, TA, "a") == 1); /* visible to cursor readers at once */
    CHECK_RC(claim(st, TA, "a", 10, 30, "", T0 + 1, &evs), ROOST_OK);
    CHECK(evs.len == 0);

    size_t count = 99;
    CHECK_RC(IN_TX(st, st->ops->promote_due(st, T0 + 9999, 100, &count, &touches)), ROOST_OK);
    CHECK(count == 0 && touches.len == 0);
    CHECK_RC(IN_TX(st, st->ops->promote_due(st, T0 + 10000, 100, &count, &touches)), ROOST_OK);
    CHECK(count == 1);
    CHECK(touched(&touches, TA, "a", 1));
    CHECK(status_of(st, TA, "a", seq) == STORE_PENDING);
    CHECK_RC(claim(st, TA, "a", 10, 30, "", T0 + 10001, &evs), ROOST_OK);
    CHECK(evs.len == 1 && evs.items[0].seq == 1);
    store_events_cleanup(&evs);
    store_touches_cleanup(&touches);
}

static void test_store_claim_order_priority_then_seq(struct fx *f)
{
    struct store *st = f->st;
    struct store_events evs = {0};
    int prio[] = {0, 5, 0, 5, -1};
    for (int i = 0; i < 5; i++) {
        struct pubopt o = {.priority = prio[i]};
        CHECK(pub1(st, TA, "a", "{}", &o, T0, NULL) == i + 1);
    }
    CHECK_RC(claim(st, TA, "a", 3, 30, "worker-1", T0 + 100, &evs), ROOST_OK);
    CHECK(evs.len == 3);
    if (evs.len == 3) {
        CHECK(evs.items[0].seq == 2 && evs.items[1].seq == 4 && evs.items[2].seq == 1);
        for (size_t i = 0; i < 3; i++) {
            struct store_event *e = &evs.items[i];
            CHECK(e->status == STORE_CLAIMED && e->attempts == 1);
            CHECK(strncmp(e->lease_token, "lt_", 3) == 0 &&
                  strlen(e->lease_token) == STORE_LEASE_TOKEN_LEN);
            CHECK(e->claimed_at_ms == T0 + 100 && e->claim_expires_at_ms == T0 + 100 + 30000);
            CHECK(strcmp(e->consumer, "worker-1") == 0);
            CHECK(e->payload != NULL);
        }
        CHECK(strcmp(evs.items[0].lease_token, evs.items[1].lease_token) != 0);
        CHECK(strcmp(evs.items[1].lease_token, evs.items[2].lease_token) != 0);
    }
    store_events_cleanup(&evs);
    CHECK_RC(claim(st, TA, "a", 10, 30, "", T0 + 100, &evs), ROOST_OK);
    CHECK(evs.len == 2 && evs.items[0].seq == 3 && evs.items[1].seq == 5);
    store_events_cleanup(&evs);
    CHECK_RC(claim(st, TA, "a", 10, 30, "", T0 + 100, &evs), ROOST_OK);
    CHECK(evs.len == 0);

    /* An event past its expires_at is never claimed, even before expire() ran. */
    struct pubopt ttl = {.expires_at = T0 + 1000};
    pub1(st, TA, "b", "{}", &ttl, T0, NULL);
    CHECK_RC(claim(st, TA, "b", 10, 30, "", T0 + 1000, &evs), ROOST_OK);
    CHECK(evs.len == 0);
    CHECK_RC(claim(st, TA, "b", 10, 30, "", T0 + 999, &evs), ROOST_OK);
    CHECK(evs.len == 1);
    store_events_cleanup(&evs);
    /* Unknown agent: nothing, no error. */
    CHECK_RC(claim(st, TA, "nobody", 10, 30, "", T0, &evs), ROOST_OK);
    CHECK(evs.len == 0);
}

/* Peek: the event the next claim takes, by the claim's rule, and nothing changes. */
static void test_store_inbox_peek_is_the_next_claim(struct fx *f)
{
    struct store *st = f->st;
    struct store_events evs = {0};
    struct store_event ev;
    bool found = true;
    CHECK_RC(store_call(st, inbox_peek, TA, "a", T0, &ev, &found), ROOST_OK);
    CHECK(!found && ev.payload == NULL && ev.seq == 0); /* unknown agent: none */
    int prio[] = {0, 5, 0, 5, -1};
    for (int i = 0; i < 5; i++) {
        struct pubopt o = {.priority = prio[i], .corr = "c-1"};
        char payload[32];
        snprintf(payload, sizeof payload, "{\"n\":%d}", i + 1);
        CHECK(pub1(st, TA, "a", payload, &o, T0, NULL) == i + 1);
    }
    /* Highest priority, then lowest seq, payload included; a second peek sees the same. */
    for (int round = 0; round < 2; round++) {
        found = false;
        CHECK_RC(store_call(st, inbox_peek, TA, "a", T0 + 1, &ev, &found), ROOST_OK);
        CHECK(found && ev.seq == 2 && ev.status == STORE_PENDING && ev.priority == 5);
        CHECK(ev.payload != NULL && strcmp(ev.payload, "{\"n\":2}") == 0);
        CHECK(ev.correlation_id != NULL && strcmp(ev.correlation_id, "c-1") == 0);
        CHECK(ev.attempts == 0 && ev.lease_token[0] == '\0' && strcmp(ev.agent_id, "a") == 0);
        CHECK(strncmp(ev.event_id, "evt_", 4) == 0);
        store_event_cleanup(&ev);
    }
    CHECK(status_of(st, TA, "a", 2) == STORE_PENDING);
    /* The claim takes what peek showed; peek then shows the claim after it. */
    CHECK_RC(claim(st, TA, "a", 1, 30, "w", T0 + 2, &evs), ROOST_OK);
    CHECK(evs.len == 1 && evs.items[0].seq == 2);
    store_events_cleanup(&evs);
    CHECK_RC(store_call(st, inbox_peek, TA, "a", T0 + 3, &ev, &found), ROOST_OK);
    CHECK(found && ev.seq == 4);
    store_event_cleanup(&ev);
    CHECK_RC(claim(st, TA, "a", 10, 30, "w", T0 + 4, &evs), ROOST_OK);
    CHECK(evs.len == 4 && evs.items[0].seq == 4);
    store_events_cleanup(&evs);
    CHECK_RC(store_call(st, inbox_peek, TA, "a", T0 + 5, &ev, &found), ROOST_OK);
    CHECK(!found); /* every event claimed */

    /* Neither a scheduled event, nor one past its expires_at, nor another tenant's. */
    struct pubopt later = {.available_at = T0 + 60000};
    struct pubopt ttl = {.expires_at = T0 + 1000};
    pub1(st, TA, "b", "{}", &later, T0, NULL);
    pub1(st, TA, "b", "{\"ttl\":1}", &ttl, T0, NULL);
    CHECK_RC(store_call(st, inbox_peek, TA, "b", T0 + 999, &ev, &found), ROOST_OK);
    CHECK(found && ev.seq == 2);
    store_event_cleanup(&ev);
    CHECK_RC(store_call(st, inbox_peek, TA, "b", T0 + 1000, &ev, &found), ROOST_OK);
    CHECK(!found);
    CHECK_RC(store_call(st, inbox_peek, TB, "b", T0, &ev, &found), ROOST_OK);
    CHECK(!found);
}

static void test_store_ack_fencing(struct fx *f)
{
    struct store *st = f->st;
    struct store_events evs = {0};
    char id[STORE_EVENT_ID_LEN + 1];
    pub1(st, TA, "a", "{\"p\":1}", NULL, T0, id);
    CHECK_RC(claim(st, TA, "a", 1, 30, "", T0, &evs), ROOST_OK);
    if (evs.len != 1) {
        CHECK(evs.len == 1);
        return;
    }
    struct store_event *e = &evs.items[0];
    CHECK(strcmp(e->event_id, id) == 0);
    const char *wrong = "lt_00000000000000000000000000";
    CHECK_RC(ack(st, TA, "a", id, wrong, T0 + 1), ROOST_ELEASEMISMATCH);
    CHECK(status_of(st, TA, "a", 1) == STORE_CLAIMED);
    CHECK_RC(ack(st, TA, "a", id, e->lease_token, T0 + 2), ROOST_OK);
    CHECK_RC(ack(st, TA, "a", id, e->lease_token, T0 + 3), ROOST_OK); /* repeat: idempotent */
    CHECK_RC(ack(st, TA, "a", id, wrong, T0 + 3), ROOST_ELEASEMISMATCH);
    struct store_event done;
    CHECK(find_event(st, TA, "a", 1, &done) == 0);
    CHECK(done.status == STORE_COMPLETED && done.payload == NULL);
    CHECK(done.completed_at_ms == T0 + 2);
    store_event_cleanup(&done);
    CHECK_RC(ack(st, TA, "a", "evt_00000000000000000000000000", e->lease_token, T0),
             ROOST_EEVENTNOTFOUND);
    CHECK_RC(ack(st, TA, "other", id, e->lease_token, T0), ROOST_EEVENTNOTFOUND);

    /* A pending event that was never claimed: no lease matches. */
    char id2[STORE_EVENT_ID_LEN + 1];
    pub1(st, TA, "a", "{}", NULL, T0, id2);
    CHECK_RC(ack(st, TA, "a", id2, wrong, T0), ROOST_ELEASEMISMATCH);
    store_events_cleanup(&evs);
}

static void test_store_late_ack_after_reclaim_is_rejected(struct fx *f)
{
    struct store *st = f->st;
    struct store_events first = {0}, second = {0};
    size_t count, quarantined;
    pub1(st, TA, "a", "{}", NULL, T0, NULL);
    CHECK_RC(claim(st, TA, "a", 1, 10, "", T0, &first), ROOST_OK);
    CHECK_RC(scavenge(st, T0 + 10000, 5, &count, &quarantined, NULL), ROOST_OK);
    CHECK(count == 1 && quarantined == 0);
    CHECK_RC(claim(st, TA, "a", 1, 10, "", T0 + 10001, &second), ROOST_OK);
    if (first.len == 1 && second.len == 1) {
        CHECK(second.items[0].attempts == 2 && second.items[0].timeouts == 1);
        CHECK(strcmp(first.items[0].lease_token, second.items[0].lease_token) != 0);
        CHECK_RC(ack(st, TA, "a", first.items[0].event_id, first.items[0].lease_token, T0 + 10002),
                 ROOST_ELEASEMISMATCH);
        CHECK_RC(
            ack(st, TA, "a", second.items[0].event_id, second.items[0].lease_token, T0 + 10003),
            ROOST_OK);
    } else {
        CHECK(first.len == 1 && second.len == 1);
    }
    store_events_cleanup(&first);
    store_events_cleanup(&second);
}

static void test_store_release_counters_and_quarantine(struct fx *f)
{
    struct store *st = f->st;
    struct store_events evs = {0};
    struct store_touches touches = {0};
    struct store_event ev;
    pub1(st, TA, "a", "{}", NULL, T0, NULL);

    /* transient: nacks+1, back to pending, last_error kept, agent touched. */
    CHECK_RC(claim(st, TA, "a", 1, 30, "", T0, &evs), ROOST_OK);
    CHECK(evs.len == 1);
    if (evs.len != 1) {
        return;
    }
    CHECK_RC(release(st, TA, "a", &evs.items[0], STORE_RELEASE_TRANSIENT, 0, "boom", 3, T0 + 1,
                     &touches),
             ROOST_OK);
    CHECK(touched(&touches, TA, "a", 1));
    CHECK(find_event(st, TA, "a", 1, &ev) == 0);
    CHECK(ev.status == STORE_PENDING && ev.nacks == 1 && ev.attempts == 1);
    CHECK(ev.last_error != NULL && strcmp(ev.last_error, "boom") == 0);
    CHECK(ev.lease_token[0] == '\0');
    store_event_cleanup(&ev);
    /* The released token is dead. */
    CHECK_RC(release(st, TA, "a", &evs.items[0], STORE_RELEASE_TRANSIENT, 0, NULL, 3, T0 + 1, NULL),
             ROOST_ELEASEMISMATCH);
    store_events_cleanup(&evs);

    /* shutdown: counts nothing. */
    CHECK_RC(claim(st, TA, "a", 1, 30, "", T0 + 2, &evs), ROOST_OK);
    CHECK_RC(release(st, TA, "a", &evs.items[0], STORE_RELEASE_SHUTDOWN, 0, NULL, 3, T0 + 3, NULL),
             ROOST_OK);
    CHECK(find_event(st, TA, "a", 1, &ev) == 0);
    CHECK(ev.status == STORE_PENDING && ev.nacks == 1 && ev.attempts == 2);
    store_event_cleanup(&ev);
    store_events_cleanup(&evs);

    /* transient at attempts >= max_attempts: quarantined. */
    CHECK_RC(claim(st, TA, "a", 1, 30, "", T0 + 4, &evs), ROOST_OK);
    CHECK(evs.len == 1 && evs.items[0].attempts == 3);
    touches.len = 0;
    CHECK_RC(release(st, TA, "a", &evs.items[0], STORE_RELEASE_TRANSIENT, 0, "again", 3, T0 + 5,
                     &touches),
             ROOST_OK);
    CHECK(find_event(st, TA, "a", 1, &ev) == 0);
    CHECK(ev.status == STORE_QUARANTINED && ev.nacks == 2);
    store_event_cleanup(&ev);
    CHECK(!touched(&touches, TA, "a", -1));
    store_events_cleanup(&evs);
    CHECK_RC(claim(st, TA, "a", 1, 30, "", T0 + 6, &evs), ROOST_OK);
    CHECK(evs.len == 0);

    /* poison: quarantined at once, whatever the attempts. */
    pub1(st, TA, "a", "{}", NULL, T0, NULL);
    CHECK_RC(claim(st, TA, "a", 1, 30, "", T0 + 7, &evs), ROOST_OK);
    CHECK(evs.len == 1 && evs.items[0].seq == 2);
    CHECK_RC(
        release(st, TA, "a", &evs.items[0], STORE_RELEASE_POISON, 0, "bad input", 10, T0 + 8, NULL),
        ROOST_OK);
    CHECK(status_of(st, TA, "a", 2) == STORE_QUARANTINED);
    store_events_cleanup(&evs);
    store_touches_cleanup(&touches);

    /* Unknown event. */
    struct store_event fake = {.event_id = "evt_00000000000000000000000000",
                               .lease_token = "lt_00000000000000000000000000"};
    CHECK_RC(release(st, TA, "a", &fake, STORE_RELEASE_TRANSIENT, 0, NULL, 3, T0, NULL),
             ROOST_EEVENTNOTFOUND);
}

static void test_store_release_with_delay_schedules(struct fx *f)
{
    struct store *st = f->st;
    struct store_events evs = {0};
    struct store_touches touches = {0};
    struct store_event ev;
    size_t count;
    pub1(st, TA, "a", "{}", NULL, T0, NULL);
    CHECK_RC(claim(st, TA, "a", 1, 30, "", T0, &evs), ROOST_OK);
    CHECK(evs.len == 1);
    if (evs.len != 1) {
        return;
    }
    CHECK_RC(release(st, TA, "a", &evs.items[0], STORE_RELEASE_TRANSIENT, 30, NULL, 5, T0 + 1000,
                     &touches),
             ROOST_OK);
    CHECK(!touched(&touches, TA, "a", -1));
    CHECK(find_event(st, TA, "a", 1, &ev) == 0);
    CHECK(ev.status == STORE_SCHEDULED && ev.available_at_ms == T0 + 1000 + 30000);
    store_event_cleanup(&ev);
    store_events_cleanup(&evs);
    CHECK_RC(claim(st, TA, "a", 1, 30, "", T0 + 2000, &evs), ROOST_OK);
    CHECK(evs.len == 0);
    CHECK_RC(IN_TX(st, st->ops->promote_due(st, T0 + 31000, 10, &count, &touches)), ROOST_OK);
    CHECK(count == 1 && touched(&touches, TA, "a", 1));
    CHECK_RC(claim(st, TA, "a", 1, 30, "", T0 + 31000, &evs), ROOST_OK);
    CHECK(evs.len == 1 && evs.items[0].attempts == 2);
    store_events_cleanup(&evs);
    store_touches_cleanup(&touches);
}

static void test_store_extend_cap_and_expired_lease(struct fx *f)
{
    struct store *st = f->st;
    struct store_events evs = {0};
    int64_t exp = 0;
    pub1(st, TA, "a", "{}", NULL, T0, NULL);
    CHECK_RC(claim(st, TA, "a", 1, 10, "", T0, &evs), ROOST_OK);
    CHECK(evs.len == 1);
    if (evs.len != 1) {
        return;
    }
    const char *id = evs.items[0].event_id, *tok = evs.items[0].lease_token;
#define EXTEND(tok_, lease_s, now)                                                                 \
    IN_TX(st, st->ops->extend(st, TA, "a", id, tok_, lease_s, 30, now, &exp))
    CHECK_RC(EXTEND(tok, 10, T0 + 5000), ROOST_OK);
    CHECK(exp == T0 + 15000);
    CHECK_RC(EXTEND(tok, 60, T0 + 14000), ROOST_OK); /* capped by max_total_s = 30 */
    CHECK(exp == T0 + 30000);
    CHECK_RC(EXTEND(tok, 60, T0 + 20000), ROOST_ELEASECAP);
    CHECK_RC(EXTEND("lt_00000000000000000000000000", 10, T0 + 20000), ROOST_ELEASEMISMATCH);
    CHECK_RC(EXTEND(tok, 10, T0 + 30000), ROOST_ELEASEMISMATCH); /* expired */
    struct store_event ev;
    CHECK(find_event(st, TA, "a", 1, &ev) == 0);
    CHECK(ev.claim_expires_at_ms == T0 + 30000);
    store_event_cleanup(&ev);
    CHECK_RC(IN_TX(st, st->ops->extend(st, TA, "a", "evt_00000000000000000000000000", tok, 10, 30,
                                       T0, &exp)),
             ROOST_EEVENTNOTFOUND);
#undef EXTEND
    store_events_cleanup(&evs);
}

static void test_store_release_all_only_that_consumer(struct fx *f)
{
    struct store *st = f->st;
    struct store_events c1 = {0}, c2 = {0};
    struct store_touches touches = {0};
    size_t released = 99;
    for (int i = 0; i < 3; i++) {
        pub1(st, TA, "a", "{}", NULL, T0, NULL);
    }
    pub1(st, TA, "b", "{}", NULL, T0, NULL);
    CHECK_RC(claim(st, TA, "a", 2, 30, "host1:10", T0, &c1), ROOST_OK);
    CHECK_RC(claim(st, TA, "a", 1, 30, "host2:20", T0, &c2), ROOST_OK);
    CHECK(c1.len == 2 && c2.len == 1);
    CHECK_RC(IN_TX(st, st->ops->release_all(st, TA, "a", "host1:10", T0 + 1, &released, &touches)),
             ROOST_OK);
    CHECK(released == 2);
    CHECK(touched(&touches, TA, "a", 3));
    CHECK(status_of(st, TA, "a", 1) == STORE_PENDING && status_of(st, TA, "a", 2) == STORE_PENDING);
    CHECK(status_of(st, TA, "a", 3) == STORE_CLAIMED);
    struct store_event ev;
    CHECK(find_event(st, TA, "a", 1, &ev) == 0);
    CHECK(ev.nacks == 0); /* shutdown counts nothing */
    store_event_cleanup(&ev);
    if (c2.len == 1) {
        CHECK_RC(ack(st, TA, "a", c2.items[0].event_id, c2.items[0].lease_token, T0 + 2), ROOST_OK);
    }
    CHECK_RC(IN_TX(st, st->ops->release_all(st, TA, "a", "host9:1", T0 + 1, &released, NULL)),
             ROOST_OK);
    CHECK(released == 0);
    store_events_cleanup(&c1);
    store_events_cleanup(&c2);
    store_touches_cleanup(&touches);
}

static void test_store_scavenger_returns_and_quarantines(struct fx *f)
{
    struct store *st = f->st;
    struct store_events evs = {0};
    struct store_touches touches = {0};
    size_t count, quarantined;
    pub1(st, TA, "a", "{}", NULL, T0, NULL); /* 1: will expire */
    pub1(st, TA, "a", "{}", NULL, T0, NULL); /* 2: long lease */
    pub1(st, TA, "b", "{}", NULL, T0, NULL); /* b/1: at max attempts */
    CHECK_RC(claim(st, TA, "a", 1, 10, "", T0, &evs), ROOST_OK);
    CHECK_RC(claim(st, TA, "a", 1, 100, "", T0, &evs), ROOST_OK);
    CHECK_RC(claim(st, TA, "b", 1, 10, "", T0, &evs), ROOST_OK);
    CHECK(evs.len == 3);
    CHECK_RC(scavenge(st, T0 + 9999, 1, &count, &quarantined, &touches), ROOST_OK);
    CHECK(count == 0 && quarantined == 0 && touches.len == 0);
    /* max_attempts 2: a/1 (attempts 1) goes back, b/1 quarantined after a second claim. */
    CHECK_RC(scavenge(st, T0 + 10000, 2, &count, &quarantined, &touches), ROOST_OK);
    CHECK(count == 2 && quarantined == 0);
    CHECK(touched(&touches, TA, "a", 2) && touched(&touches, TA, "b", 1));
    struct store_event ev;
    CHECK(find_event(st, TA, "a", 1, &ev) == 0);
    CHECK(ev.status == STORE_PENDING && ev.timeouts == 1 && ev.lease_token[0] == '\0');
    store_event_cleanup(&ev);
    CHECK(status_of(st, TA, "a", 2) == STORE_CLAIMED);
    store_events_cleanup(&evs);
    CHECK_RC(claim(st, TA, "b", 1, 10, "", T0 + 10001, &evs), ROOST_OK);
    CHECK(evs.len == 1 && evs.items[0].attempts == 2);
    touches.len = 0;
    CHECK_RC(scavenge(st, T0 + 20001, 2, &count, &quarantined, &touches), ROOST_OK);
    CHECK(count == 1 && quarantined == 1);
    CHECK(!touched(&touches, TA, "b", -1));
    CHECK(find_event(st, TA, "b", 1, &ev) == 0);
    CHECK(ev.status == STORE_QUARANTINED && ev.timeouts == 2);
    store_event_cleanup(&ev);
    store_events_cleanup(&evs);
    store_touches_cleanup(&touches);
}

/* Leases of one consumer (the webhook dispatcher's) run out against their own limit, the
 * others' against max_attempts. */
static void test_store_scavenger_follows_a_consumer_limit(struct fx *f)
{
    struct store *st = f->st;
    struct store_events evs = {0};
    size_t count, quarantined;
    const struct store_scavenge_limits lim = {
        .max_attempts = 1, .consumer = "hooks", .consumer_max_attempts = 3};
    pub1(st, TA, "w", "{}", NULL, T0, NULL);
    pub1(st, TA, "g", "{}", NULL, T0, NULL);
    CHECK_RC(claim(st, TA, "w", 1, 10, "hooks", T0, &evs), ROOST_OK);
    CHECK_RC(claim(st, TA, "g", 1, 10, "hooks-not", T0, &evs), ROOST_OK);
    CHECK(evs.len == 2);
    /* First expiry: the general limit (1) quarantines g; w has 2 of its 3 attempts left. */
    CHECK_RC(scavenge_lim(st, T0 + 10000, &lim, &count, &quarantined, NULL), ROOST_OK);
    CHECK(count == 2 && quarantined == 1);
    CHECK(status_of(st, TA, "g", 1) == STORE_QUARANTINED);
    CHECK(status_of(st, TA, "w", 1) == STORE_PENDING);
    /* Second claim and expiry: still under its own limit. */
    store_events_cleanup(&evs);
    CHECK_RC(claim(st, TA, "w", 1, 10, "hooks", T0 + 10001, &evs), ROOST_OK);
    CHECK(evs.len == 1 && evs.items[0].attempts == 2);
    CHECK_RC(scavenge_lim(st, T0 + 20001, &lim, &count, &quarantined, NULL), ROOST_OK);
    CHECK(count == 1 && quarantined == 0);
    CHECK(status_of(st, TA, "w", 1) == STORE_PENDING);
    /* Third: its limit reached, it is quarantined. */
    store_events_cleanup(&evs);
    CHECK_RC(claim(st, TA, "w", 1, 10, "hooks", T0 + 20002, &evs), ROOST_OK);
    CHECK(evs.len == 1 && evs.items[0].attempts == 3);
    CHECK_RC(scavenge_lim(st, T0 + 30002, &lim, &count, &quarantined, NULL), ROOST_OK);
    CHECK(count == 1 && quarantined == 1);
    CHECK(status_of(st, TA, "w", 1) == STORE_QUARANTINED);
    store_events_cleanup(&evs);
}

static void test_store_scavenger_never_overwrites_an_ack(struct fx *f)
{
    struct store *st = f->st;
    struct store_events evs = {0};
    size_t count, quarantined;
    pub1(st, TA, "a", "{}", NULL, T0, NULL);
    CHECK_RC(claim(st, TA, "a", 1, 10, "", T0, &evs), ROOST_OK);
    CHECK(evs.len == 1);
    if (evs.len != 1) {
        return;
    }
    /* The lease has run out, but the ack lands before the scavenger: the ack wins. */
    CHECK_RC(ack(st, TA, "a", evs.items[0].event_id, evs.items[0].lease_token, T0 + 10500),
             ROOST_OK);
    CHECK_RC(scavenge(st, T0 + 11000, 5, &count, &quarantined, NULL), ROOST_OK);
    CHECK(count == 0);
    CHECK(status_of(st, TA, "a", 1) == STORE_COMPLETED);
    store_events_cleanup(&evs);
}

static void test_store_expire_marks_expired(struct fx *f)
{
    struct store *st = f->st;
    struct store_events evs = {0};
    size_t count = 99;
    struct pubopt ttl = {.expires_at = T0 + 5000};
    struct pubopt delayed_ttl = {.expires_at = T0 + 5000, .available_at = T0 + 60000};
    pub1(st, TA, "a", "{}", &ttl, T0, NULL);         /* 1: claimed below: left alone */
    pub1(st, TA, "a", "{}", &delayed_ttl, T0, NULL); /* 2: scheduled */
    pub1(st, TA, "a", "{}", &ttl, T0, NULL);         /* 3: pending */
    pub1(st, TA, "a", "{}", NULL, T0, NULL);         /* 4: no ttl */
    CHECK_RC(claim(st, TA, "a", 1, 60, "", T0, &evs), ROOST_OK);
    CHECK(evs.len == 1 && evs.items[0].seq == 1);
    store_events_cleanup(&evs);
    CHECK_RC(IN_TX(st, st->ops->expire(st, T0 + 4999, 100, &count)), ROOST_OK);
    CHECK(count == 0);
    CHECK_RC(IN_TX(st, st->ops->expire(st, T0 + 5000, 100, &count)), ROOST_OK);
    CHECK(count == 2);
    CHECK(status_of(st, TA, "a", 1) == STORE_CLAIMED);
    CHECK(status_of(st, TA, "a", 2) == STORE_EXPIRED);
    CHECK(status_of(st, TA, "a", 4) == STORE_PENDING);
    struct store_event ev;
    CHECK(find_event(st, TA, "a", 3, &ev) == 0);
    CHECK(ev.status == STORE_EXPIRED && ev.completed_at_ms == T0 + 5000);
    CHECK(ev.payload != NULL); /* kept for the archive */
    store_event_cleanup(&ev);
    CHECK_RC(claim(st, TA, "a", 10, 60, "", T0 + 5000, &evs), ROOST_OK);
    CHECK(evs.len == 1 && evs.items[0].seq == 4);
    store_events_cleanup(&evs);
}

static void test_store_requeue_keeps_id_and_seq(struct fx *f)
{
    struct store *st = f->st;
    struct store_events evs = {0};
    struct store_touches touches = {0};
    char id[STORE_EVENT_ID_LEN + 1];
    pub1(st, TA, "a", "{\"job\":1}", NULL, T0, id);
    pub1(st, TA, "a", "{}", NULL, T0, NULL);
    CHECK_RC(claim(st, TA, "a", 1, 30, "", T0, &evs), ROOST_OK);
    CHECK(evs.len == 1);
    if (evs.len != 1) {
        return;
    }
    CHECK_RC(release(st, TA, "a", &evs.items[0], STORE_RELEASE_POISON, 0, "x", 5, T0 + 1, NULL),
             ROOST_OK);
    store_events_cleanup(&evs);
    CHECK_RC(IN_TX(st, st->ops->requeue(st, TA, id, T0 + 2, &touches)), ROOST_OK);
    CHECK(touched(&touches, TA, "a", 2));
    struct store_event ev;
    CHECK(find_event(st, TA, "a", 1, &ev) == 0);
    CHECK(ev.status == STORE_PENDING && ev.attempts == 0 && strcmp(ev.event_id, id) == 0);
    CHECK(ev.payload != NULL && strcmp(ev.payload, "{\"job\":1}") == 0);
    store_event_cleanup(&ev);
    CHECK_RC(claim(st, TA, "a", 1, 30, "", T0 + 3, &evs), ROOST_OK);
    CHECK(evs.len == 1 && evs.items[0].seq == 1 && evs.items[0].attempts == 1);
    store_events_cleanup(&evs);
    /* Not quarantined (claimed now; and a pending one): ESTATE. */
    CHECK_RC(IN_TX(st, st->ops->requeue(st, TA, id, T0 + 4, NULL)), ROOST_ESTATE);
    CHECK_RC(IN_TX(st, st->ops->requeue(st, TA, "evt_00000000000000000000000000", T0, NULL)),
             ROOST_EEVENTNOTFOUND);

    /* An expired event can be requeued too, and becomes claimable. */
    char id3[STORE_EVENT_ID_LEN + 1];
    size_t count;
    struct pubopt ttl = {.expires_at = T0 + 100};
    pub1(st, TA, "b", "{}", &ttl, T0, id3);
    CHECK_RC(IN_TX(st, st->ops->expire(st, T0 + 100, 10, &count)), ROOST_OK);
    CHECK(status_of(st, TA, "b", 1) == STORE_EXPIRED);
    CHECK_RC(IN_TX(st, st->ops->requeue(st, TA, id3, T0 + 200, NULL)), ROOST_OK);
    CHECK_RC(claim(st, TA, "b", 1, 30, "", T0 + 300, &evs), ROOST_OK);
    CHECK(evs.len == 1);
    store_events_cleanup(&evs);
    store_touches_cleanup(&touches);
}

/* Reads a page of TA/agent after `after` into seqs[] (at most 8); returns how many. */
static size_t page_seqs(struct store *st, const char *agent, int64_t after, int64_t seqs[8],
                        int64_t *head)
{
    struct store_inbox_page page;
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, agent, after, 8, 0, &page), ROOST_OK);
    size_t n = page.events.len < 8 ? page.events.len : 8;
    for (size_t i = 0; i < n; i++) {
        seqs[i] = page.events.items[i].seq;
    }
    *head = page.head;
    store_events_cleanup(&page.events);
    return n;
}

/* Quarantines seq `seq` of TA/agent (claimed with the others and released as poison). */
static void quarantine_seq(struct store *st, const char *agent, int64_t seq, int64_t now)
{
    struct store_events evs = {0};
    CHECK_RC(claim(st, TA, agent, 8, 30, "", now, &evs), ROOST_OK);
    for (size_t i = 0; i < evs.len; i++) {
        const struct store_event *e = &evs.items[i];
        enum store_status to = STORE_PENDING;
        int mode = e->seq == seq ? STORE_RELEASE_POISON : STORE_RELEASE_TRANSIENT;
        CHECK_RC(IN_TX(st, st->ops->release(st, TA, agent, e->event_id, e->lease_token, mode, 0,
                                            "boom", 5, now + 1, NULL, &to)),
                 ROOST_OK);
        CHECK(to == (e->seq == seq ? STORE_QUARANTINED : STORE_PENDING));
    }
    store_events_cleanup(&evs);
}

/* A purge of quarantined events leaves holes in an agent's seqs: a cursor read passes over them
 * (on MariaDB, where the page stops at a commit not yet visible, the purge's mark tells them
 * apart), by event, by agent and for the whole tenant. */
static void test_store_purge_leaves_no_stall(struct fx *f)
{
    struct store *st = f->st;
    int64_t seqs[8], head = 0;
    size_t purged = 0;
    for (int i = 0; i < 4; i++) {
        pub1(st, TA, "p", "{}", NULL, T0, NULL);
        pub1(st, TA, "q", "{}", NULL, T0, NULL);
    }
    /* By event: seq 2 of p. */
    quarantine_seq(st, "p", 2, T0 + 10);
    struct store_events qs = {0};
    bool more = false;
    CHECK_RC(st->ops->quarantine_list(st, TA, "p", NULL, 0, 10, &qs, &more), ROOST_OK);
    CHECK(qs.len == 1);
    if (qs.len == 1) {
        CHECK_RC(
            IN_TX(st, st->ops->quarantine_purge(st, TA, NULL, qs.items[0].event_id, 10, &purged)),
            ROOST_OK);
        CHECK(purged == 1);
    }
    store_events_cleanup(&qs);
    CHECK(page_seqs(st, "p", 0, seqs, &head) == 3 && seqs[0] == 1 && seqs[1] == 3 && seqs[2] == 4);
    CHECK(head == 4);
    CHECK(page_seqs(st, "p", 1, seqs, &head) == 2 && seqs[0] == 3 && head == 4);
    /* By agent: seq 3 of p, beside the hole at 2. */
    quarantine_seq(st, "p", 3, T0 + 20);
    CHECK_RC(IN_TX(st, st->ops->quarantine_purge(st, TA, "p", NULL, 10, &purged)), ROOST_OK);
    CHECK(purged == 1);
    CHECK(page_seqs(st, "p", 1, seqs, &head) == 1 && seqs[0] == 4 && head == 4);
    /* The whole tenant: the last seq of p and seq 2 of q. */
    quarantine_seq(st, "p", 4, T0 + 30);
    quarantine_seq(st, "q", 2, T0 + 30);
    CHECK_RC(IN_TX(st, st->ops->quarantine_purge(st, TA, NULL, NULL, 10, &purged)), ROOST_OK);
    CHECK(purged == 2);
    CHECK(page_seqs(st, "p", 1, seqs, &head) == 0 && head == 4);
    CHECK(page_seqs(st, "q", 1, seqs, &head) == 2 && seqs[0] == 3 && seqs[1] == 4 && head == 4);
    /* Events published after the holes are read past them. */
    pub1(st, TA, "p", "{}", NULL, T0 + 40, NULL);
    CHECK(page_seqs(st, "p", 1, seqs, &head) == 1 && seqs[0] == 5 && head == 5);
}

static void test_store_inbox_read_paging(struct fx *f)
{
    struct store *st = f->st;
    struct store_inbox_page page;
    for (int i = 0; i < 5; i++) {
        pub1(st, TA, "a", "{}", NULL, T0, NULL);
    }
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "a", 0, 2, 0, &page), ROOST_OK);
    CHECK(page.events.len == 2 && page.events.items[0].seq == 1 && page.events.items[1].seq == 2);
    CHECK(page.has_more && page.next_cursor == 2 && page.head == 5);
    store_events_cleanup(&page.events);
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "a", 2, 2, 0, &page), ROOST_OK);
    CHECK(page.events.len == 2 && page.events.items[0].seq == 3 && page.has_more);
    CHECK(page.next_cursor == 4);
    store_events_cleanup(&page.events);
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "a", 4, 2, 0, &page), ROOST_OK);
    CHECK(page.events.len == 1 && page.events.items[0].seq == 5);
    CHECK(!page.has_more && page.next_cursor == 5);
    store_events_cleanup(&page.events);
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "a", 4, 1, 0, &page), ROOST_OK);
    CHECK(page.events.len == 1 && !page.has_more); /* exactly the last one: no more */
    store_events_cleanup(&page.events);
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "a", 5, 10, 0, &page), ROOST_OK);
    CHECK(page.events.len == 0 && !page.has_more && page.next_cursor == 5 && page.head == 5);
    store_events_cleanup(&page.events);
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "nobody", 0, 10, 0, &page), ROOST_OK);
    CHECK(page.events.len == 0 && page.head == 0 && page.next_cursor == 0 && !page.has_more);
    store_events_cleanup(&page.events);
    /* A cursor beyond the head is not an error: nothing to read yet. */
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "a", 50, 10, 0, &page), ROOST_OK);
    CHECK(page.events.len == 0 && page.next_cursor == 50);
    store_events_cleanup(&page.events);
}

/* The byte budget (store_budget_take): a page stops before the event that would take it past
 * max_bytes, never before the first; claims leave the events past it untouched. */
static void test_store_page_byte_budget(struct fx *f)
{
    struct store *st = f->st;
    /* Five events of 1000-byte payloads: each weighs 1000 + STORE_EVENT_BASE_BYTES. */
    char payload[1001];
    memset(payload, 'x', sizeof payload);
    memcpy(payload, "{\"p\":\"", 6);
    memcpy(payload + 997, "\"}", 2);
    payload[999] = '\0';
    for (int i = 0; i < 5; i++) {
        pub1(st, TA, "big", payload, NULL, T0, NULL);
    }
    size_t one = strlen(payload) + STORE_EVENT_BASE_BYTES;
    struct store_inbox_page page;
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "big", 0, 10, 2 * one + one / 2, &page), ROOST_OK);
    CHECK(page.events.len == 2 && page.has_more && page.next_cursor == 2 && page.head == 5);
    store_events_cleanup(&page.events);
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "big", 2, 10, 3 * one, &page), ROOST_OK);
    CHECK(page.events.len == 3 && !page.has_more && page.next_cursor == 5);
    store_events_cleanup(&page.events);
    /* A budget smaller than one event still delivers one. */
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "big", 0, 10, 10, &page), ROOST_OK);
    CHECK(page.events.len == 1 && page.has_more && page.next_cursor == 1);
    store_events_cleanup(&page.events);

    struct store_events evs = {0};
    bool more = false;
    CHECK_RC(IN_TX(st, st->ops->claim(st, TA, "big", 10, 2 * one, 60, "c", T0, &evs, &more)),
             ROOST_OK);
    CHECK(evs.len == 2 && more);
    CHECK(evs.len == 2 && evs.items[0].attempts == 1 && evs.items[1].seq == 2);
    store_events_cleanup(&evs);
    /* The other three were not touched: still pending, never attempted. */
    for (int64_t seq = 3; seq <= 5; seq++) {
        struct store_event ev;
        memset(&ev, 0, sizeof ev);
        CHECK(find_event(st, TA, "big", seq, &ev) == 0);
        CHECK(ev.status == STORE_PENDING && ev.attempts == 0);
        store_event_cleanup(&ev);
    }
    CHECK_RC(IN_TX(st, st->ops->claim(st, TA, "big", 10, 0, 60, "c", T0, &evs, &more)), ROOST_OK);
    CHECK(evs.len == 3 && !more);
    store_events_cleanup(&evs);
    CHECK_RC(IN_TX(st, st->ops->claim(st, TA, "big", 10, 0, 60, "c", T0, &evs, &more)), ROOST_OK);
    CHECK(evs.len == 0 && !more);
    store_events_cleanup(&evs);
}

struct archive_log {
    int64_t seqs[64];
    size_t n;
    int fail;
    bool payload_seen;
};

static int archive_cb(void *ctx, const char *tenant_id, const struct store_event *ev)
{
    struct archive_log *log = ctx;
    (void)tenant_id;
    if (log->fail) {
        return -1;
    }
    if (log->n < 64) {
        log->seqs[log->n++] = ev->seq;
    }
    if (ev->payload != NULL && strcmp(ev->payload, "{\"keep\":true}") == 0) {
        log->payload_seen = true;
    }
    return 0;
}

static void test_store_retention_deletes_prefix_and_sets_watermark(struct fx *f)
{
    struct store *st = f->st;
    struct store_events evs = {0};
    struct archive_log log = {0};
    struct store_retention_result res;
    struct store_inbox_page page;
    for (int i = 0; i < 6; i++) {
        pub1(st, TA, "a", "{\"keep\":true}", NULL, T0, NULL);
    }
    pub1(st, TA, "b", "{}", NULL, T0, NULL);
    CHECK_RC(claim(st, TA, "a", 6, 30, "", T0, &evs), ROOST_OK);
    CHECK(evs.len == 6);
    if (evs.len != 6) {
        return;
    }
    /* Complete 1, 2 and 4; release 3, 5, 6 back to pending. */
    for (size_t i = 0; i < 6; i++) {
        struct store_event *e = &evs.items[i];
        if (e->seq == 1 || e->seq == 2 || e->seq == 4) {
            CHECK_RC(ack(st, TA, "a", e->event_id, e->lease_token, T0 + 1000), ROOST_OK);
        } else {
            CHECK_RC(release(st, TA, "a", e, STORE_RELEASE_SHUTDOWN, 0, NULL, 5, T0, NULL),
                     ROOST_OK);
        }
    }
    store_events_cleanup(&evs);

    struct store_retention_req req = {.now_ms = T0 + 1000 + 3600 * 1000,
                                      .completed_s = 3600,
                                      .max_age_s = 86400,
                                      .batch = 100,
                                      .archive = archive_cb,
                                      .archive_ctx = &log};
    /* One ms too early: nothing goes. */
    req.now_ms--;
    CHECK_RC(IN_TX(st, st->ops->retention(st, &req, &res)), ROOST_OK);
    CHECK(res.deleted == 0 && !res.more);
    req.now_ms++;
    CHECK_RC(IN_TX(st, st->ops->retention(st, &req, &res)), ROOST_OK);
    CHECK(res.deleted == 2 && res.archived == 0 && !res.more); /* 1, 2; 3 is pending: prefix ends */
    CHECK(log.n == 0);

    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "a", 1, 10, 0, &page), ROOST_EGONE);
    CHECK(page.oldest_cursor == 2);
    store_events_cleanup(&page.events);
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "a", 0, 10, 0, &page), ROOST_EGONE);
    store_events_cleanup(&page.events);
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "a", 2, 10, 0, &page), ROOST_OK); /* == watermark: fine */
    CHECK(page.events.len == 4 && page.events.items[0].seq == 3 && page.head == 6);
    store_events_cleanup(&page.events);
    CHECK(status_of(st, TA, "a", 4) == STORE_COMPLETED); /* completed but behind a pending row */

    /* Past max_age everything goes; non-completed rows are archived first, with their payload. */
    req.now_ms = T0 + 86400 * 1000;
    req.batch = 3;
    CHECK_RC(IN_TX(st, st->ops->retention(st, &req, &res)), ROOST_OK);
    CHECK(res.deleted == 3 && res.more && res.archived == 2); /* a/3, a/4 (completed), a/5 */
    CHECK_RC(IN_TX(st, st->ops->retention(st, &req, &res)), ROOST_OK);
    CHECK(res.deleted == 2 && !res.more); /* a/6, b/1 */
    CHECK(log.n == 4);
    if (log.n == 4) {
        CHECK(log.seqs[0] == 3 && log.seqs[1] == 5 && log.seqs[2] == 6 && log.seqs[3] == 1);
    }
    CHECK(log.payload_seen);
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "a", 5, 10, 0, &page), ROOST_EGONE);
    CHECK(page.oldest_cursor == 6);
    store_events_cleanup(&page.events);
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "a", 6, 10, 0, &page), ROOST_OK);
    CHECK(page.events.len == 0 && page.head == 6);
    store_events_cleanup(&page.events);

    /* A full state sync after 410 hands out a cursor the agent can continue from. */
    char *state = NULL;
    int64_t cursor = -1;
    CHECK_RC(st->ops->state_get(st, TA, "a", &state, &cursor), ROOST_OK);
    CHECK(state != NULL && strcmp(state, "{}") == 0 && cursor == 6);
    free(state);

    /* The sequence continues after the watermark. */
    CHECK(pub1(st, TA, "a", "{}", NULL, T0 + 86400 * 1000, NULL) == 7);
}

static void test_store_retention_archive_failure_rolls_back(struct fx *f)
{
    struct store *st = f->st;
    struct archive_log log = {.fail = 1};
    struct store_retention_result res;
    for (int i = 0; i < 3; i++) {
        pub1(st, TA, "a", "{}", NULL, T0, NULL);
    }
    struct store_retention_req req = {.now_ms = T0 + 100000 * 1000LL,
                                      .completed_s = 3600,
                                      .max_age_s = 86400,
                                      .batch = 100,
                                      .archive = archive_cb,
                                      .archive_ctx = &log};
    CHECK(IN_TX(st, st->ops->retention(st, &req, &res)) != ROOST_OK);
    /* Inside a caller's transaction that then commits: still nothing deleted. */
    CHECK_RC(tx_begin(st), ROOST_OK);
    CHECK(st->ops->retention(st, &req, &res) != ROOST_OK);
    CHECK_RC(st->ops->commit(st), ROOST_OK);
    struct store_inbox_page page;
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "a", 0, 10, 0, &page), ROOST_OK);
    CHECK(page.events.len == 3);
    store_events_cleanup(&page.events);
    log.fail = 0;
    CHECK_RC(IN_TX(st, st->ops->retention(st, &req, &res)), ROOST_OK);
    CHECK(res.deleted == 3 && res.archived == 3);
}

static void test_store_state_get_after_patches(struct fx *f)
{
    struct store *st = f->st;
    char *state = NULL;
    int64_t cursor = -1;
    CHECK_RC(st->ops->state_get(st, TA, "a", &state, &cursor), ROOST_OK);
    CHECK(state != NULL && strcmp(state, "{}") == 0 && cursor == 0);
    free(state);

    struct pubopt p1 = {.patch = "{\"a\":1,\"b\":{\"c\":2}}"};
    struct pubopt p2 = {.patch = "{\"a\":null,\"b\":{\"d\":3}}"};
    pub1(st, TA, "a", "{}", &p1, T0, NULL);
    pub1(st, TA, "a", "{}", &p2, T0, NULL);
    pub1(st, TA, "a", "{}", NULL, T0, NULL); /* no patch: state and its cursor stay */
    CHECK_RC(st->ops->state_get(st, TA, "a", &state, &cursor), ROOST_OK);
    CHECK(state != NULL && strcmp(state, "{\"b\":{\"c\":2,\"d\":3}}") == 0);
    CHECK(cursor == 2);
    free(state);

    /* A fan-out patch reaches every recipient. */
    const char *fan[] = {"x", "y"};
    struct store_published out[2];
    struct pubopt p3 = {.patch = "{\"z\":true}"};
    CHECK_RC(publish_to(st, TA, fan, 2, "{}", &p3, T0, out, NULL), ROOST_OK);
    CHECK_RC(st->ops->state_get(st, TA, "y", &state, &cursor), ROOST_OK);
    CHECK(state != NULL && strcmp(state, "{\"z\":true}") == 0 && cursor == 1);
    free(state);
}

static void test_store_tenant_isolation(struct fx *f)
{
    struct store *st = f->st;
    struct store_events evs = {0};
    struct store_inbox_page page;
    char id[STORE_EVENT_ID_LEN + 1];
    struct pubopt p = {.patch = "{\"secret\":1}"};
    pub1(st, TA, "x", "{\"secret\":1}", &p, T0, id);
    pub1(st, TA, "x", "{}", NULL, T0, NULL);
    CHECK_RC(claim(st, TA, "x", 2, 30, "", T0, &evs), ROOST_OK);
    CHECK(evs.len == 2);
    if (evs.len != 2) {
        return;
    }
    CHECK_RC(release(st, TA, "x", &evs.items[1], STORE_RELEASE_POISON, 0, NULL, 5, T0, NULL),
             ROOST_OK);

    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TB, "x", 0, 10, 0, &page), ROOST_OK);
    CHECK(page.events.len == 0 && page.head == 0);
    store_events_cleanup(&page.events);
    CHECK(head_of(st, TB, "x") == 0);
    char *state = NULL;
    int64_t cursor = -1;
    CHECK_RC(st->ops->state_get(st, TB, "x", &state, &cursor), ROOST_OK);
    CHECK(state != NULL && strcmp(state, "{}") == 0 && cursor == 0);
    free(state);
    struct store_events none = {0};
    CHECK_RC(claim(st, TB, "x", 10, 30, "", T0, &none), ROOST_OK);
    CHECK(none.len == 0);
    CHECK_RC(ack(st, TB, "x", evs.items[0].event_id, evs.items[0].lease_token, T0),
             ROOST_EEVENTNOTFOUND);
    CHECK_RC(IN_TX(st, st->ops->extend(st, TB, "x", evs.items[0].event_id, evs.items[0].lease_token,
                                       10, 60, T0, NULL)),
             ROOST_EEVENTNOTFOUND);
    CHECK_RC(release(st, TB, "x", &evs.items[0], STORE_RELEASE_TRANSIENT, 0, NULL, 5, T0, NULL),
             ROOST_EEVENTNOTFOUND);
    CHECK_RC(IN_TX(st, st->ops->requeue(st, TB, evs.items[1].event_id, T0, NULL)),
             ROOST_EEVENTNOTFOUND);
    size_t released = 9;
    CHECK_RC(IN_TX(st, st->ops->release_all(st, TB, "x", NULL, T0, &released, NULL)), ROOST_OK);
    CHECK(released == 0);
    bool more = true;
    CHECK_RC(st->ops->quarantine_list(st, TB, NULL, "", 0, 10, &none, &more), ROOST_OK);
    CHECK(none.len == 0 && !more);
    struct store_agent_stats stats[4];
    size_t n = 9;
    CHECK_RC(st->ops->agents_list(st, TB, STORE_SORT_AGENT, "", 0, 4, T0, stats, &n, &more),
             ROOST_OK);
    CHECK(n == 0 && !more);
    /* Tenant A is untouched by all of that. */
    CHECK(status_of(st, TA, "x", 1) == STORE_CLAIMED);
    CHECK_RC(ack(st, TA, "x", evs.items[0].event_id, evs.items[0].lease_token, T0), ROOST_OK);
    store_events_cleanup(&evs);
}

static void test_store_savepoint_rollback_undoes_one_request(struct fx *f)
{
    struct store *st = f->st;
    const char *r[] = {"a"};
    struct store_publish_item item = {.recipients = r, .n_recipients = 1, .payload = "{}"};
    struct store_publish_req req = {.tenant_id = TA, .items = &item, .n_items = 1, .now_ms = T0};
    struct store_published out;
    CHECK_RC(tx_begin(st), ROOST_OK);
    CHECK_RC(st->ops->savepoint(st), ROOST_OK);
    CHECK_RC(st->ops->publish(st, &req, &out, NULL), ROOST_OK);
    CHECK(out.seq == 1);
    CHECK_RC(st->ops->savepoint_release(st), ROOST_OK);
    CHECK_RC(st->ops->savepoint(st), ROOST_OK);
    item.payload = "{\"undone\":true}";
    CHECK_RC(st->ops->publish(st, &req, &out, NULL), ROOST_OK);
    CHECK(out.seq == 2);
    CHECK_RC(st->ops->savepoint_rollback(st), ROOST_OK);
    CHECK_RC(st->ops->savepoint(st), ROOST_OK);
    item.payload = "{\"third\":true}";
    CHECK_RC(st->ops->publish(st, &req, &out, NULL), ROOST_OK);
    CHECK(out.seq == 2); /* the rolled-back request's seq is reused: no gap */
    CHECK_RC(st->ops->savepoint_release(st), ROOST_OK);
    CHECK_RC(st->ops->commit(st), ROOST_OK);
    struct store_inbox_page page;
    memset(&page, 0, sizeof page);
    CHECK_RC(st->ops->inbox_read(st, TA, "a", 0, 10, 0, &page), ROOST_OK);
    CHECK(page.events.len == 2 && page.head == 2);
    if (page.events.len == 2) {
        CHECK(strcmp(page.events.items[1].payload, "{\"third\":true}") == 0);
    }
    store_events_cleanup(&page.events);
}

static void test_store_quarantine_list_and_agents_list(struct fx *f)
{
    struct store *st = f->st;
    struct store_events evs = {0}, list = {0};
    bool more = false;
    const char *agents[] = {"b", "a"};
    for (size_t k = 0; k < 2; k++) {
        for (int i = 0; i < 2; i++) {
            pub1(st, TA, agents[k], "{}", NULL, T0, NULL);
        }
        CHECK_RC(claim(st, TA, agents[k], 2, 30, "", T0, &evs), ROOST_OK);
        for (size_t i = 0; i < evs.len; i++) {
            CHECK_RC(release(st, TA, agents[k], &evs.items[i], STORE_RELEASE_POISON, 0, "bad", 5,
                             T0, NULL),
                     ROOST_OK);
        }
        store_events_cleanup(&evs);
    }
    pub1(st, TA, "a", "{}", NULL, T0 + 5, NULL); /* a/3 pending */
    struct pubopt later = {.available_at = T0 + 99999};
    pub1(st, TA, "a", "{}", &later, T0, NULL);                       /* a/4 scheduled */
    pub1(st, TA, "a", "{}", NULL, T0 + 7, NULL);                     /* a/5 pending */
    CHECK_RC(claim(st, TA, "a", 1, 30, "", T0 + 8, &evs), ROOST_OK); /* a/3 claimed */
    store_events_cleanup(&evs);

    CHECK_RC(st->ops->quarantine_list(st, TA, NULL, "", 0, 3, &list, &more), ROOST_OK);
    CHECK(list.len == 3 && more);
    if (list.len == 3) {
        CHECK(strcmp(list.items[0].agent_id, "a") == 0 && list.items[0].seq == 1);
        CHECK(strcmp(list.items[2].agent_id, "b") == 0 && list.items[2].seq == 1);
        CHECK(list.items[0].status == STORE_QUARANTINED && list.items[0].last_error != NULL);
    }
    store_events_cleanup(&list);
    CHECK_RC(st->ops->quarantine_list(st, TA, NULL, "b", 1, 3, &list, &more), ROOST_OK);
    CHECK(list.len == 1 && !more && list.items[0].seq == 2);
    store_events_cleanup(&list);
    CHECK_RC(st->ops->quarantine_list(st, TA, "b", "", 0, 10, &list, &more), ROOST_OK);
    CHECK(list.len == 2 && !more);
    store_events_cleanup(&list);
    CHECK_RC(st->ops->quarantine_list(st, TA, "a", "", 0, 1, &list, &more), ROOST_OK);
    CHECK(list.len == 1 && more && list.items[0].seq == 1);
    store_events_cleanup(&list);
    CHECK_RC(st->ops->quarantine_list(st, TA, "a", "a", 1, 1, &list, &more), ROOST_OK);
    CHECK(list.len == 1 && !more && list.items[0].seq == 2);
    store_events_cleanup(&list);
    CHECK_RC(st->ops->quarantine_list(st, TA, "a", "b", 0, 10, &list, &more), ROOST_OK);
    CHECK(list.len == 0 && !more);
    store_events_cleanup(&list);

    struct store_agent_stats stats[4];
    size_t n = 0;
    CHECK_RC(st->ops->agents_list(st, TA, STORE_SORT_AGENT, "", 0, 1, T0, stats, &n, &more),
             ROOST_OK);
    CHECK(n == 1 && more && strcmp(stats[0].agent_id, "a") == 0);
    if (n == 1) {
        CHECK(stats[0].head == 5 && stats[0].purged_through_seq == 0);
        CHECK(stats[0].pending == 1 && stats[0].scheduled == 1 && stats[0].claimed == 1);
        CHECK(stats[0].quarantined == 2 && stats[0].oldest_pending_ms == T0 + 7);
    }
    CHECK_RC(st->ops->agents_list(st, TA, STORE_SORT_AGENT, "a", 0, 4, T0, stats, &n, &more),
             ROOST_OK);
    CHECK(n == 1 && !more && strcmp(stats[0].agent_id, "b") == 0);
    if (n == 1) {
        CHECK(stats[0].head == 2 && stats[0].pending == 0 && stats[0].oldest_pending_ms == 0);
    }
}

/* The operations behind /metrics and the operator API: the metrics snapshot, the agent listing's
 * sort orders and last_seen, one event by id, quarantine purge, and the ack's available_at. */
static void test_store_metrics_snapshot_and_admin_ops(struct fx *f)
{
    struct store *st = f->st;
    struct store_events evs = {0};
    for (int i = 0; i < 3; i++) {
        pub1(st, TA, "deep", "{}", NULL, T0 + i, NULL);
    }
    pub1(st, TA, "shallow", "{}", NULL, T0 + 10, NULL);
    pub1(st, TB, "x", "{}", NULL, T0 + 20, NULL);
    struct pubopt later = {.available_at = T0 + 99999};
    pub1(st, TB, "x", "{}", &later, T0, NULL); /* scheduled */
    /* TB/x: one claimed, then poisoned into quarantine; a second claimed and kept. */
    pub1(st, TB, "x", "{}", NULL, T0 + 21, NULL);
    CHECK_RC(claim(st, TB, "x", 2, 30, "", T0 + 30, &evs), ROOST_OK);
    CHECK(evs.len == 2);
    enum store_status to = STORE_PENDING;
    if (evs.len == 2) {
        CHECK_RC(
            IN_TX(st, st->ops->release(st, TB, "x", evs.items[0].event_id, evs.items[0].lease_token,
                                       STORE_RELEASE_POISON, 0, "boom", 5, T0 + 31, NULL, &to)),
            ROOST_OK);
        CHECK(to == STORE_QUARANTINED);
    }
    char quarantined_id[STORE_EVENT_ID_LEN + 1] = "";
    if (evs.len == 2) {
        memcpy(quarantined_id, evs.items[0].event_id, sizeof quarantined_id);
    }
    store_events_cleanup(&evs);

    struct store_metrics_tenant tenants[4];
    struct store_metrics_agent top[2];
    struct store_metrics_snapshot snap = {
        .tenants = tenants, .max_tenants = 4, .agents = top, .max_agents = 2};
    CHECK_RC(st->ops->metrics_snapshot(st, T0 + 40, &snap), ROOST_OK);
    CHECK(snap.n_tenants == 2 && !snap.truncated);
    if (snap.n_tenants == 2) {
        CHECK(strcmp(tenants[0].tenant_id, TA) == 0 && tenants[0].pending == 4);
        CHECK(tenants[0].oldest_pending_ms == T0 && tenants[0].claimed == 0);
        CHECK(tenants[1].pending == 0 && tenants[1].scheduled == 1 && tenants[1].claimed == 1);
        CHECK(tenants[1].quarantined == 1 && tenants[1].oldest_claimed_ms == T0 + 30);
    }
    CHECK(snap.n_agents == 2);
    if (snap.n_agents == 2) {
        CHECK(strcmp(top[0].agent_id, "deep") == 0 && top[0].pending == 3);
        CHECK(strcmp(top[1].agent_id, "shallow") == 0 && top[1].pending == 1);
    }
    snap.max_tenants = 1;
    CHECK_RC(st->ops->metrics_snapshot(st, T0 + 40, &snap), ROOST_OK);
    CHECK(snap.n_tenants == 1 && snap.truncated);

    /* Sort orders; the claim above recorded last_seen for TB/x only. */
    struct store_agent_stats stats[4];
    size_t n = 0;
    bool more = false;
    CHECK_RC(st->ops->agents_list(st, TA, STORE_SORT_DEPTH, NULL, 0, 1, T0, stats, &n, &more),
             ROOST_OK);
    CHECK(n == 1 && more && strcmp(stats[0].agent_id, "deep") == 0 && stats[0].last_seen_ms == 0);
    CHECK_RC(st->ops->agents_list(st, TA, STORE_SORT_DEPTH, NULL, 1, 4, T0, stats, &n, &more),
             ROOST_OK);
    CHECK(n == 1 && !more && strcmp(stats[0].agent_id, "shallow") == 0);
    CHECK_RC(st->ops->agents_list(st, TA, STORE_SORT_AGE, NULL, 0, 4, T0, stats, &n, &more),
             ROOST_OK);
    CHECK(n == 2 && strcmp(stats[0].agent_id, "deep") == 0);
    CHECK_RC(st->ops->agents_list(st, TB, STORE_SORT_AGENT, "", 0, 4, T0, stats, &n, &more),
             ROOST_OK);
    CHECK(n == 1 && stats[0].last_seen_ms == T0 + 30);

    /* One event by id, with its audit fields; then purge it. */
    struct store_event ev;
    memset(&ev, 0, sizeof ev);
    CHECK_RC(st->ops->event_get(st, TB, quarantined_id, &ev), ROOST_OK);
    CHECK(ev.status == STORE_QUARANTINED && ev.last_error && strcmp(ev.last_error, "boom") == 0);
    CHECK(ev.payload != NULL && ev.attempts == 1);
    store_event_cleanup(&ev);
    CHECK_RC(st->ops->event_get(st, TA, quarantined_id, &ev), ROOST_EEVENTNOTFOUND);
    size_t purged = 9;
    CHECK_RC(IN_TX(st, st->ops->quarantine_purge(st, TA, NULL, quarantined_id, 10, &purged)),
             ROOST_EEVENTNOTFOUND);
    CHECK_RC(IN_TX(st, st->ops->quarantine_purge(st, TB, NULL, quarantined_id, 10, &purged)),
             ROOST_OK);
    CHECK(purged == 1);
    CHECK_RC(st->ops->event_get(st, TB, quarantined_id, &ev), ROOST_EEVENTNOTFOUND);
    CHECK_RC(IN_TX(st, st->ops->quarantine_purge(st, TB, "x", NULL, 10, &purged)), ROOST_OK);
    CHECK(purged == 0); /* the claimed and scheduled rows of x are untouched */
    CHECK(head_of(st, TB, "x") == 3);

    /* The ack reports available_at once, and 0 when repeated. */
    CHECK_RC(claim(st, TA, "shallow", 1, 30, "", T0 + 50, &evs), ROOST_OK);
    if (evs.len == 1) {
        int64_t avail = -1;
        CHECK_RC(IN_TX(st, st->ops->ack(st, TA, "shallow", evs.items[0].event_id,
                                        evs.items[0].lease_token, T0 + 51, &avail)),
                 ROOST_OK);
        CHECK(avail == T0 + 10);
        CHECK_RC(IN_TX(st, st->ops->ack(st, TA, "shallow", evs.items[0].event_id,
                                        evs.items[0].lease_token, T0 + 52, &avail)),
                 ROOST_OK);
        CHECK(avail == 0);
    }
    store_events_cleanup(&evs);
}

static void test_store_reads_on_another_connection_see_only_commits(struct fx *f)
{
    struct store *st = f->st;
    struct store *reader = open_conn(f->url);
    CHECK(reader != NULL);
    if (reader == NULL) {
        return;
    }
    pub1(st, TA, "a", "{}", NULL, T0, NULL);
    const char *r[] = {"a"};
    struct store_publish_item item = {.recipients = r, .n_recipients = 1, .payload = "{}"};
    struct store_publish_req req = {.tenant_id = TA, .items = &item, .n_items = 1, .now_ms = T0};
    struct store_published out;
    struct store_inbox_page page;
    CHECK_RC(tx_begin(st), ROOST_OK);
    CHECK_RC(st->ops->publish(st, &req, &out, NULL), ROOST_OK);
    /* The writer holds its transaction open: the reader is not blocked and sees the last commit. */
    memset(&page, 0, sizeof page);
    CHECK_RC(reader->ops->inbox_read(reader, TA, "a", 0, 10, 0, &page), ROOST_OK);
    CHECK(page.events.len == 1 && page.head == 1);
    store_events_cleanup(&page.events);
    int64_t head = -1;
    CHECK_RC(reader->ops->head(reader, TA, "a", &head), ROOST_OK);
    CHECK(head == 1);
    CHECK_RC(st->ops->commit(st), ROOST_OK);
    memset(&page, 0, sizeof page);
    CHECK_RC(reader->ops->inbox_read(reader, TA, "a", 0, 10, 0, &page), ROOST_OK);
    CHECK(page.events.len == 2 && page.head == 2);
    store_events_cleanup(&page.events);
    CHECK(reader->ops->ping(reader));
    store_close(reader);
}

/* ---- signature keys and nonces ---- */

static int add_key(struct store *st, const char *tenant, const char *key_id, const char *agent,
                   const char *material, int64_t now)
{
    struct store_key k = {.material = (char *)material};
    snprintf(k.key_id, sizeof k.key_id, "%s", key_id);
    snprintf(k.agent_id, sizeof k.agent_id, "%s", agent);
    snprintf(k.alg, sizeof k.alg, "ed25519");
    return IN_TX(st, st->ops->key_add(st, tenant, &k, now));
}

static void test_store_keys_add_get_revoke(struct fx *f)
{
    struct store *st = f->st;
    struct store_key k;
    CHECK_RC(add_key(st, TA, "k1", "agent-1", "PEM-1", T0), ROOST_OK);
    CHECK_RC(add_key(st, TA, "k1", "agent-2", "PEM-2", T0 + 1), ROOST_EKEYEXISTS);
    /* Another tenant may use the same key id: ids are per tenant. */
    CHECK_RC(add_key(st, TB, "k1", "*", "PEM-B", T0), ROOST_OK);
    CHECK_RC(st->ops->key_get(st, TA, "k1", &k), ROOST_OK);
    CHECK(strcmp(k.key_id, "k1") == 0 && strcmp(k.agent_id, "agent-1") == 0);
    CHECK(strcmp(k.alg, "ed25519") == 0 && k.created_at_ms == T0 && k.revoked_at_ms == 0);
    CHECK(k.material != NULL && strcmp(k.material, "PEM-1") == 0);
    store_key_cleanup(&k);
    CHECK_RC(st->ops->key_get(st, TA, "nope", &k), ROOST_EKEYNOTFOUND);
    CHECK(k.material == NULL);
    CHECK_RC(IN_TX(st, st->ops->key_revoke(st, TA, "k1", T0 + 5)), ROOST_OK);
    CHECK_RC(IN_TX(st, st->ops->key_revoke(st, TA, "k1", T0 + 9)), ROOST_OK);
    CHECK_RC(st->ops->key_get(st, TA, "k1", &k), ROOST_OK);
    CHECK(k.revoked_at_ms == T0 + 5); /* the first revocation stands */
    store_key_cleanup(&k);
    CHECK_RC(IN_TX(st, st->ops->key_revoke(st, TA, "nope", T0)), ROOST_EKEYNOTFOUND);
    /* A revoked id is not reusable. */
    CHECK_RC(add_key(st, TA, "k1", "agent-1", "PEM-3", T0 + 10), ROOST_EKEYEXISTS);
    /* Tenant B's key is untouched by A's revocation, and A cannot revoke B's. */
    CHECK_RC(st->ops->key_get(st, TB, "k1", &k), ROOST_OK);
    CHECK(k.revoked_at_ms == 0 && strcmp(k.agent_id, "*") == 0 && strcmp(k.material, "PEM-B") == 0);
    store_key_cleanup(&k);
    CHECK_RC(IN_TX(st, st->ops->key_revoke(st, TB, "k2", T0)), ROOST_EKEYNOTFOUND);
}

/* Inbound webhook sources (store_sources.c): add, get by id alone (ingest) or within the tenant,
 * list without secrets, rotate keeping the old secret until its overlap, receipts newest first
 * and pruned by age, delete taking the receipts along. */
static struct store_source make_source(const char *tenant, const char *id)
{
    struct store_source s;
    memset(&s, 0, sizeof s);
    snprintf(s.tenant_id, sizeof s.tenant_id, "%s", tenant);
    snprintf(s.source_id, sizeof s.source_id, "%s", id);
    snprintf(s.name, sizeof s.name, "name of %s", id);
    snprintf(s.scheme, sizeof s.scheme, "github");
    snprintf(s.secret, sizeof s.secret, "secret-%s", id);
    s.config = (char *)"{\"options\":{},\"agents\":[\"a\"]}";
    return s;
}

static void test_store_sources_and_receipts(struct fx *f)
{
    struct store *st = f->st;
    struct store_source a = make_source(TA, "src_A"), b = make_source(TB, "src_B"), got;
    CHECK_RC(IN_TX(st, st->ops->source_add(st, &a, T0)), ROOST_OK);
    CHECK_RC(IN_TX(st, st->ops->source_add(st, &b, T0)), ROOST_OK);
    struct store_source dup = make_source(TB, "src_A"); /* ids are unique over every tenant */
    CHECK_RC(IN_TX(st, st->ops->source_add(st, &dup, T0)), ROOST_ESOURCEEXISTS);
    CHECK_RC(st->ops->source_get(st, NULL, "src_A", &got), ROOST_OK);
    CHECK(strcmp(got.tenant_id, TA) == 0 && strcmp(got.secret, "secret-src_A") == 0);
    CHECK(got.config != NULL && strstr(got.config, "agents") != NULL && got.old_secret[0] == 0);
    store_source_cleanup(&got);
    CHECK_RC(st->ops->source_get(st, TB, "src_A", &got), ROOST_ESOURCENOTFOUND);
    CHECK(got.config == NULL);
    CHECK_RC(st->ops->source_get(st, TA, "src_nope", &got), ROOST_ESOURCENOTFOUND);

    struct store_source list[3];
    size_t n = 0;
    bool more = true;
    CHECK_RC(st->ops->source_list(st, TA, "", 3, list, &n, &more), ROOST_OK);
    CHECK(n == 1 && !more && strcmp(list[0].source_id, "src_A") == 0 && list[0].secret[0] == 0);
    store_source_cleanup(&list[0]);

    CHECK_RC(IN_TX(st, st->ops->source_rotate(st, TA, "src_A", "secret-2", T0 + 60000, T0 + 1)),
             ROOST_OK);
    CHECK_RC(IN_TX(st, st->ops->source_rotate(st, TB, "src_A", "x", 0, T0)), ROOST_ESOURCENOTFOUND);
    CHECK_RC(st->ops->source_get(st, TA, "src_A", &got), ROOST_OK);
    CHECK(strcmp(got.secret, "secret-2") == 0 && strcmp(got.old_secret, "secret-src_A") == 0);
    CHECK(got.old_until_ms == T0 + 60000 && got.updated_at_ms == T0 + 1);
    store_source_cleanup(&got);

    for (int i = 0; i < 3; i++) {
        struct store_receipt r;
        memset(&r, 0, sizeof r);
        snprintf(r.source_id, sizeof r.source_id, "src_A");
        snprintf(r.receipt_id, sizeof r.receipt_id, "rcp_%d", i);
        r.at_ms = T0 + i * 1000;
        snprintf(r.outcome, sizeof r.outcome, i == 0 ? "accepted" : "refused");
        snprintf(r.reason, sizeof r.reason, i == 0 ? "ok" : "signature_mismatch");
        snprintf(r.peer, sizeof r.peer, "127.0.0.1");
        r.size = 10 + i;
        r.events = i == 0 ? 1 : 0;
        CHECK_RC(IN_TX(st, st->ops->receipt_add(st, TA, &r)), ROOST_OK);
    }
    struct store_receipt rc[2];
    CHECK_RC(st->ops->receipt_list(st, TA, "src_A", "", 2, rc, &n, &more), ROOST_OK);
    CHECK(n == 2 && more && strcmp(rc[0].receipt_id, "rcp_2") == 0 && rc[0].delivery_id[0] == 0);
    CHECK_RC(st->ops->receipt_list(st, TA, "src_A", rc[1].receipt_id, 2, rc, &n, &more), ROOST_OK);
    CHECK(n == 1 && !more && strcmp(rc[0].outcome, "accepted") == 0 && rc[0].events == 1);
    CHECK_RC(st->ops->receipt_list(st, TB, "src_A", "", 2, rc, &n, &more), ROOST_OK);
    CHECK(n == 0); /* another tenant reads none of them */
    size_t pruned = 0;
    CHECK_RC(IN_TX(st, st->ops->receipt_prune(st, T0 + 1500, 10, &pruned)), ROOST_OK);
    CHECK(pruned == 2);
    CHECK_RC(IN_TX(st, st->ops->source_delete(st, TB, "src_A")), ROOST_ESOURCENOTFOUND);
    CHECK_RC(IN_TX(st, st->ops->source_delete(st, TA, "src_A")), ROOST_OK);
    CHECK_RC(st->ops->receipt_list(st, TA, "src_A", "", 2, rc, &n, &more), ROOST_OK);
    CHECK(n == 0);
    CHECK_RC(st->ops->source_get(st, NULL, "src_B", &got), ROOST_OK);
    store_source_cleanup(&got);
}

static void test_store_keys_list_paging_without_material(struct fx *f)
{
    struct store *st = f->st;
    static const char *const ids[] = {"c", "a", "e", "b", "d"};
    for (size_t i = 0; i < 5; i++) {
        CHECK_RC(add_key(st, TA, ids[i], "x", "SECRET", T0), ROOST_OK);
    }
    CHECK_RC(add_key(st, TB, "aa", "x", "SECRET", T0), ROOST_OK);
    struct store_key out[2];
    size_t n = 9;
    bool more = false;
    char seen[16] = "";
    char after[STORE_ID_MAX + 1] = "";
    for (int page = 0; page < 5; page++) {
        CHECK_RC(st->ops->key_list(st, TA, after, 2, out, &n, &more), ROOST_OK);
        for (size_t i = 0; i < n; i++) {
            CHECK(out[i].material == NULL);
            strncat(seen, out[i].key_id, sizeof seen - strlen(seen) - 1);
        }
        if (!more || n == 0) {
            break;
        }
        snprintf(after, sizeof after, "%s", out[n - 1].key_id);
    }
    CHECK(strcmp(seen, "abcde") == 0);
    CHECK(!more);
    CHECK_RC(st->ops->key_list(st, "tenant-c", "", 2, out, &n, &more), ROOST_OK);
    CHECK(n == 0 && !more);
}

static void test_store_nonce_claim_rejects_replay_until_expiry(struct fx *f)
{
    struct store *st = f->st;
    CHECK_RC(IN_TX(st, st->ops->nonce_claim(st, TA, "k1", "n1", T0 + 300000, T0)), ROOST_OK);
    CHECK_RC(IN_TX(st, st->ops->nonce_claim(st, TA, "k1", "n1", T0 + 300000, T0 + 1000)),
             ROOST_ENONCEREUSED);
    /* Distinct in every other coordinate: tenant, key, nonce. */
    CHECK_RC(IN_TX(st, st->ops->nonce_claim(st, TB, "k1", "n1", T0 + 300000, T0)), ROOST_OK);
    CHECK_RC(IN_TX(st, st->ops->nonce_claim(st, TA, "k2", "n1", T0 + 300000, T0)), ROOST_OK);
    CHECK_RC(IN_TX(st, st->ops->nonce_claim(st, TA, "k1", "n2", T0 + 300000, T0)), ROOST_OK);
    /* Once expired, the row may be replaced (the signature's own expiry refuses older replays). */
    CHECK_RC(IN_TX(st, st->ops->nonce_claim(st, TA, "k1", "n1", T0 + 700000, T0 + 300000)),
             ROOST_OK);
    CHECK_RC(IN_TX(st, st->ops->nonce_claim(st, TA, "k1", "n1", T0 + 700000, T0 + 300001)),
             ROOST_ENONCEREUSED);
    /* A rolled-back claim leaves nothing behind. */
    CHECK_RC(tx_begin(st), ROOST_OK);
    CHECK_RC(st->ops->savepoint(st), ROOST_OK);
    CHECK_RC(st->ops->nonce_claim(st, TA, "k9", "n9", T0 + 1000, T0), ROOST_OK);
    CHECK_RC(st->ops->savepoint_rollback(st), ROOST_OK);
    CHECK_RC(st->ops->commit(st), ROOST_OK);
    CHECK_RC(IN_TX(st, st->ops->nonce_claim(st, TA, "k9", "n9", T0 + 1000, T0)), ROOST_OK);
}

static void test_store_nonce_prune_bounded_batches(struct fx *f)
{
    struct store *st = f->st;
    char nonce[32];
    for (int i = 0; i < 5; i++) {
        snprintf(nonce, sizeof nonce, "old-%d", i);
        CHECK_RC(IN_TX(st, st->ops->nonce_claim(st, TA, "k", nonce, T0 + 10, T0)), ROOST_OK);
    }
    CHECK_RC(IN_TX(st, st->ops->nonce_claim(st, TA, "k", "live", T0 + 100000, T0)), ROOST_OK);
    size_t count = 99;
    CHECK_RC(IN_TX(st, st->ops->nonce_prune(st, T0 + 10, 3, &count)), ROOST_OK);
    CHECK(count == 3);
    CHECK_RC(IN_TX(st, st->ops->nonce_prune(st, T0 + 10, 3, &count)), ROOST_OK);
    CHECK(count == 2);
    CHECK_RC(IN_TX(st, st->ops->nonce_prune(st, T0 + 10, 3, &count)), ROOST_OK);
    CHECK(count == 0);
    /* The live nonce survived pruning: still a replay. */
    CHECK_RC(IN_TX(st, st->ops->nonce_claim(st, TA, "k", "live", T0 + 100000, T0 + 20)),
             ROOST_ENONCEREUSED);
}

static void test_store_migrate_is_idempotent(struct fx *f)
{
    struct store *st = f->st;
    pub1(st, TA, "a", "{}", NULL, T0, NULL);
    CHECK_RC(st->ops->migrate(st), ROOST_OK);
    struct store *other = open_conn(f->url);
    CHECK(other != NULL);
    if (other != NULL) {
        CHECK_RC(other->ops->migrate(other), ROOST_OK);
        store_close(other);
    }
    CHECK(head_of(st, TA, "a") == 1);
}

static void test_store_open_rejects_bad_urls(struct fx *f)
{
    struct store *st = (struct store *)f; /* poisoned: must be reset to NULL */
    const char *err = NULL;
    CHECK_RC(store_open("nosuch://x", NULL, &st, &err), ROOST_EINVAL);
    CHECK(st == NULL && err != NULL);
    CHECK_RC(store_open("no-scheme", NULL, &st, &err), ROOST_EINVAL);
    if (strcmp(g_backend, "sqlite") == 0) {
        CHECK(store_open("sqlite://", NULL, &st, &err) != ROOST_OK);
        CHECK(store_open("sqlite:///nonexistent-dir/x/y.db", NULL, &st, &err) != ROOST_OK);
        CHECK(st == NULL && err != NULL && err[0] != '\0');
    }
    CHECK(strcmp(store_status_name(STORE_QUARANTINED), "quarantined") == 0);
}

/* Tails until `want` touches came (a backend told of commits by notification, PostgreSQL, reports
 * a commit once its notification arrived, which may be a call later), for up to 5 s. */
static int tail_until(struct store *tailer, struct store_tail_pos *pos, int64_t now_ms,
                      struct store_touches *t, size_t want)
{
    int rc = ROOST_OK;
    for (int i = 0; i < 500 && rc == ROOST_OK && t->len < want; i++) {
        if (i > 0) {
            usleep(10000);
        }
        rc = tailer->ops->tail(tailer, pos, now_ms, t);
    }
    return rc;
}

/* The tailer op: backends shared by several processes report every committed touch, whoever
 * made it; a single-process backend (SQLite) has no change log, and its tail reports nothing. */
static void test_store_tail_reports_commits_of_other_connections(struct fx *f)
{
    struct store *st = f->st;
    if (!store_has(st, STORE_CAP_CHANGE_LOG)) {
        CHECK(strcmp(g_backend, "sqlite") == 0 && store_has(st, STORE_CAP_SINGLE_WRITER));
        struct store_tail_pos pos = {0};
        struct store_touches t = {0};
        pub1(st, TA, "a", "{}", NULL, T0, NULL);
        CHECK_RC(store_call(st, tail, &pos, T0, &t), ROOST_OK);
        CHECK(t.len == 0);
        store_touches_cleanup(&t);
        store_tail_pos_cleanup(&pos);
        return;
    }
    CHECK(!store_has(st, STORE_CAP_SINGLE_WRITER));
    struct store *tailer = open_conn(f->url);
    CHECK(tailer != NULL);
    if (tailer == NULL) {
        return;
    }
    struct store_tail_pos pos = {0};
    struct store_touches t = {0};
    pub1(st, TA, "before", "{}", NULL, T0, NULL);
    CHECK_RC(tailer->ops->tail(tailer, &pos, T0, &t), ROOST_OK);
    CHECK(t.len == 0); /* starts at the end of the log */

    pub1(st, TA, "a", "{}", NULL, T0, NULL);
    const char *fan[] = {"b", "c"};
    struct store_published out[2];
    CHECK_RC(publish_to(st, TB, fan, 2, "{}", NULL, T0, out, NULL), ROOST_OK);
    CHECK_RC(tail_until(tailer, &pos, T0, &t, 3), ROOST_OK);
    CHECK(t.len == 3 && touched(&t, TA, "a", 1) && touched(&t, TB, "b", 1) &&
          touched(&t, TB, "c", 1));
    store_touches_cleanup(&t);

    /* Rolled back: nothing to report. */
    const char *r[] = {"a"};
    struct store_publish_item item = {.recipients = r, .n_recipients = 1, .payload = "{}"};
    struct store_publish_req req = {.tenant_id = TA, .items = &item, .n_items = 1, .now_ms = T0};
    CHECK_RC(tx_begin(st), ROOST_OK);
    CHECK_RC(st->ops->publish(st, &req, out, NULL), ROOST_OK);
    CHECK_RC(st->ops->rollback(st), ROOST_OK);
    CHECK_RC(tailer->ops->tail(tailer, &pos, T0, &t), ROOST_OK);
    CHECK(t.len == 0);

    /* Work made claimable again is reported too (release, scavenger, due, requeue). */
    struct store_events evs = {0};
    CHECK_RC(claim(st, TA, "a", 1, 1, "c", T0, &evs), ROOST_OK);
    size_t count = 0, quarantined = 0;
    CHECK_RC(scavenge(st, T0 + 2000, 5, &count, &quarantined, NULL), ROOST_OK);
    CHECK(count == 1);
    CHECK_RC(tail_until(tailer, &pos, T0 + 2000, &t, 1), ROOST_OK);
    CHECK(t.len == 1 && touched(&t, TA, "a", 1));
    store_touches_cleanup(&t);
    store_events_cleanup(&evs);
    store_tail_pos_cleanup(&pos);
    store_close(tailer);
}

/* ---- concurrency: 8 writers, 1 cursor reader, one agent ---- */

#define WRITERS 8
#define PER_WRITER 150

struct writer_arg {
    const char *url;
    int errors;
    int retries;
};

struct reader_arg {
    const char *url;
    atomic_int *writers_done;
    int64_t seen;
    int errors;
};

static void *writer_main(void *p)
{
    struct writer_arg *w = p;
    struct store *st = open_conn(w->url);
    if (st == NULL) {
        w->errors++;
        return NULL;
    }
    const char *r[] = {"hot"};
    struct store_publish_item item = {.recipients = r, .n_recipients = 1, .payload = "{}"};
    struct store_publish_req req = {.tenant_id = TA, .items = &item, .n_items = 1, .now_ms = T0};
    for (int i = 0; i < PER_WRITER; i++) {
        struct store_published out;
        int rc;
        for (int attempt = 0; attempt < 1000; attempt++) {
            rc = st->ops->begin(st);
            if (rc == ROOST_OK) {
                rc = st->ops->publish(st, &req, &out, NULL);
                rc = rc == ROOST_OK ? st->ops->commit(st) : rc;
                if (rc != ROOST_OK) {
                    st->ops->rollback(st);
                }
            }
            if (rc != ROOST_ERETRY) {
                break;
            }
            w->retries++;
        }
        if (rc != ROOST_OK) {
            printf("writer: %s: %s\n", roost_err_name(rc), st->ops->errmsg(st));
            w->errors++;
            break;
        }
    }
    store_close(st);
    return NULL;
}

static void *reader_main(void *p)
{
    struct reader_arg *r = p;
    struct store *st = open_conn(r->url);
    if (st == NULL) {
        r->errors++;
        return NULL;
    }
    int64_t cursor = 0;
    bool final_pass = false;
    for (;;) {
        bool done = atomic_load(r->writers_done) != 0;
        struct store_inbox_page page;
        memset(&page, 0, sizeof page);
        int rc = st->ops->inbox_read(st, TA, "hot", cursor, 37, 0, &page);
        if (rc == ROOST_ERETRY) {
            continue;
        }
        if (rc != ROOST_OK) {
            printf("reader: %s: %s\n", roost_err_name(rc), st->ops->errmsg(st));
            r->errors++;
            break;
        }
        for (size_t i = 0; i < page.events.len; i++) {
            if (page.events.items[i].seq != cursor + 1) {
                if (r->errors++ < 5) {
                    printf("reader: after %lld got seq %lld\n", (long long)cursor,
                           (long long)page.events.items[i].seq);
                }
            }
            cursor = page.events.items[i].seq;
            r->seen++;
        }
        if (page.head < cursor) {
            r->errors++;
        }
        bool empty = page.events.len == 0;
        store_events_cleanup(&page.events);
        if (empty && final_pass) {
            break;
        }
        /* After the writers finished, one more read that finds nothing ends the walk. */
        final_pass = done && empty ? true : done;
        if (empty && !done) {
            sched_yield();
        }
    }
    store_close(st);
    return NULL;
}

static void test_store_concurrent_publish_cursor_sees_every_seq_once(struct fx *f)
{
    pthread_t writers[WRITERS], reader;
    struct writer_arg wargs[WRITERS];
    atomic_int done = 0;
    struct reader_arg rarg = {.url = f->url, .writers_done = &done};
    CHECK(pthread_create(&reader, NULL, reader_main, &rarg) == 0);
    for (int i = 0; i < WRITERS; i++) {
        wargs[i] = (struct writer_arg){.url = f->url};
        CHECK(pthread_create(&writers[i], NULL, writer_main, &wargs[i]) == 0);
    }
    int errors = 0;
    for (int i = 0; i < WRITERS; i++) {
        pthread_join(writers[i], NULL);
        errors += wargs[i].errors;
    }
    atomic_store(&done, 1);
    pthread_join(reader, NULL);
    CHECK(errors == 0);
    CHECK(rarg.errors == 0);
    CHECK(rarg.seen == WRITERS * PER_WRITER);
    CHECK(head_of(f->st, TA, "hot") == WRITERS * PER_WRITER);
}

/* ---- runner ---- */

struct test {
    const char *name;
    void (*fn)(struct fx *f);
};

/* "What happened to event X?": a tenant's events by correlation id, any agent and status, in
 * (agent, seq) order and paged, never another tenant's or another id's; and a stream's sighting
 * of an agent (last_seen_at, at most once a minute). */
static void test_store_events_by_correlation_and_seen(struct fx *f)
{
    struct store *st = f->st;
    struct pubopt order = {.corr = "order-7"}, other = {.corr = "order-8"};
    const char *const both[] = {"zed", "amy"};
    struct store_published outs[2];
    CHECK_RC(publish_to(st, TA, both, 2, "{\"n\":1}", &order, T0, outs, NULL), ROOST_OK);
    pub1(st, TA, "amy", "{}", &other, T0, NULL);
    pub1(st, TA, "amy", "{}", NULL, T0, NULL);
    pub1(st, TA, "amy", "{\"n\":2}", &order, T0, NULL); /* amy/4 */
    pub1(st, TB, "amy", "{}", &order, T0, NULL);        /* another tenant's */
    struct store_events evs = {0};
    CHECK_RC(claim(st, TA, "zed", 1, 30, "w1", T0 + 1, &evs), ROOST_OK);
    store_events_cleanup(&evs);

    struct store_events got = {0};
    bool more = true;
    CHECK_RC(st->ops->events_by_correlation(st, TA, "order-7", "", 0, 10, &got, &more), ROOST_OK);
    CHECK(got.len == 3 && !more);
    if (got.len == 3) {
        CHECK(strcmp(got.items[0].agent_id, "amy") == 0 && got.items[0].seq == 1);
        CHECK(strcmp(got.items[1].agent_id, "amy") == 0 && got.items[1].seq == 4);
        CHECK(strcmp(got.items[2].agent_id, "zed") == 0 && got.items[2].seq == 1);
        CHECK(got.items[2].status == STORE_CLAIMED && got.items[2].attempts == 1);
        CHECK(strcmp(got.items[2].consumer, "w1") == 0);
        CHECK(got.items[0].correlation_id != NULL &&
              strcmp(got.items[0].correlation_id, "order-7") == 0);
    }
    store_events_cleanup(&got);
    /* Paged: two, then the rest after (amy, 4). */
    CHECK_RC(st->ops->events_by_correlation(st, TA, "order-7", "", 0, 2, &got, &more), ROOST_OK);
    CHECK(got.len == 2 && more);
    store_events_cleanup(&got);
    CHECK_RC(st->ops->events_by_correlation(st, TA, "order-7", "amy", 4, 2, &got, &more), ROOST_OK);
    CHECK(got.len == 1 && !more && strcmp(got.items[0].agent_id, "zed") == 0);
    store_events_cleanup(&got);
    CHECK_RC(st->ops->events_by_correlation(st, TB, "order-7", "", 0, 10, &got, &more), ROOST_OK);
    CHECK(got.len == 1 && strcmp(got.items[0].agent_id, "amy") == 0);
    store_events_cleanup(&got);
    CHECK_RC(st->ops->events_by_correlation(st, TA, "order-", "", 0, 10, &got, &more), ROOST_OK);
    CHECK(got.len == 0 && !more); /* an exact match, never a prefix */
    store_events_cleanup(&got);
    CHECK_RC(st->ops->events_by_correlation(st, TA, "", "", 0, 10, &got, &more), ROOST_EINVAL);
    CHECK_RC(st->ops->events_by_correlation(st, TA, "order-7", "", 0, 0, &got, &more),
             ROOST_EINVAL);

    /* Seen by a stream: written, then not again within the minute; an unknown agent: no row. */
    struct store_agent_stats stats[4];
    size_t n = 0;
    CHECK_RC(IN_TX(st, st->ops->agent_seen(st, TA, "amy", T0 + 100)), ROOST_OK);
    CHECK_RC(IN_TX(st, st->ops->agent_seen(st, TA, "amy", T0 + 200)), ROOST_OK);
    CHECK_RC(IN_TX(st, st->ops->agent_seen(st, TA, "nobody", T0 + 200)), ROOST_OK);
    CHECK_RC(st->ops->agents_list(st, TA, STORE_SORT_AGENT, "", 0, 4, T0, stats, &n, &more),
             ROOST_OK);
    CHECK(n == 2 && strcmp(stats[0].agent_id, "amy") == 0 && stats[0].last_seen_ms == T0 + 100);
    CHECK_RC(IN_TX(st, st->ops->agent_seen(st, TA, "amy", T0 + 100 + 60000)), ROOST_OK);
    CHECK_RC(st->ops->agents_list(st, TA, STORE_SORT_AGENT, "", 0, 1, T0, stats, &n, &more),
             ROOST_OK);
    CHECK(n == 1 && stats[0].last_seen_ms == T0 + 100 + 60000);
}

/* The webhook part lives in conformance_webhooks.c; it needs only the fresh store. */
static void test_store_webhooks_endpoints(struct fx *f)
{
    conformance_webhooks_endpoints(f->st);
}
static void test_store_webhooks_failure_run(struct fx *f)
{
    conformance_webhooks_failure_run(f->st);
}
static void test_store_webhooks_attempts(struct fx *f)
{
    conformance_webhooks_attempts(f->st);
}

#define TEST(fn)                                                                                   \
    {                                                                                              \
#fn, fn                                                                                    \
    }
static const struct test tests[] = {
    TEST(test_store_publish_assigns_gapfree_seqs),
    TEST(test_store_publish_batch_seqs_across_agents),
    TEST(test_store_publish_rollback_leaves_nothing),
    TEST(test_store_publish_fields_roundtrip),
    TEST(test_store_idempotency_key_dedups),
    TEST(test_store_state_patch_bound),
    TEST(test_store_delayed_event_scheduled_then_promoted),
    TEST(test_store_claim_order_priority_then_seq),
    TEST(test_store_inbox_peek_is_the_next_claim),
    TEST(test_store_ack_fencing),
    TEST(test_store_late_ack_after_reclaim_is_rejected),
    TEST(test_store_release_counters_and_quarantine),
    TEST(test_store_release_with_delay_schedules),
    TEST(test_store_extend_cap_and_expired_lease),
    TEST(test_store_release_all_only_that_consumer),
    TEST(test_store_scavenger_returns_and_quarantines),
    TEST(test_store_scavenger_follows_a_consumer_limit),
    TEST(test_store_scavenger_never_overwrites_an_ack),
    TEST(test_store_expire_marks_expired),
    TEST(test_store_requeue_keeps_id_and_seq),
    TEST(test_store_inbox_read_paging),
    TEST(test_store_purge_leaves_no_stall),
    TEST(test_store_page_byte_budget),
    TEST(test_store_retention_deletes_prefix_and_sets_watermark),
    TEST(test_store_retention_archive_failure_rolls_back),
    TEST(test_store_state_get_after_patches),
    TEST(test_store_tenant_isolation),
    TEST(test_store_savepoint_rollback_undoes_one_request),
    TEST(test_store_quarantine_list_and_agents_list),
    TEST(test_store_metrics_snapshot_and_admin_ops),
    TEST(test_store_reads_on_another_connection_see_only_commits),
    TEST(test_store_keys_add_get_revoke),
    TEST(test_store_keys_list_paging_without_material),
    TEST(test_store_sources_and_receipts),
    TEST(test_store_nonce_claim_rejects_replay_until_expiry),
    TEST(test_store_nonce_prune_bounded_batches),
    TEST(test_store_migrate_is_idempotent),
    TEST(test_store_open_rejects_bad_urls),
    TEST(test_store_tail_reports_commits_of_other_connections),
    TEST(test_store_concurrent_publish_cursor_sees_every_seq_once),
    TEST(test_store_events_by_correlation_and_seen),
    TEST(test_store_webhooks_endpoints),
    TEST(test_store_webhooks_failure_run),
    TEST(test_store_webhooks_attempts),
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s BACKEND [TEST_NAME_SUBSTRING]\n", argv[0]);
        return 2;
    }
    g_backend = argv[1];
    if (strncmp(argv[1], "mysql://", 8) == 0) {
        g_backend = "mysql";
        g_base_url = argv[1];
    } else if (strcmp(argv[1], "mysql") == 0) {
        g_base_url = getenv("ROOST_TEST_STORE_URL");
    } else if (strncmp(argv[1], "postgres://", 11) == 0 ||
               strncmp(argv[1], "postgresql://", 13) == 0) {
        g_backend = "postgres";
        g_base_url = argv[1];
    }
    const char *only = argc > 2 ? argv[2] : NULL;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (only != NULL && strstr(tests[i].name, only) == NULL) {
            continue;
        }
        struct fx f;
        int failed_before = check_begin(tests[i].name);
        if (fx_open(&f) != 0) {
            check_fail(__FILE__, __LINE__, "fixture setup failed");
        } else {
            tests[i].fn(&f);
        }
        fx_close(&f);
        check_end(failed_before);
    }
    return check_summary();
}
