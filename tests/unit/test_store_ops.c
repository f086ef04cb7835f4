/* SPDX-License-Identifier: MIT */
/* The store's operations over a fake dialect (no database): the lifecycle's decisions (fencing,
 * the repeated ack, release targets and quarantine at max attempts, the extend cap, retention's
 * deletable prefix) in milliseconds, by the primitives each one calls with what arguments, and
 * the start-up checks of the operations table, dialects and statement descriptors. The same
 * operations against SQLite and MariaDB: tests/store/test_store_conformance.c. */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "harness/check.h"
#include "store/store.h"
#include "store/store_lifecycle.h"
#include "store/store_mysql.h"
#include "store/store_ops.h"
#include "store/store_sql.h"
#include "store/store_sqlite.h"
#include "store/store_stmt.h"

#include "common/banned.h"

#define NOW 1700000000000LL
#define TOKEN "lt_AAAAAAAAAAAAAAAAAAAAAAAAAA"
#define OTHER "lt_BBBBBBBBBBBBBBBBBBBBBBBBBB"

/* The fake: scripted answers, and a log of the primitives and statements called
 * ("name;name;..."). */
struct fake {
    struct store base; /* first */
    char log[1024];
    /* LEASE_FIND */
    bool found;
    struct store_lease_row row;
    /* ACK, RELEASE_UPDATE, EXTEND_UPDATE */
    bool acked, changed;
    /* what RELEASE_UPDATE was asked */
    enum store_status to;
    int64_t available_at;
    int nack;
    int64_t extended_to;
    /* retention */
    struct store_retention_row rows[8];
    size_t n_rows;
    int64_t deleted_through, watermark;
    /* INBOX_PAGE_HEAD: the agent's head and the seqs of the rows visible after the cursor */
    int64_t head;
    int64_t gaps_through; /* the purge mark */
    int64_t page[8];
    size_t n_page;
    const char *answering; /* the statement fk_run runs */
};

static struct fake *F(struct store *st)
{
    return (struct fake *)st;
}

static void logf_(struct store *st, const char *what)
{
    struct fake *f = F(st);
    size_t used = strlen(f->log);
    snprintf(f->log + used, sizeof f->log - used, "%s;", what);
}

static void fk_done(struct store *st)
{
    (void)st;
}

static void fk_set_error(struct store *st, const char *msg)
{
    (void)st;
    (void)msg;
}

/* The change log of a fake with STORE_CAP_CHANGE_LOG. */
static int fk_change_log(struct store *st, const char *t, const char *a, int64_t head,
                         int64_t now_ms)
{
    (void)t;
    (void)a;
    (void)head;
    (void)now_ms;
    logf_(st, "change_log");
    return ROOST_OK;
}

static int fk_retention_begin(struct store *st)
{
    logf_(st, "retention_begin");
    return ROOST_OK;
}

static int fk_retention_end(struct store *st, int rc)
{
    logf_(st, "retention_end");
    return rc;
}

static bool fk_dup_key(struct store *st)
{
    (void)st;
    return false;
}

/* A row of the fake's answers (row->r: which row of the answer): the lease columns of
 * LEASE_FIND (seq, status, lease_token, attempts, claimed_at, claim_expires_at), ACK_AVAILABLE's
 * available_at, RETENTION_AGENTS' one agent (t, a), RETENTION_ROWS' rows. */
