/* SPDX-License-Identifier: MIT */
/* The MySQL/MariaDB dialect (struct store_dialect): its facts and capabilities, the driver's
 * statements (the change log, migrations, the tailer's reads), and the writes of a batch whose
 * shape depends on its rows, built as text so each goes out in one round trip (insert_rows,
 * claim_update_all, ack_rows). Every other operation's SQL is in its subject file (store_ops.h),
 * MySQL's column beside the others. The connection, statement cache, reconnects and transactions
 * are in store_mysql_conn.c. */
#include "store/store_mysql.h"
#include "store/store_mysql_int.h"

#include <mysqld_error.h>

#include "store/store_lifecycle.h"
#include "store/store_ops.h"
#include "store/store_sql.h"

#include "common/banned.h"

const char *const store_mysql_sql[S_COUNT] = {
    /* tenant, agent, head, now, origin */
    [S_CHANGE] = "INSERT INTO roost_changes (tenant_id, agent_id, head, at_ms, origin)"
                 " VALUES (?, ?, ?, ?, ?)",
    /* version */
    [S_MIG_CHECK] = "SELECT 1 FROM schema_migrations WHERE version = ?",
    /* version, name */
    [S_MIG_RECORD] = "INSERT INTO schema_migrations (version, name, applied_at)"
                     " VALUES (?, ?, CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED))",
};

/* ---- the dialect: the statements of each primitive (store_lifecycle.h) ---- */

static void my_error_set(struct store *st, const char *msg)
{
    struct mysql_store *b = store_mysql_backend(st);
    snprintf(b->err, sizeof b->err, "%s", msg);
}

/* Records the change for the tailers of every node (written with this transaction's COMMIT). */
static int my_change_log(struct store *st, const char *tenant_id, const char *agent_id,
                         int64_t head, int64_t now_ms)
{
    return store_mysql_change(store_mysql_backend(st), tenant_id, agent_id, head, now_ms);
}

/* Appends an integer, or NULL for 0 ("none", as expires_at). */
static void sb_int_or_null(struct dynbuf *sb, int64_t v)
{
    if (v != 0) {
        dynbuf_addf(sb, "%lld", (long long)v);
    } else {
        dynbuf_adds(sb, "NULL");
    }
}

static bool same_agent(const struct store_new_row *a, const struct store_new_row *b)
{
    return strcmp(a->tenant_id, b->tenant_id) == 0 && strcmp(a->agent_id, b->agent_id) == 0;
}

static int by_event_cmp(const void *a, const void *b)
{
    return strcmp((*(struct store_new_row *const *)a)->event_id,
                  (*(struct store_new_row *const *)b)->event_id);
}

/* MariaDB has sent INSERT … RETURNING's rows in the order of the VALUES, but its documentation
 * does not promise that order: each answer is matched at its own position, else by a search of
 * the rows sorted by event id. */
int store_mysql_returned_seqs(struct store_new_row *rows, size_t n, const struct rows *rs,
                              char *err, size_t errlen)
{
    struct store_new_row **order = NULL; /* the rows sorted by event id, made at the first miss */
    int rc = ROOST_OK;
    for (size_t r = 0; r < n; r++) {
        rows[r].seq = 0;
    }
    for (size_t r = 0; rc == ROOST_OK && r < rs->n; r++) {
        const char *ev = cell(rs, r, 0);
        struct store_new_row *row = r < n ? &rows[r] : NULL;
        if (ev != NULL && row != NULL && strcmp(ev, row->event_id) != 0) {
            if (order == NULL && (order = malloc(n * sizeof *order)) != NULL) {
                for (size_t k = 0; k < n; k++) {
                    order[k] = &rows[k];
                }
                qsort(order, n, sizeof *order, by_event_cmp);
            }
            if (order == NULL) {
                rc = ROOST_ENOMEM;
                break;
            }
            struct store_new_row key = {.event_id = ev}, *kp = &key;
            struct store_new_row **hit = bsearch(&kp, order, n, sizeof *order, by_event_cmp);
            row = hit != NULL ? *hit : NULL;
        }
        int64_t seq = cell_i64(rs, r, 1);
        if (ev == NULL || row == NULL || row->seq != 0 || seq < 1) {
            snprintf(err, errlen, "publish: the batch's insert returned another row");
            rc = ROOST_ESTORE;
            break;
        }
        row->seq = seq;
    }
    free(order);
    return rc;
}

