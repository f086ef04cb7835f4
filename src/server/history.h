/* SPDX-License-Identifier: MIT */
/* The dashboard's chart history: a small ring of samples per tenant, taken from each metrics
 * snapshot (at most one a second), so a page loaded later shows the last minutes as the server
 * saw them (GET /api/v1/admin/history). In memory, per node: a restart starts empty. A leaf:
 * takes the snapshot as an argument. Loop thread only. */
#ifndef ROOST_HISTORY_H
#define ROOST_HISTORY_H

#include <stddef.h>
#include <stdint.h>

#include "store/store.h"

#define HISTORY_SAMPLES 300      /* per tenant: five minutes at one sample a second */
#define HISTORY_MIN_GAP_MS 1000  /* snapshots closer than this to the last sample are skipped */
#define HISTORY_MAX_TENANTS 1000 /* tenants with a ring; later ones get none (logged once) */

struct history_sample {
    int64_t at_ms;                                    /* wall clock of the snapshot */
    int32_t pending, scheduled, claimed, quarantined; /* saturated at INT32_MAX */
    int32_t oldest_pending_age_s;                     /* -1: nothing pending */
};

struct history;

struct history *history_new(void);
/* NULL is a no-op. */
void history_free(struct history *h);
/* Records one sample for every tenant of the snapshot, and a zero sample for every tenant with a
 * ring that the snapshot no longer lists (no unfinished rows). now_ms: wall clock. */
void history_record(struct history *h, const struct store_metrics_snapshot *snap, int64_t now_ms);
/* Calls fn for each of the tenant's samples taken after after_ms (0: all), oldest first.
 * Returns how many it called fn for. */
size_t history_each(const struct history *h, const char *tenant_id, int64_t after_ms,
                    void (*fn)(void *arg, const struct history_sample *s), void *arg);

#endif