static int64_t fr_i64(struct store_row *row, int col)
{
    const struct fake *f = row->src;
    const struct store_lease_row *l = &f->row;
    if (strcmp(f->answering, "ACK_AVAILABLE") == 0) {
        return NOW - 5;
    }
    if (strcmp(f->answering, "AGENT_HEAD") == 0) {
        return col == 0 ? 7 : 0; /* head 7, watermark 0 */
    }
    if (strcmp(f->answering, "INBOX_PAGE_HEAD") == 0) {
        /* head, watermark 0, purge mark, then EVCOLS: seq at column 3 + 2 */
        return col == 0 ? f->head : col == 2 ? f->gaps_through : col == 5 ? f->page[row->r] : 0;
    }
    if (strcmp(f->answering, "SEQ_ALLOC") == 0) {
        return 1; /* the agent's first seq */
    }
    if (strcmp(f->answering, "RETENTION_ROWS") == 0) {
        const struct store_retention_row *r = &f->rows[row->r];
        int64_t cols[] = {r->seq, r->status, r->completed_at_ms, r->created_at_ms};
        return col >= 0 && col < 4 ? cols[col] : 0;
    }
    switch (col) {
    case 0:
        return l->seq;
    case 1:
        return l->status;
    case 3:
        return l->attempts;
    case 4:
        return l->claimed_at_ms;
    case 5:
        return l->claim_expires_at_ms;
    default:
        return 0;
    }
}

static const char *fr_text(struct store_row *row, int col)
{
    const struct fake *f = row->src;
    if (strcmp(f->answering, "RETENTION_AGENTS") == 0) {
        return col == 0 ? "t" : "a";
    }
    if (strcmp(f->answering, "INBOX_PAGE_HEAD") == 0) {
        return col == 3 || col == 4 ? "e" : NULL; /* event_id, agent_id */
    }
    return col == 2 && f->row.lease_token[0] != '\0' ? f->row.lease_token : NULL;
}

/* Records the statement it was asked to run (its descriptor's name) and answers the lease
 * statements from the script: rows, rows changed, and what an update was asked to write. */
static int fk_run(struct store *st, const struct store_stmt *stmt, const struct store_param *p,
                  size_t np, struct store_run_opts *o, store_row_fn on_row, void *arg,
                  int64_t *changed)
{
    struct fake *f = F(st);
    struct store_row row = {.i64 = fr_i64, .text = fr_text, .src = f};
    int64_t n = 0;
    int rc = ROOST_OK;
    (void)o; /* no byte budget or time bound: the fake answers few small rows at once */
    logf_(st, stmt->name);
    if (store_stmt_sql(stmt, st->dialect->sql_col) == NULL) {
        return ROOST_EINTERNAL;
    }
    f->answering = stmt->name;
    if (strcmp(stmt->name, "LEASE_FIND") == 0 && f->found && on_row != NULL) {
        rc = on_row(arg, &row);
    } else if (strcmp(stmt->name, "ACK_AVAILABLE") == 0 && on_row != NULL) {
        rc = on_row(arg, &row);
    } else if (strcmp(stmt->name, "RETENTION_AGENTS") == 0 && np == 3 && p[1].s != NULL &&
               p[1].s[0] == '\0') {
        rc = on_row(arg, &row); /* one agent, then none after it */
    } else if (strcmp(stmt->name, "SEQ_ALLOC") == 0 && on_row != NULL) {
        rc = on_row(arg, &row);
    } else if (strcmp(stmt->name, "SEQ_NEXT") == 0) {
        n = 1; /* the guess holds */
    } else if (strcmp(stmt->name, "AGENT_HEAD") == 0 && on_row != NULL) {
        rc = on_row(arg, &row);
    } else if (strcmp(stmt->name, "INBOX_PAGE_HEAD") == 0 && np == 4) {
        /* the LIMIT (p[3]), as the database would */
        for (row.r = 0; rc == ROOST_OK && row.r < f->n_page && (int64_t)row.r < p[3].i; row.r++) {
            rc = on_row(arg, &row);
        }
        rc = rc == STORE_ROW_STOP ? ROOST_OK : rc;
    } else if (strcmp(stmt->name, "RETENTION_ROWS") == 0 && np == 3) {
        for (row.r = 0; rc == ROOST_OK && row.r < f->n_rows && (int64_t)row.r < p[2].i; row.r++) {
            rc = on_row(arg, &row);
        }
    } else if (strcmp(stmt->name, "RETENTION_DELETE") == 0 && np == 3) {
        f->deleted_through = p[2].i;
    } else if (strcmp(stmt->name, "RETENTION_WATERMARK") == 0 && np == 3) {
        f->watermark = p[0].i;
    } else if (strcmp(stmt->name, "ACK") == 0) {
        n = f->acked;
    } else if (strcmp(stmt->name, "RELEASE_UPDATE") == 0 && np == 8) {
        f->to = (enum store_status)p[0].i;
        f->available_at = p[1].i;
        f->nack = (int)p[2].i;
        n = f->changed;
    } else if (strcmp(stmt->name, "EXTEND_UPDATE") == 0 && np == 5) {
        f->extended_to = p[0].i;
        n = f->changed;
    }
    if (changed != NULL) {
        *changed = n;
    }
    return rc;
}