#define INBOX_INSERT                                                                               \
    "INSERT INTO inbox (tenant_id, agent_id, seq, event_id, status, priority, correlation_id,"     \
    " idempotency_key, payload, created_at, available_at, expires_at) VALUES "

/* One row's values for INBOX_INSERT, its seq the SQL expression `seq`. */
static void sb_inbox_values(struct dynbuf *sb, struct mysql_store *b,
                            const struct store_new_row *row, const char *seq)
{
    dynbuf_adds(sb, "(");
    store_mysql_sb_quoted(sb, b, row->tenant_id);
    dynbuf_adds(sb, ", ");
    store_mysql_sb_quoted(sb, b, row->agent_id);
    dynbuf_addf(sb, ", %s, ", seq);
    store_mysql_sb_quoted(sb, b, row->event_id);
    dynbuf_addf(sb, ", %d, %d, ", (int)row->status, row->priority);
    store_mysql_sb_text(sb, b, row->correlation_id);
    dynbuf_adds(sb, ", ");
    store_mysql_sb_text(sb, b, row->idempotency_key);
    dynbuf_adds(sb, ", ");
    store_mysql_sb_text(sb, b, row->payload);
    dynbuf_addf(sb, ", %lld, %lld, ", (long long)row->created_at_ms,
                (long long)row->available_at_ms);
    sb_int_or_null(sb, row->expires_at_ms);
    dynbuf_adds(sb, ")");
}

/* A batch's rows in one round trip of two statements:
 *
 *     INSERT INTO agents … VALUES ('t', 'a', (@roost_s0 := 1 + 2), …), ('t', 'b', …)
 *         ON DUPLICATE KEY UPDATE next_seq = CASE WHEN tenant_id = 't' AND agent_id = 'a'
 *         THEN (@roost_s0 := next_seq + 2) WHEN … END, updated_at = VALUES(updated_at);
 *     INSERT INTO inbox … VALUES ('t', 'a', @roost_s0 - 2, …), ('t', 'a', @roost_s0 - 1, …), …
 *         RETURNING event_id, seq
 *
 * The upsert locks the agents in the order listed (sorted: DESIGN §4.2) and moves each next_seq
 * past its k new rows, leaving the new next_seq in a session variable, so agent i's rows take
 * @roost_si - k … @roost_si - 1 under its row lock, as SEQ_INSERT does for one row. The insert
 * hands each row's seq back with its event id (MariaDB's INSERT … RETURNING), where a third
 * statement used to read the variables. */
