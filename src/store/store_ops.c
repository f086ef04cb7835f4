/* SPDX-License-Identifier: MIT */
/* The operations table (struct store_ops), one for every backend: each data operation is written
 * once in its subject file (store_ops.h), the driver entries go to the store's dialect. A new
 * operation is one function with its SQL per dialect in its subject file, plus one row here. */
#include "store/store_ops.h"

#include <stddef.h>
#include <string.h>

#include "store/store_lifecycle.h"

#include "common/banned.h"

/* ---- the driver, through the dialect ---- */

static void op_close(struct store *st)
{
    st->dialect->close(st);
}

static int op_migrate(struct store *st)
{
    return st->dialect->migrate(st);
}

static const char *op_errmsg(struct store *st)
{
    return st->dialect->errmsg(st);
}

static bool op_ping(struct store *st)
{
    return st->dialect->ping(st);
}

static int op_begin(struct store *st)
{
    return st->dialect->begin(st);
}

static int op_commit(struct store *st)
{
    return st->dialect->commit(st);
}

static int op_rollback(struct store *st)
{
    return st->dialect->rollback(st);
}

static int op_savepoint(struct store *st)
{
    return st->dialect->savepoint(st);
}

static int op_savepoint_release(struct store *st)
{
    return st->dialect->savepoint_release(st);
}

static int op_savepoint_rollback(struct store *st)
{
    return st->dialect->savepoint_rollback(st);
}

/* Without a change log (one writer process) there is nothing to tail. */
static int op_tail(struct store *st, struct store_tail_pos *pos, int64_t now_ms,
                   struct store_touches *touches)
{
    if (st->dialect->tail == NULL) {
        return ROOST_OK;
    }
    return st->dialect->tail(st, pos, now_ms, touches);
}

const struct store_ops store_ops_table = {
    .close = op_close,
    .migrate = op_migrate,
    .errmsg = op_errmsg,
    .ping = op_ping,
    .begin = op_begin,
    .commit = op_commit,
    .rollback = op_rollback,
    .savepoint = op_savepoint,
    .savepoint_release = op_savepoint_release,
    .savepoint_rollback = op_savepoint_rollback,
    /* publish (store_publish.c, store_lifecycle.c) */
    .publish = store_publish_op,
    .publish_batch = store_publish_batch_op,
    .ack_batch = store_leases_ack_batch,
    .claim_batch = store_leases_claim_batch,
    /* inbox and cursor reads (store_inbox.c) */
    .inbox_read = store_inbox_read,
    .inbox_peek = store_inbox_peek,
    .state_get = store_inbox_state_get,
    .head = store_lifecycle_head,
    /* claims and leases (store_leases.c) */
    .claim = store_leases_claim,
    .ack = store_leases_ack,
    .release = store_leases_release,
    .extend = store_leases_extend,
    .release_all = store_leases_release_all,
    /* the scheduler (store_scheduler.c, store_keys.c) */
    .scavenge = store_scheduler_scavenge,
    .promote_due = store_scheduler_promote_due,
    .expire = store_scheduler_expire,
    .retention = store_scheduler_retention,
    .nonce_prune = store_keys_nonce_prune,
    .tail = op_tail,
    /* admin and stats (store_admin.c, store_stats.c, store_leases.c) */
    .quarantine_list = store_admin_quarantine_list,
    .requeue = store_admin_requeue,
    .quarantine_purge = store_admin_quarantine_purge,
    .agents_list = store_stats_agents_list,
    .event_get = store_admin_event_get,
    .events_by_correlation = store_admin_events_by_correlation,
    .agent_seen = store_leases_agent_seen,
    .metrics_snapshot = store_stats_metrics_snapshot,
    /* signature keys and nonces (store_keys.c) */
    .key_add = store_keys_add,
    .key_get = store_keys_get,
    .key_list = store_keys_list,
    .key_revoke = store_keys_revoke,
    .nonce_claim = store_keys_nonce_claim,
    /* devices and refresh-token families (store_devices.c) */
    .device_add = store_devices_add,
    .device_get = store_devices_get,
    .device_list = store_devices_list,
    .device_poll = store_devices_poll,
    .device_decide = store_devices_decide,
    .device_revoke = store_devices_revoke,
    .device_advance = store_devices_advance,
    .refresh_add = store_devices_refresh_add,
    .refresh_use = store_devices_refresh_use,
    /* inbound webhook sources and receipts (store_sources.c) */
    .source_add = store_sources_add,
    .source_get = store_sources_get,
    .source_list = store_sources_list,
    .source_delete = store_sources_delete,
    .source_rotate = store_sources_rotate,
    .receipt_add = store_receipts_add,
    .receipt_list = store_receipts_list,
    .receipt_prune = store_receipts_prune,
};

#define NEED(tbl, field)                                                                           \
    do {                                                                                           \
        if ((tbl)->field == NULL) {                                                                \
            return #field;                                                                         \
        }                                                                                          \
    } while (0)

/* The table is function pointers only, every one required (the operations a backend could once
 * leave out now fall back inside the shared operation), so the check walks it slot by slot and a
 * new entry needs no line here. */
typedef void (*any_fn)(void);
_Static_assert(sizeof(struct store_ops) % sizeof(any_fn) == 0, "struct store_ops: pointers only");

long store_ops_missing(const struct store_ops *o)
{
    const unsigned char *bytes = (const unsigned char *)o;
    for (size_t i = 0; i < sizeof *o / sizeof(any_fn); i++) {
        any_fn fn;
        memcpy(&fn, bytes + i * sizeof fn, sizeof fn);
        if (fn == NULL) {
            return (long)i;
        }
    }
    return -1;
}

const char *store_dialect_missing(const struct store_dialect *d)
{
    if (d->scheme == NULL || (unsigned)d->sql_col >= STORE_SQL_COLS) {
        return "scheme";
    }
    NEED(d, open);
    NEED(d, open_error);
    NEED(d, close);
    NEED(d, migrate);
    NEED(d, errmsg);
    NEED(d, ping);
    NEED(d, begin);
    NEED(d, commit);
    NEED(d, rollback);
    NEED(d, savepoint);
    NEED(d, savepoint_release);
    NEED(d, savepoint_rollback);
    NEED(d, set_error);
    NEED(d, dup_key);
    NEED(d, run);
    NEED(d, retention_begin);
    NEED(d, retention_end);
    if (store_dialect_has(d, STORE_CAP_INSERT_ID) && d->insert_id == NULL) {
        return "insert_id";
    }
    if ((d->read_begin == NULL) != (d->read_end == NULL)) {
        return d->read_begin == NULL ? "read_begin" : "read_end";
    }
    if (store_dialect_has(d, STORE_CAP_CHANGE_LOG) && d->change_log == NULL) {
        return "change_log";
    }
    if (store_dialect_has(d, STORE_CAP_CHANGE_LOG) && d->tail == NULL) {
        return "tail";
    }
    return NULL;
}