/* What a statement of several writers handed back: the agent's new next_seq. */
static int64_t fk_insert_id(struct store *st)
{
    (void)st;
    return 5;
}

static const struct store_dialect fake_dialect = {
    .scheme = "fake",
    .sql_col = STORE_SQL_SQLITE,
    .caps = STORE_CAP_SINGLE_WRITER | STORE_CAP_CLAIM_ALL | STORE_CAP_MERGE_PATCH,
    .done = fk_done,
    .set_error = fk_set_error,
    .dup_key = fk_dup_key,
    .run = fk_run,
    .insert_id = fk_insert_id,
    .change_log = fk_change_log,
    .retention_begin = fk_retention_begin,
    .retention_end = fk_retention_end,
};

static void fake_init(struct fake *f)
{
    memset(f, 0, sizeof *f);
    f->base.ops = &store_ops_table;
    f->base.dialect = &fake_dialect;
}

static void claimed(struct fake *f, const char *token, int attempts)
{
    f->found = true;
    f->row.seq = 3;
    f->row.status = STORE_CLAIMED;
    snprintf(f->row.lease_token, sizeof f->row.lease_token, "%s", token);
    f->row.attempts = attempts;
    f->row.claimed_at_ms = NOW - 10000;
    f->row.claim_expires_at_ms = NOW + 20000;
}

static void test_store_ops_ack_fencing_and_repeat(void)
{
    struct fake f;
    struct store *st = &f.base;
    int64_t avail = -1;
    /* The update completed it: one statement, its available_at handed back. */
    fake_init(&f);
    f.acked = true;
    CHECK_EQ(store_call(st, ack, "t", "a", "evt_1", TOKEN, NOW, &avail), ROOST_OK);
    CHECK_STREQ(f.log, "ACK;ACK_AVAILABLE;");
    CHECK_EQ(avail, NOW - 5);
    /* Nothing changed, the row completed under this token: a repeated ack is OK. */
    fake_init(&f);
    claimed(&f, TOKEN, 1);
    f.row.status = STORE_COMPLETED;
    CHECK_EQ(store_call(st, ack, "t", "a", "evt_1", TOKEN, NOW, &avail), ROOST_OK);
    CHECK_STREQ(f.log, "ACK;LEASE_FIND;");
    CHECK_EQ(avail, 0);
    /* ...under another token: a mismatch; a still claimed row under another token too. */
    CHECK_EQ(store_call(st, ack, "t", "a", "evt_1", OTHER, NOW, NULL), ROOST_ELEASEMISMATCH);
    f.row.status = STORE_CLAIMED;
    CHECK_EQ(store_call(st, ack, "t", "a", "evt_1", OTHER, NOW, NULL), ROOST_ELEASEMISMATCH);
    /* No such event. */
    f.found = false;
    CHECK_EQ(store_call(st, ack, "t", "a", "evt_1", TOKEN, NOW, NULL), ROOST_EEVENTNOTFOUND);
}

