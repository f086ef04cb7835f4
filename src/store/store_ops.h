/* SPDX-License-Identifier: MIT */
/* The store operations written once for every backend, by subject (store_<subject>.c): the
 * entries of the operations table (struct store_ops; semantics in store.h). Each is one function
 * with its statements beside it in every dialect (store_stmt.h), run through the store's dialect
 * (store_lifecycle.h: struct store_dialect). Internal to src/store/. */
#ifndef ROOST_STORE_OPS_H
#define ROOST_STORE_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

/* The operations table every store's ops points at (store_ops.c). */
extern const struct store_ops store_ops_table;

struct store_dialect;
/* The start-up checks (store_open runs them): the slot (0-based) of the first empty entry of an
 * operations table, -1 when none is; the name of the first required entry of a dialect that is
 * missing, NULL when none is. */
long store_ops_missing(const struct store_ops *o);
const char *store_dialect_missing(const struct store_dialect *d);

/* ---- publish (store_publish.c) ---- */
int store_publish_op(struct store *st, const struct store_publish_req *req,
                     struct store_published *out, struct store_touches *touches);
int store_publish_batch_op(struct store *st, struct store_publish_entry *entries, size_t n);

/* ---- claims and leases (store_leases.c) ---- */
int store_leases_claim(struct store *st, const char *tenant_id, const char *agent_id, size_t limit,
                       size_t max_bytes, int64_t lease_s, const char *consumer, int64_t now_ms,
                       struct store_events *out, bool *has_more);
int store_leases_claim_batch(struct store *st, struct store_claim_entry *entries, size_t n,
                             int64_t now_ms);
int store_leases_ack(struct store *st, const char *tenant_id, const char *agent_id,
                     const char *event_id, const char *lease_token, int64_t now_ms,
                     int64_t *available_at_ms);
int store_leases_ack_batch(struct store *st, struct store_ack_entry *entries, size_t n,
                           int64_t now_ms);
int store_leases_release(struct store *st, const char *tenant_id, const char *agent_id,
                         const char *event_id, const char *lease_token,
                         enum store_release_reason reason, int64_t delay_s, const char *error,
                         int max_attempts, int64_t now_ms, struct store_touches *touches,
                         enum store_status *new_status);
int store_leases_extend(struct store *st, const char *tenant_id, const char *agent_id,
                        const char *event_id, const char *lease_token, int64_t lease_s,
                        int64_t max_total_s, int64_t now_ms, int64_t *claim_expires_at_ms);
int store_leases_release_all(struct store *st, const char *tenant_id, const char *agent_id,
                             const char *consumer, int64_t now_ms, size_t *released,
                             struct store_touches *touches);
int store_leases_agent_seen(struct store *st, const char *tenant_id, const char *agent_id,
                            int64_t now_ms);

/* ---- the scheduler's passes (store_scheduler.c) ---- */
int store_scheduler_scavenge(struct store *st, int64_t now_ms,
                             const struct store_scavenge_limits *lim, size_t limit, size_t *count,
                             size_t *quarantined, struct store_touches *touches);
int store_scheduler_promote_due(struct store *st, int64_t now_ms, size_t limit, size_t *count,
                                struct store_touches *touches);
int store_scheduler_expire(struct store *st, int64_t now_ms, size_t limit, size_t *count);
int store_scheduler_retention(struct store *st, const struct store_retention_req *req,
                              struct store_retention_result *res);

/* ---- inbox and cursor reads (store_inbox.c) ---- */
int store_inbox_read(struct store *st, const char *tenant_id, const char *agent_id,
                     int64_t after_cursor, size_t limit, size_t max_bytes,
                     struct store_inbox_page *page);
int store_inbox_peek(struct store *st, const char *tenant_id, const char *agent_id, int64_t now_ms,
                     struct store_event *out, bool *found);
int store_inbox_state_get(struct store *st, const char *tenant_id, const char *agent_id,
                          char **state, int64_t *cursor);

/* ---- admin and stats (store_admin.c) ---- */
int store_admin_event_get(struct store *st, const char *tenant_id, const char *event_id,
                          struct store_event *out);
int store_admin_events_by_correlation(struct store *st, const char *tenant_id,
                                      const char *correlation_id, const char *after_agent,
                                      int64_t after_seq, size_t limit, struct store_events *out,
                                      bool *has_more);
int store_admin_quarantine_list(struct store *st, const char *tenant_id, const char *agent_id,
                                const char *after_agent, int64_t after_seq, size_t limit,
                                struct store_events *out, bool *has_more);
int store_admin_requeue(struct store *st, const char *tenant_id, const char *event_id,
                        int64_t now_ms, struct store_touches *touches);
int store_admin_quarantine_purge(struct store *st, const char *tenant_id, const char *agent_id,
                                 const char *event_id, size_t limit, size_t *purged);