static int my_insert_rows(struct store *st, struct store_new_row *rows, size_t n, int64_t now_ms)
{
    struct mysql_store *b = store_mysql_backend(st);
    int rc;
    struct dynbuf sb = {.max = STORE_MYSQL_SQL_MAX}, odku = {.max = STORE_MYSQL_SQL_MAX};
    dynbuf_adds(&sb, "INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)"
                     " VALUES ");
    dynbuf_adds(&odku, " ON DUPLICATE KEY UPDATE next_seq = CASE");
    size_t n_agents = 0;
    for (size_t r = 0; r < n;) {
        size_t k = 1;
        while (r + k < n && same_agent(&rows[r], &rows[r + k])) {
            k++;
        }
        dynbuf_adds(&sb, n_agents > 0 ? ", (" : "(");
        store_mysql_sb_quoted(&sb, b, rows[r].tenant_id);
        dynbuf_adds(&sb, ", ");
        store_mysql_sb_quoted(&sb, b, rows[r].agent_id);
        dynbuf_addf(&sb, ", (@roost_s%zu := %zu), %lld, %lld)", n_agents, k + 1, (long long)now_ms,
                    (long long)now_ms);
        dynbuf_adds(&odku, " WHEN tenant_id = ");
        store_mysql_sb_quoted(&odku, b, rows[r].tenant_id);
        dynbuf_adds(&odku, " AND agent_id = ");
        store_mysql_sb_quoted(&odku, b, rows[r].agent_id);
        dynbuf_addf(&odku, " THEN (@roost_s%zu := next_seq + %zu)", n_agents, k);
        r += k;
        n_agents++;
    }
    dynbuf_adds(&odku, " END, updated_at = VALUES(updated_at); ");
    dynbuf_add(&sb, odku.s, odku.len);
    dynbuf_adds(&sb, INBOX_INSERT);
    size_t agent = 0, k = 0, j = 0;
    for (size_t r = 0; r < n; r++) {
        if (r > 0 && same_agent(&rows[r - 1], &rows[r])) {
            j++;
        } else {
            agent = r > 0 ? agent + 1 : 0;
            for (k = 1, j = 0; r + k < n && same_agent(&rows[r], &rows[r + k]);) {
                k++;
            }
        }
        char seq[64];
        snprintf(seq, sizeof seq, "@roost_s%zu - %zu", agent, k - j);
        dynbuf_adds(&sb, r > 0 ? ", " : "");
        sb_inbox_values(&sb, b, &rows[r], seq);
    }
    dynbuf_adds(&sb, " RETURNING event_id, seq");
    struct rows rs = {0};
    rc = odku.err != DYNBUF_OK ? ROOST_ENOMEM : store_mysql_exec_sb_rows(b, &sb, &rs);
    dynbuf_cleanup(&sb);
    dynbuf_cleanup(&odku);
    if (rc == ROOST_OK && (rs.n != n || rs.cols != 2)) {
        /* The round trip ended without its last answer and without an error: on Galera, a
         * transaction aborted while a statement ran (doc/MYSQL.md). Nothing of it can be
         * trusted: the group rolls back and replays (503 if it never gets through). */
        snprintf(b->err, sizeof b->err, "publish: the batch's seqs came back as %zu×%zu", rs.n,
                 rs.cols);
        rc = ROOST_ERETRY;
    }
    rc = rc == ROOST_OK ? store_mysql_returned_seqs(rows, n, &rs, b->err, sizeof b->err) : rc;
    /* One agent's rows took consecutive seqs from 1 on, in the order given. */
    for (size_t r = 0; rc == ROOST_OK && r < n; r++) {
        bool next = r > 0 && same_agent(&rows[r - 1], &rows[r]);
        if (rows[r].seq < 1 || (next && rows[r].seq != rows[r - 1].seq + 1)) {
            snprintf(b->err, sizeof b->err, "publish: sequence allocation returned %lld",
                     (long long)rows[r].seq);
            rc = ROOST_ESTORE;
        }
    }
    rows_free(&rs);
    return rc;
}

/* A lone publish's row with the COMMIT (insert_row_late): the agent's seq upsert, the row and
 * its change-log row go first in the COMMIT's query (mysql_store.late):
 *
 *     INSERT INTO agents … VALUES ('t', 'a', LAST_INSERT_ID(2), …) ON DUPLICATE KEY UPDATE
 *         next_seq = LAST_INSERT_ID(next_seq + 1), …;
 *     INSERT INTO inbox … VALUES ('t', 'a', LAST_INSERT_ID() - 1, …);
 *     INSERT INTO roost_changes … VALUES ('t', 'a', LAST_INSERT_ID() - 1, …); marker; COMMIT
 *
 * so the whole publish is one round trip. The seq is allocated under the agent's row lock as
 * SEQ_INSERT does (roost_changes' own AUTO_INCREMENT id moves LAST_INSERT_ID() only once its
 * INSERT is done), and the upsert's answer hands it back (mysql_store.late_row). Galera's
 * transactions keep their shape (its marker goes first and the change log is checked there). */