static void test_store_ops_release_targets_and_quarantine(void)
{
    struct fake f;
    struct store *st = &f.base;
    struct store_touches touches = {0};
    enum store_status to;
    /* Transient, attempts left: pending now, one nack, the agent touched. */
    fake_init(&f);
    claimed(&f, TOKEN, 1);
    f.changed = true;
    CHECK_EQ(store_call(st, release, "t", "a", "evt_1", TOKEN, STORE_RELEASE_TRANSIENT, 0, "x", 3,
                        NOW, &touches, &to),
             ROOST_OK);
    CHECK_EQ(to, STORE_PENDING);
    CHECK_EQ(f.to, STORE_PENDING);
    CHECK_EQ(f.available_at, NOW);
    CHECK_EQ(f.nack, 1);
    CHECK_STREQ(f.log, "LEASE_FIND;RELEASE_UPDATE;AGENT_HEAD;");
    CHECK(touches.len == 1 && touches.items[0].head == 7);
    store_touches_cleanup(&touches);
    /* With a change log the agent is touched (its row written) even without a touch set. */
    static struct store_dialect logged;
    logged = fake_dialect;
    logged.caps |= STORE_CAP_CHANGE_LOG;
    fake_init(&f);
    f.base.dialect = &logged;
    claimed(&f, TOKEN, 1);
    f.changed = true;
    CHECK_EQ(store_call(st, release, "t", "a", "evt_1", TOKEN, STORE_RELEASE_TRANSIENT, 0, "x", 3,
                        NOW, NULL, &to),
             ROOST_OK);
    CHECK_STREQ(f.log, "LEASE_FIND;RELEASE_UPDATE;AGENT_HEAD;change_log;");
    fake_init(&f);
    claimed(&f, TOKEN, 1);
    f.changed = true;
    /* Transient with a delay: scheduled at now + delay, nobody touched. */
    f.log[0] = '\0';
    CHECK_EQ(store_call(st, release, "t", "a", "evt_1", TOKEN, STORE_RELEASE_TRANSIENT, 30, NULL, 3,
                        NOW, &touches, &to),
             ROOST_OK);
    CHECK(to == STORE_SCHEDULED && f.available_at == NOW + 30000);
    CHECK_STREQ(f.log, "LEASE_FIND;RELEASE_UPDATE;");
    /* Transient at max attempts: quarantined; a shutdown at max attempts counts nothing and is
     * not quarantined; poison quarantines at once. */
    claimed(&f, TOKEN, 3);
    CHECK_EQ(store_call(st, release, "t", "a", "evt_1", TOKEN, STORE_RELEASE_TRANSIENT, 0, NULL, 3,
                        NOW, NULL, &to),
             ROOST_OK);
    CHECK(to == STORE_QUARANTINED && f.nack == 1);
    CHECK_EQ(store_call(st, release, "t", "a", "evt_1", TOKEN, STORE_RELEASE_SHUTDOWN, 0, NULL, 3,
                        NOW, NULL, &to),
             ROOST_OK);
    CHECK(to == STORE_PENDING && f.nack == 0);
    claimed(&f, TOKEN, 1);
    CHECK_EQ(store_call(st, release, "t", "a", "evt_1", TOKEN, STORE_RELEASE_POISON, 0, NULL, 0,
                        NOW, NULL, &to),
             ROOST_OK);
    CHECK_EQ(to, STORE_QUARANTINED);
    /* max_attempts 0: never quarantined by attempts. */
    claimed(&f, TOKEN, 99);
    CHECK_EQ(store_call(st, release, "t", "a", "evt_1", TOKEN, STORE_RELEASE_TRANSIENT, 0, NULL, 0,
                        NOW, NULL, &to),
             ROOST_OK);
    CHECK_EQ(to, STORE_PENDING);
    /* Fencing: another token, or the lease moved on under the update: a mismatch, and a stale
     * token never reaches the update. */
    f.log[0] = '\0';
    CHECK_EQ(store_call(st, release, "t", "a", "evt_1", OTHER, STORE_RELEASE_TRANSIENT, 0, NULL, 3,
                        NOW, NULL, NULL),
             ROOST_ELEASEMISMATCH);
    CHECK_STREQ(f.log, "LEASE_FIND;");
    f.changed = false;
    CHECK_EQ(store_call(st, release, "t", "a", "evt_1", TOKEN, STORE_RELEASE_TRANSIENT, 0, NULL, 3,
                        NOW, NULL, NULL),
             ROOST_ELEASEMISMATCH);
}