/* ---- stats (store_stats.c) ---- */
int store_stats_agents_list(struct store *st, const char *tenant_id, enum store_agents_sort sort,
                            const char *after_agent, int64_t offset, size_t limit, int64_t now_ms,
                            struct store_agent_stats *out, size_t *n, bool *has_more);
int store_stats_metrics_snapshot(struct store *st, int64_t now_ms,
                                 struct store_metrics_snapshot *snap);

/* ---- signature keys and nonces (store_keys.c) ---- */
int store_keys_add(struct store *st, const char *tenant_id, const struct store_key *key,
                   int64_t now_ms);
int store_keys_get(struct store *st, const char *tenant_id, const char *key_id,
                   struct store_key *out);
int store_keys_list(struct store *st, const char *tenant_id, const char *after_key, size_t limit,
                    struct store_key *out, size_t *n, bool *has_more);
int store_keys_revoke(struct store *st, const char *tenant_id, const char *key_id, int64_t now_ms);
int store_keys_nonce_claim(struct store *st, const char *tenant_id, const char *key_id,
                           const char *nonce, int64_t expires_at_ms, int64_t now_ms);
int store_keys_nonce_prune(struct store *st, int64_t now_ms, size_t limit, size_t *count);

/* ---- devices and refresh-token families (store_devices.c) ---- */
/* Operations (write unless noted), all within the caller's transaction:
 * add: a new pending device with its device-code hash; ROOST_EKEYEXISTS when the user code or
 *   code hash is taken (draw again).
 * get (read or write): `by` an enum store_device_by: by id, user code or device-code hash;
 * ROOST_EDEVICENOTFOUND. list (read): the tenant's devices by device_id after `after`, of one agent
 * when agent != NULL. poll: records a poll at now_ms and the interval the device must keep from now
 * on. decide: a pending device whose code has not expired becomes approved (scope_granted set) or
 *   denied; ROOST_ESTATE otherwise, ROOST_EDEVICENOTFOUND when absent.
 * revoke: status revoked with a reason (a revoked device keeps its first reason), and every
 *   signing key of the device stops verifying at now_ms; ROOST_EDEVICENOTFOUND.
 * advance: refresh_gen from `gen` to gen + 1 while the device is approved (the one winner of a
 *   race); ROOST_ESTATE when the device moved on or is no longer approved.
 * refresh_add: records a refresh token (hash) of generation gen of the device.
 * refresh_use: marks a refresh token used; *device_id and *gen name its family, *reused is set when
 *   it had been used before (a replay) and *used_ms is when it was first used (now_ms unless
 *   reused); ROOST_EDEVICENOTFOUND when no such token. device_id
 *   has room for STORE_DEVICE_ID_MAX + 1 bytes. */
int store_devices_add(struct store *st, const char *tenant_id, const struct store_device *d,
                      const char *code_hash);
int store_devices_get(struct store *st, const char *tenant_id, int by, const char *value,
                      struct store_device *out);
int store_devices_list(struct store *st, const char *tenant_id, const char *agent_id,
                       const char *after, size_t limit, struct store_device *out, size_t *n,
                       bool *has_more);
int store_devices_poll(struct store *st, const char *tenant_id, const char *device_id,
                       int64_t now_ms, int64_t interval_s);
int store_devices_decide(struct store *st, const char *tenant_id, const char *device_id,
                         bool approve, const char *scope_granted, const char *by, int64_t now_ms);
int store_devices_revoke(struct store *st, const char *tenant_id, const char *device_id,
                         const char *reason, const char *by, int64_t now_ms);
int store_devices_advance(struct store *st, const char *tenant_id, const char *device_id,
                          int64_t gen, int64_t now_ms);
int store_devices_refresh_add(struct store *st, const char *tenant_id, const char *token_hash,
                              const char *device_id, int64_t gen, int64_t now_ms);
int store_devices_refresh_use(struct store *st, const char *tenant_id, const char *token_hash,
                              int64_t now_ms, char *device_id, int64_t *gen, bool *reused,
                              int64_t *used_ms);
/* ---- inbound webhook sources and receipts (store_sources.c) ---- */
int store_sources_add(struct store *st, const struct store_source *s, int64_t now_ms);
int store_sources_get(struct store *st, const char *tenant_id, const char *source_id,
                      struct store_source *out);
int store_sources_list(struct store *st, const char *tenant_id, const char *after, size_t limit,
                       struct store_source *out, size_t *n, bool *has_more);
int store_sources_delete(struct store *st, const char *tenant_id, const char *source_id);
int store_sources_rotate(struct store *st, const char *tenant_id, const char *source_id,
                         const char *secret, int64_t old_until_ms, int64_t now_ms);
int store_receipts_add(struct store *st, const char *tenant_id, const struct store_receipt *r);
int store_receipts_list(struct store *st, const char *tenant_id, const char *source_id,
                        const char *before, size_t limit, struct store_receipt *out, size_t *n,
                        bool *has_more);
int store_receipts_prune(struct store *st, int64_t before_ms, size_t limit, size_t *count);

#endif