static int my_insert_row_late(struct store *st, const struct store_new_row *row, int64_t now_ms,
                              int64_t *seq, struct store_touches *touches, bool *queued)
{
    struct mysql_store *b = store_mysql_backend(st);
    struct store_mysql_late_row *late = &b->late_row;
    *queued = false;
    if (b->tx_marker[0] != '\0' || late->seq != NULL || b->late_n > 0) {
        return ROOST_OK;
    }
    /* Reserved now (head 0), so that answering it after the COMMIT allocates nothing. */
    int rc = store_touches_add(touches, row->tenant_id, row->agent_id, 0);
    if (rc != ROOST_OK) {
        return rc;
    }
    struct dynbuf *sb = &b->late;
    dynbuf_adds(sb, "INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)"
                    " VALUES (");
    store_mysql_sb_quoted(sb, b, row->tenant_id);
    dynbuf_adds(sb, ", ");
    store_mysql_sb_quoted(sb, b, row->agent_id);
    dynbuf_addf(sb,
                ", LAST_INSERT_ID(2), %lld, %lld) ON DUPLICATE KEY UPDATE next_seq ="
                " LAST_INSERT_ID(next_seq + 1), updated_at = VALUES(updated_at); " INBOX_INSERT,
                (long long)now_ms, (long long)now_ms);
    sb_inbox_values(sb, b, row, "LAST_INSERT_ID() - 1");
    struct store_change change = {.head = 0, .at_ms = now_ms};
    snprintf(change.tenant_id, sizeof change.tenant_id, "%s", row->tenant_id);
    snprintf(change.agent_id, sizeof change.agent_id, "%s", row->agent_id);
    dynbuf_adds(sb, "; ");
    store_changes_sql(sb, &change, 1, b->origin, "LAST_INSERT_ID() - 1", store_mysql_quote_cb, b);
    if (sb->err != DYNBUF_OK) {
        dynbuf_reset(sb);
        return ROOST_ENOMEM;
    }
    b->late_n += 3;
    *late = (struct store_mysql_late_row){.seq = seq, .touches = touches};
    snprintf(late->event_id, sizeof late->event_id, "%s", row->event_id);
    snprintf(late->tenant_id, sizeof late->tenant_id, "%s", row->tenant_id);
    snprintf(late->agent_id, sizeof late->agent_id, "%s", row->agent_id);
    *queued = true;
    return ROOST_OK;
}

/* The batch's rows read and locked, then completed, in one round trip:
 *
 *     SELECT … FROM inbox WHERE event_id IN (…) FOR UPDATE;
 *     UPDATE inbox SET status = completed, … WHERE event_id IN (…) AND status = claimed
 *         AND (event_id, tenant_id, agent_id, lease_token) IN ((…), …)
 *
 * Both walk the unique index on event_id; the read's locks make the update complete exactly the
 * rows the read showed claimed under their entry's token. */
static int my_ack_rows(struct store *st, const struct store_ack_entry *acks, size_t n,
                       int64_t now_ms, struct store_lease_row *rows, int64_t *avail, bool *found,
                       size_t *completed)
{
    struct mysql_store *b = store_mysql_backend(st);
    struct dynbuf ids = {.max = STORE_MYSQL_SQL_MAX}, sb = {.max = STORE_MYSQL_SQL_MAX};
    for (size_t i = 0; i < n; i++) {
        dynbuf_adds(&ids, i > 0 ? ", " : "");
        store_mysql_sb_quoted(&ids, b, acks[i].event_id);
    }
    dynbuf_adds(&sb, "SELECT event_id, tenant_id, agent_id, seq, status, lease_token, attempts,"
                     " claimed_at, claim_expires_at, available_at FROM inbox WHERE event_id IN (");
    dynbuf_add(&sb, ids.s, ids.len);
    dynbuf_addf(&sb,
                ") FOR UPDATE; UPDATE inbox SET status = " ST_COMPLETED ", payload = NULL,"
                " completed_at = %lld WHERE event_id IN (",
                (long long)now_ms);
    dynbuf_add(&sb, ids.s, ids.len);
    dynbuf_adds(&sb, ") AND status = " ST_CLAIMED
                     " AND (event_id, tenant_id, agent_id, lease_token) IN (");
    for (size_t i = 0; i < n; i++) {
        dynbuf_adds(&sb, i > 0 ? ", (" : "(");
        store_mysql_sb_quoted(&sb, b, acks[i].event_id);
        dynbuf_adds(&sb, ", ");
        store_mysql_sb_quoted(&sb, b, acks[i].tenant_id);
        dynbuf_adds(&sb, ", ");
        store_mysql_sb_quoted(&sb, b, acks[i].agent_id);
        dynbuf_adds(&sb, ", ");
        store_mysql_sb_quoted(&sb, b, acks[i].lease_token != NULL ? acks[i].lease_token : "");
        dynbuf_adds(&sb, ")");
    }
    dynbuf_adds(&sb, ")");
    struct rows rs = {0};
    /* Run twice, the second finds the rows completed under their tokens: repeated acks. */
    int rc = ids.err != DYNBUF_OK ? ROOST_ENOMEM : store_mysql_exec_sb_rerun(b, &sb, &rs);
    dynbuf_cleanup(&ids);
    dynbuf_cleanup(&sb);
    *completed = rc == ROOST_OK ? (size_t)b->affected : 0;
    for (size_t i = 0; rc == ROOST_OK && i < n; i++) {
        found[i] = false;
        for (size_t r = 0; r < rs.n && !found[i]; r++) {
            const char *ev = cell(&rs, r, 0), *t = cell(&rs, r, 1), *a = cell(&rs, r, 2);
            if (ev == NULL || t == NULL || a == NULL || strcmp(ev, acks[i].event_id) != 0 ||
                strcmp(t, acks[i].tenant_id) != 0 || strcmp(a, acks[i].agent_id) != 0) {
                continue;
            }
            found[i] = true;
            rows[i].seq = cell_i64(&rs, r, 3);
            rows[i].status = store_status_of(cell_i64(&rs, r, 4));
            cell_copy(&rs, r, 5, rows[i].lease_token, sizeof rows[i].lease_token);
            rows[i].attempts = (int)cell_i64(&rs, r, 6);
            rows[i].claimed_at_ms = cell_i64(&rs, r, 7);
            rows[i].claim_expires_at_ms = cell_i64(&rs, r, 8);
            avail[i] = cell_i64(&rs, r, 9);
        }
    }
    rows_free(&rs);
    return rc;
}