static void test_store_ops_extend_cap(void)
{
    struct fake f;
    struct store *st = &f.base;
    int64_t exp = 0;
    fake_init(&f);
    claimed(&f, TOKEN, 1); /* claimed 10 s ago, expires in 20 s */
    f.changed = true;
    CHECK_EQ(store_call(st, extend, "t", "a", "evt_1", TOKEN, 60, 3600, NOW, &exp), ROOST_OK);
    CHECK(exp == NOW + 60000 && f.extended_to == NOW + 60000);
    /* Capped at claimed_at + max_total_s. */
    CHECK_EQ(store_call(st, extend, "t", "a", "evt_1", TOKEN, 60, 40, NOW, &exp), ROOST_OK);
    CHECK_EQ(exp, NOW - 10000 + 40000);
    /* A cap that does not move the expiry forward: ROOST_ELEASECAP, no update. */
    f.log[0] = '\0';
    CHECK_EQ(store_call(st, extend, "t", "a", "evt_1", TOKEN, 60, 30, NOW, &exp), ROOST_ELEASECAP);
    CHECK_STREQ(f.log, "LEASE_FIND;");
    CHECK_EQ(exp, NOW + 20000);
    /* An expired lease is a mismatch. */
    f.row.claim_expires_at_ms = NOW;
    CHECK_EQ(store_call(st, extend, "t", "a", "evt_1", TOKEN, 60, 3600, NOW, &exp),
             ROOST_ELEASEMISMATCH);
}

static void test_store_ops_retention_deletes_the_prefix(void)
{
    struct fake f;
    struct store *st = &f.base;
    struct store_retention_result res;
    struct store_retention_req req = {
        .now_ms = NOW, .completed_s = 60, .max_age_s = 0, .batch = 100};
    fake_init(&f);
    /* seq 1, 2 completed long ago; 3 pending (stays); 4 completed long ago (after the gap). */
    struct store_retention_row rows[] = {
        {1, STORE_COMPLETED, NOW - 120000, NOW - 200000},
        {2, STORE_EXPIRED, NOW - 61000, NOW - 200000},
        {3, STORE_PENDING, 0, NOW - 200000},
        {4, STORE_COMPLETED, NOW - 120000, NOW - 200000},
    };
    memcpy(f.rows, rows, sizeof rows);
    f.n_rows = 4;
    CHECK_EQ(store_call(st, retention, &req, &res), ROOST_OK);
    CHECK(res.deleted == 2 && !res.more);
    CHECK(f.deleted_through == 2 && f.watermark == 2);
    CHECK_STREQ(f.log, "retention_begin;RETENTION_AGENTS;RETENTION_ROWS;RETENTION_DELETE;"
                       "RETENTION_WATERMARK;retention_end;");
    /* Several writers with a change log: the log's old rows are pruned in the pass too (the
     * agent's lock, SKIP LOCKED, answers no row from the fake: another node has it). */
    static struct store_dialect logged;
    logged = fake_dialect;
    logged.sql_col = STORE_SQL_MYSQL;
    logged.caps = STORE_CAP_CHANGE_LOG | STORE_CAP_CLAIM_ALL;
    fake_init(&f);
    f.base.dialect = &logged;
    memcpy(f.rows, rows, sizeof rows);
    f.n_rows = 4;
    CHECK_EQ(store_call(st, retention, &req, &res), ROOST_OK);
    CHECK_STREQ(f.log, "retention_begin;CHANGES_OLD;CHANGES_PRUNE;RETENTION_AGENTS;RETENTION_LOCK;"
                       "retention_end;");
    /* A first row that must stay: nothing deleted, the watermark untouched. */
    fake_init(&f);
    struct store_retention_row stay[] = {
        {1, STORE_PENDING, 0, NOW - 200000},
        {2, STORE_COMPLETED, NOW - 120000, NOW - 200000},
    };
    memcpy(f.rows, stay, sizeof stay);
    f.n_rows = 2;
    CHECK_EQ(store_call(st, retention, &req, &res), ROOST_OK);
    CHECK(res.deleted == 0 && f.deleted_through == 0 && f.watermark == 0);
    /* max_age_s: an old pending row goes too. */
    req.max_age_s = 100;
    CHECK_EQ(store_call(st, retention, &req, &res), ROOST_OK);
    CHECK(res.deleted == 2 && f.deleted_through == 2 && f.watermark == 2);
    /* The batch bounds the rows read: a full batch says there is more. */
    req.batch = 1;
    CHECK_EQ(store_call(st, retention, &req, &res), ROOST_OK);
    CHECK(res.deleted == 1 && res.more && f.deleted_through == 1);
}

