/* SPDX-License-Identifier: MIT */
/* The MySQL/MariaDB tailer: follows roost_changes, the change log every writing transaction of
 * every node (and of applications calling roost_publish) appends to, so each roostd node pings
 * its subscribers about commits it did not make. Ids become visible out of order (DESIGN §4.2's
 * problem again), hence the gaps of struct store_tail_pos. */
#include "store/store_mysql_int.h"

#include "common/banned.h"

#define TAIL_PAGE 1000
#define TAIL_GAP_BATCH 16
#define TAIL_GAPS_MAX 4096
/* How far below the end of the log a starting tailer looks for ids still uncommitted. */
#define TAIL_START_WINDOW 1000

static int gap_add(struct store_tail_pos *pos, int64_t id, int64_t now_ms)
{
    if (pos->n_gaps == TAIL_GAPS_MAX) {
        /* Bounded: the oldest gap is the one least likely to fill. */
        memmove(pos->gaps, pos->gaps + 1, (pos->n_gaps - 1) * sizeof *pos->gaps);
        pos->n_gaps--;
    }
    if (pos->n_gaps == pos->cap_gaps) {
        size_t cap = pos->cap_gaps ? pos->cap_gaps * 2 : 16;
        struct store_tail_gap *grown = realloc(pos->gaps, cap * sizeof *grown);
        if (grown == NULL) {
            return ROOST_ENOMEM;
        }
        pos->gaps = grown;
        pos->cap_gaps = cap;
    }
    pos->gaps[pos->n_gaps++] = (struct store_tail_gap){.id = id, .since_ms = now_ms};
    return ROOST_OK;
}

static int tail_row(const struct mysql_store *b, const struct rows *rs, size_t r,
                    struct store_touches *touches)
{
    const char *t = cell(rs, r, 1), *a = cell(rs, r, 2);
    if (t == NULL || a == NULL || (b->origin != 0 && cell_i64(rs, r, 4) == b->origin)) {
        return ROOST_OK; /* our own commit: pinged when it committed */
    }
    return store_touches_add(touches, t, a, cell_i64(rs, r, 3));
}

/* Re-checks the open gaps (ids passed over while their transaction was still open), then reads
 * what committed above the high mark; ids skipped there become gaps. Every statement runs in
 * autocommit at READ COMMITTED, so each sees the latest commits. */
int store_mysql_tail(struct store *st, struct store_tail_pos *pos, int64_t now_ms,
                     struct store_touches *touches)
{
    struct mysql_store *b = store_mysql_backend(st);
    struct rows rs = {0};
    int rc = ROOST_OK;
    if (b->in_tx) {
        snprintf(b->err, sizeof b->err, "tail: must run outside a transaction");
        return ROOST_EINTERNAL;
    }
    if (!pos->started) {
        /* Start at the end of the log; ids just below it that are not committed yet belong to
         * transactions still open, so they start out as gaps rather than as seen. */
        if ((rc = store_mysql_q(b, S_TAIL_MAX, NULL, 0, &rs)) != ROOST_OK) {
            rows_free(&rs);
            return rc;
        }
        int64_t end = rs.n > 0 ? cell_i64(&rs, 0, 0) : 0;
        rows_free(&rs);
        int64_t from = end > TAIL_START_WINDOW ? end - TAIL_START_WINDOW : 0;
        struct prm p[] = {PI(from), PI(TAIL_START_WINDOW)};
        if ((rc = Q(b, S_TAIL_SCAN, p, &rs)) != ROOST_OK) {
            rows_free(&rs);
            return rc;
        }
        int64_t next = from + 1;
        for (size_t r = 0; r < rs.n && rc == ROOST_OK; r++) {
            int64_t id = cell_i64(&rs, r, 0);
            for (; next < id && rc == ROOST_OK; next++) {
                rc = gap_add(pos, next, now_ms);
            }
            next = id + 1;
        }
        rows_free(&rs);
        pos->high = next - 1 > end ? next - 1 : end;
        pos->started = rc == ROOST_OK;
        return rc;
    }
    /* Gaps too old to fill any more (rolled back, or pruned) are dropped. */
    size_t keep = 0;
    for (size_t i = 0; i < pos->n_gaps; i++) {
        if (now_ms - pos->gaps[i].since_ms < STORE_TAIL_GAP_MS) {
            pos->gaps[keep++] = pos->gaps[i];
        }
    }
    pos->n_gaps = keep;
    for (size_t i = 0; i < pos->n_gaps && rc == ROOST_OK; i += TAIL_GAP_BATCH) {
        struct prm p[TAIL_GAP_BATCH];
        for (size_t k = 0; k < TAIL_GAP_BATCH; k++) {
            p[k] = (struct prm)PI(i + k < pos->n_gaps ? pos->gaps[i + k].id : -1);
        }
        if ((rc = store_mysql_q(b, S_TAIL_GAPS, p, TAIL_GAP_BATCH, &rs)) != ROOST_OK) {
            break;
        }
        for (size_t r = 0; r < rs.n && rc == ROOST_OK; r++) {
            rc = tail_row(b, &rs, r, touches);
            int64_t id = cell_i64(&rs, r, 0);
            for (size_t k = i; k < i + TAIL_GAP_BATCH && k < pos->n_gaps; k++) {
                if (pos->gaps[k].id == id) {
                    pos->gaps[k].id = 0; /* filled: compacted away below */
                }
            }
        }
        rows_free(&rs);
    }
    keep = 0;
    for (size_t i = 0; i < pos->n_gaps; i++) {
        if (pos->gaps[i].id != 0) {
            pos->gaps[keep++] = pos->gaps[i];
        }
    }
    pos->n_gaps = keep;
    for (;;) {
        struct prm p[] = {PI(pos->high), PI(TAIL_PAGE)};
        if (rc != ROOST_OK || (rc = Q(b, S_TAIL_SCAN, p, &rs)) != ROOST_OK) {
            break;
        }
        for (size_t r = 0; r < rs.n && rc == ROOST_OK; r++) {
            int64_t id = cell_i64(&rs, r, 0);
            for (int64_t g = pos->high + 1; g < id && rc == ROOST_OK; g++) {
                rc = gap_add(pos, g, now_ms);
            }
            if (id > pos->high) {
                pos->high = id;
            }
            if (rc == ROOST_OK) {
                rc = tail_row(b, &rs, r, touches);
            }
        }
        bool full = rs.n == TAIL_PAGE;
        rows_free(&rs);
        if (!full) {
            break;
        }
    }
    rows_free(&rs);
    return rc;
}