/* One UPDATE for the whole claim: each row's token picked by its seq (ELT(FIELD(seq, …), …)).
 * Text, not a prepared statement, since its shape depends on the count; the ids are escaped and
 * the rest are integers and lease tokens of a fixed alphabet. */
static int my_claim_update_all(struct store *st, const char *tenant_id, const char *agent_id,
                               struct store_events *cands,
                               const char (*tokens)[STORE_LEASE_TOKEN_LEN + 1],
                               const char *consumer, int64_t now_ms, int64_t claim_expires_at_ms)
{
    struct mysql_store *b = store_mysql_backend(st);
    struct dynbuf sb = {.max = STORE_MYSQL_SQL_MAX};
    dynbuf_adds(&sb, "UPDATE inbox SET status = " ST_CLAIMED ", lease_token = ELT(FIELD(seq");
    for (size_t i = 0; i < cands->len; i++) {
        dynbuf_adds(&sb, ", ");
        dynbuf_addf(&sb, "%lld", (long long)(cands->items[i].seq));
    }
    dynbuf_adds(&sb, ")");
    for (size_t i = 0; i < cands->len; i++) {
        dynbuf_adds(&sb, ", ");
        store_mysql_sb_quoted(&sb, b, tokens[i]);
    }
    dynbuf_adds(&sb, "), consumer = ");
    store_mysql_sb_quoted(&sb, b, consumer);
    dynbuf_adds(&sb, ", claimed_at = ");
    dynbuf_addf(&sb, "%lld", (long long)(now_ms));
    dynbuf_adds(&sb, ", claim_expires_at = ");
    dynbuf_addf(&sb, "%lld", (long long)(claim_expires_at_ms));
    dynbuf_adds(&sb, ", attempts = attempts + 1 WHERE tenant_id = ");
    store_mysql_sb_quoted(&sb, b, tenant_id);
    dynbuf_adds(&sb, " AND agent_id = ");
    store_mysql_sb_quoted(&sb, b, agent_id);
    dynbuf_adds(&sb, " AND seq IN (");
    for (size_t i = 0; i < cands->len; i++) {
        dynbuf_adds(&sb, i > 0 ? ", " : "");
        dynbuf_addf(&sb, "%lld", (long long)(cands->items[i].seq));
    }
    dynbuf_adds(&sb, ") AND status = " ST_PENDING);
    if (st->alone && b->tx_marker[0] == '\0' && sb.err == DYNBUF_OK) {
        /* Alone in its transaction (struct store.alone), the claim reads nothing after this: the
         * UPDATE goes with the COMMIT (one round trip fewer), and the row count is checked there,
         * a mismatch failing the query before its COMMIT runs (SIGNAL). Galera's transactions
         * keep their shape. */
        dynbuf_add(&b->late, sb.s, sb.len);
        dynbuf_addf(&b->late,
                    "; IF ROW_COUNT() <> %zu THEN SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT ="
                    " 'claim: not every locked row was updated'; END IF; ",
                    cands->len);
        b->late_n += 2;
        dynbuf_cleanup(&sb);
        return b->late.err == DYNBUF_OK ? ROOST_OK : ROOST_ENOMEM;
    }
    int rc = store_mysql_exec_sb(b, &sb);
    dynbuf_cleanup(&sb);
    if (rc == ROOST_OK && b->affected != cands->len) {
        snprintf(b->err, sizeof b->err, "claim: %llu of %zu locked rows updated",
                 (unsigned long long)b->affected, cands->len);
        rc = ROOST_ESTORE;
    }
    return rc;
}