static int publish1(struct store *st, const char *agent, const char *patch,
                    struct store_published *out)
{
    const char *r[] = {agent};
    struct store_publish_item it = {
        .recipients = r, .n_recipients = 1, .payload = "{}", .state_patch = patch};
    struct store_publish_req req = {.tenant_id = "t", .items = &it, .n_items = 1, .now_ms = NOW};
    return store_call(st, publish, &req, out, NULL);
}

/* The publish's shape follows the dialect's capabilities: one writer ensures the tenant every
 * time and takes the agent's seq from its guess once it has one; where statements are round
 * trips the tenant is read once per connection and the seq and the row travel together. */
static void test_store_ops_publish_follows_capabilities(void)
{
    struct fake f;
    struct store *st = &f.base;
    struct store_published out;
    fake_init(&f);
    CHECK_EQ(publish1(st, "a", NULL, &out), ROOST_OK);
    CHECK_STREQ(f.log, "TENANT_ENSURE;SEQ_ALLOC;INBOX_INSERT;");
    CHECK_EQ(out.seq, 1);
    f.log[0] = '\0';
    CHECK_EQ(publish1(st, "a", "{\"k\":1}", &out), ROOST_OK);
    CHECK_STREQ(f.log, "TENANT_ENSURE;SEQ_NEXT;INBOX_INSERT;STATE_MERGE;");
    CHECK_EQ(out.seq, 2);

    static struct store_dialect trips;
    trips = fake_dialect;
    trips.sql_col = STORE_SQL_PG;
    trips.caps = STORE_CAP_ROUND_TRIP | STORE_CAP_INSERT_ID | STORE_CAP_CLAIM_ALL;
    fake_init(&f);
    f.base.dialect = &trips;
    /* The tenant is not found by the fake: it is inserted, and read again next time. */
    CHECK_EQ(publish1(st, "a", NULL, &out), ROOST_OK);
    CHECK_STREQ(f.log, "TENANT_FIND;TENANT_ENSURE;SEQ_INSERT;");
    CHECK_EQ(out.seq, 4);
    /* Merged in C without STORE_CAP_MERGE_PATCH: read, then written. */
    f.log[0] = '\0';
    CHECK_EQ(publish1(st, "a", "{\"k\":1}", &out), ROOST_OK);
    CHECK_STREQ(f.log, "TENANT_FIND;TENANT_ENSURE;SEQ_INSERT;STATE_READ;STATE_WRITE;");
}

/* A written-once read runs its own descriptor through the dialect's statement cache. */
static void test_store_ops_reads_run_their_statements(void)
{
    struct fake f;
    struct store *st = &f.base;
    struct store_event ev;
    bool found = true;
    fake_init(&f);
    CHECK_EQ(store_call(st, inbox_peek, "t", "a", NOW, &ev, &found), ROOST_OK);
    CHECK(!found);
    CHECK_STREQ(f.log, "INBOX_PEEK;");
    size_t count = 9;
    f.log[0] = '\0';
    CHECK_EQ(store_call(st, nonce_prune, NOW, 10, &count), ROOST_OK);
    CHECK_EQ(count, 0);
    CHECK_STREQ(f.log, "NONCE_PRUNE;");
}

/* The inbox page of a dialect without a snapshot across statements: head and rows from one
 * statement. Where commits can show out of seq order (STORE_CAP_LATE_VISIBILITY) the page stops
 * at the first missing seq above the purge mark and the head is capped below it; elsewhere a gap
 * is just a gap (a purged quarantined event). */
static void test_store_ops_inbox_page_stops_at_a_hole(void)
{
    static struct store_dialect late;
    late = fake_dialect;
    late.caps |= STORE_CAP_LATE_VISIBILITY;
    struct fake f;
    struct store *st = &f.base;
    struct store_inbox_page page;

    fake_init(&f);
    f.base.dialect = &late;
    f.head = 4;
    f.n_page = 3;
    f.page[0] = 1, f.page[1] = 2, f.page[2] = 4; /* seq 3 committed but not visible yet */
    memset(&page, 0, sizeof page);
    CHECK_EQ(store_call(st, inbox_read, "t", "a", 0, 10, 0, &page), ROOST_OK);
    CHECK_STREQ(f.log, "INBOX_PAGE_HEAD;");
    CHECK_EQ(page.events.len, 2);
    CHECK_EQ(page.next_cursor, 2);
    CHECK_EQ(page.head, 2);
    CHECK(!page.has_more);
    store_events_cleanup(&page.events);

    /* Dense rows, fewer than the head promises: the head is capped at the last one seen. */
    fake_init(&f);
    f.base.dialect = &late;
    f.head = 5;
    f.n_page = 2;
    f.page[0] = 1, f.page[1] = 2;
    memset(&page, 0, sizeof page);
    CHECK_EQ(store_call(st, inbox_read, "t", "a", 0, 10, 0, &page), ROOST_OK);
    CHECK_EQ(page.events.len, 2);
    CHECK_EQ(page.head, 2);
    store_events_cleanup(&page.events);

    /* A full page: has_more, the head stands. */
    fake_init(&f);
    f.base.dialect = &late;
    f.head = 4;
    f.n_page = 3;
    f.page[0] = 1, f.page[1] = 2, f.page[2] = 3;
    memset(&page, 0, sizeof page);
    CHECK_EQ(store_call(st, inbox_read, "t", "a", 0, 2, 0, &page), ROOST_OK);
    CHECK_EQ(page.events.len, 2);
    CHECK(page.has_more);
    CHECK_EQ(page.head, 4);
    store_events_cleanup(&page.events);

    /* Gaps at or below the purge mark are purged events: passed over, up to the mark only. */
    fake_init(&f);
    f.base.dialect = &late;
    f.head = 6;
    f.gaps_through = 3;
    f.n_page = 3;
    f.page[0] = 1, f.page[1] = 4, f.page[2] = 6; /* 2 and 3 purged, 5 not visible yet */
    memset(&page, 0, sizeof page);
    CHECK_EQ(store_call(st, inbox_read, "t", "a", 0, 10, 0, &page), ROOST_OK);
    CHECK_EQ(page.events.len, 2);
    CHECK_EQ(page.next_cursor, 4);
    CHECK_EQ(page.head, 4);
    store_events_cleanup(&page.events);
    /* The last seqs purged: the head stands over them. */
    f.head = 3;
    f.n_page = 1;
    memset(&page, 0, sizeof page);
    CHECK_EQ(store_call(st, inbox_read, "t", "a", 0, 10, 0, &page), ROOST_OK);
    CHECK_EQ(page.events.len, 1);
    CHECK_EQ(page.next_cursor, 1);
    CHECK_EQ(page.head, 3);
    store_events_cleanup(&page.events);

    /* Without the capability the gap is kept. */
    fake_init(&f);
    f.head = 4;
    f.n_page = 3;
    f.page[0] = 1, f.page[1] = 2, f.page[2] = 4;
    memset(&page, 0, sizeof page);
    CHECK_EQ(store_call(st, inbox_read, "t", "a", 0, 10, 0, &page), ROOST_OK);
    CHECK_EQ(page.events.len, 3);
    CHECK_EQ(page.next_cursor, 4);
    CHECK_EQ(page.head, 4);
    store_events_cleanup(&page.events);
}