static int my_retention_end(struct store *st, int rc)
{
    struct mysql_store *b = store_mysql_backend(st);
    if (rc == ROOST_OK) {
        return store_mysql_exec_text(b, "RELEASE SAVEPOINT roost_retention");
    }
    /* After a deadlock the server rolled the whole transaction back: no savepoint is left. */
    if (rc != ROOST_ERETRY) {
        b->changes.n = b->changes.ret_mark;
        store_mysql_exec_text(b, "ROLLBACK TO SAVEPOINT roost_retention");
        store_mysql_exec_text(b, "RELEASE SAVEPOINT roost_retention");
    }
    return rc;
}

/* Opens the pass's savepoint; the change-log rows queued from here on are the pass's. */
static int my_retention_begin(struct store *st)
{
    struct mysql_store *b = store_mysql_backend(st);
    b->changes.ret_mark = b->changes.n;
    return store_mysql_exec_text(b, "SAVEPOINT roost_retention");
}

/* The change log every node's writing transactions append to (store_changes.c). */
static int my_tail(struct store *st, struct store_tail_pos *pos, int64_t now_ms,
                   struct store_touches *touches)
{
    struct mysql_store *b = store_mysql_backend(st);
    if (b->in_tx) {
        snprintf(b->err, sizeof b->err, "tail: must run outside a transaction");
        return ROOST_EINTERNAL;
    }
    return store_changes_tail(st, pos, now_ms, b->origin, touches);
}

static int64_t my_insert_id(struct store *st)
{
    return (int64_t)store_mysql_backend(st)->insert_id;
}

/* A unique key refused the last statement (ER_DUP_ENTRY; InnoDB rolled back only that
 * statement). */
static bool my_dup_key(struct store *st)
{
    return store_mysql_backend(st)->last_errno == ER_DUP_ENTRY;
}

const struct store_dialect store_mysql_dialect = {
    .scheme = "mysql",
    .ha_list = store_mysql_ha_list,
    .open = store_mysql_open,
    .open_error = store_mysql_open_error,
    .close = store_mysql_close,
    .migrate = store_mysql_migrate,
    .errmsg = store_mysql_errmsg,
    .ping = store_mysql_ping,
    .begin = store_mysql_begin,
    .commit = store_mysql_commit,
    .rollback = store_mysql_rollback,
    .savepoint = store_mysql_savepoint,
    .savepoint_release = store_mysql_savepoint_release,
    .savepoint_rollback = store_mysql_savepoint_rollback,
    .tail = my_tail,
    .done = NULL,
    .set_error = my_error_set,
    .sql_col = STORE_SQL_MYSQL,
    .caps = STORE_CAP_CHANGE_LOG | STORE_CAP_CLAIM_ALL | STORE_CAP_ROUND_TRIP |
            STORE_CAP_INSERT_ID | STORE_CAP_LATE_VISIBILITY | STORE_CAP_MERGE_PATCH,
    .insert_id = my_insert_id,
    .dup_key = my_dup_key,
    .change_log = my_change_log,
    .insert_rows = my_insert_rows,
    .insert_row_late = my_insert_row_late,
    .claim_update_all = my_claim_update_all,
    .ack_rows = my_ack_rows,
    .retention_begin = my_retention_begin,
    .retention_end = my_retention_end,
    .run = store_mysql_run_stmt,
};