/* The start-up checks: complete as shipped, and each fails on a hole. */
static void test_store_ops_completeness_checks(void)
{
    CHECK_EQ(store_ops_missing(&store_ops_table), -1);
    CHECK(store_dialect_missing(&store_sqlite_dialect) == NULL);
    CHECK(store_dialect_missing(&store_mysql_dialect) == NULL);
    struct store_ops ops = store_ops_table;
    ops.inbox_peek = NULL;
    CHECK_EQ(store_ops_missing(&ops),
             (long)(offsetof(struct store_ops, inbox_peek) / sizeof(ops.inbox_peek)));
    ops = store_ops_table;
    ops.tail = NULL;
    CHECK(store_ops_missing(&ops) >= 0);
    struct store_dialect d = store_sqlite_dialect;
    d.run = NULL;
    CHECK_STREQ(store_dialect_missing(&d), "run");
    d = store_mysql_dialect;
    d.tail = NULL; /* a change log without a tailer */
    CHECK_STREQ(store_dialect_missing(&d), "tail");
    d = store_sqlite_dialect;
    d.read_end = NULL; /* a snapshot that would never end */
    CHECK_STREQ(store_dialect_missing(&d), "read_end");

    /* A statement without SQL for a dialect fails where it would run. */
    static const struct store_stmt holed = {.name = "HOLED",
                                            .sql = {[STORE_SQL_SQLITE] = "SELECT 1"}};
    CHECK(store_stmt_sql(&holed, STORE_SQL_SQLITE) != NULL);
    CHECK(store_stmt_sql(&holed, STORE_SQL_MYSQL) == NULL);
    static const struct store_stmt empty = {.name = "EMPTY", .sql = {"", "SELECT 1"}};
    CHECK(store_stmt_sql(&empty, STORE_SQL_SQLITE) == NULL);
    struct fake f;
    fake_init(&f);
    CHECK_EQ(f.base.dialect->run(&f.base, &empty, NULL, 0, NULL, NULL, NULL, NULL),
             ROOST_EINTERNAL);

    /* Capabilities, asked by URL before anything is open. */
    CHECK(store_url_has("sqlite:///tmp/x.db", STORE_CAP_SINGLE_WRITER));
    CHECK(!store_url_has("sqlite:///tmp/x.db", STORE_CAP_CHANGE_LOG));
    CHECK(store_url_has("mysql://u:p@h:3306/db", STORE_CAP_CHANGE_LOG));
    CHECK(!store_url_has("mysql://u:p@h:3306/db", STORE_CAP_SINGLE_WRITER));
    CHECK(!store_url_has("nosuch://x", 0));
}

int main(void)
{
    RUN(test_store_ops_ack_fencing_and_repeat);
    RUN(test_store_ops_release_targets_and_quarantine);
    RUN(test_store_ops_extend_cap);
    RUN(test_store_ops_retention_deletes_the_prefix);
    RUN(test_store_ops_publish_follows_capabilities);
    RUN(test_store_ops_reads_run_their_statements);
    RUN(test_store_ops_inbox_page_stops_at_a_hole);
    RUN(test_store_ops_completeness_checks);
    return check_summary();
}
