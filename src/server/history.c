/* SPDX-License-Identifier: MIT */
/* Per-tenant rings of chart samples (see history.h). */
#include "server/history.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

struct ring {
    char tenant_id[STORE_ID_MAX + 1];
    struct history_sample s[HISTORY_SAMPLES];
    size_t head, n; /* the next slot to write, samples held */
    bool seen;      /* listed by the snapshot being recorded */
};

struct history {
    struct ring **rings; /* HISTORY_MAX_TENANTS slots in order of arrival */
    size_t n;
    int64_t last_ms;
    bool full_logged;
};

struct history *history_new(void)
{
    struct history *h = calloc(1, sizeof *h);
    if (h != NULL && (h->rings = calloc(HISTORY_MAX_TENANTS, sizeof *h->rings)) == NULL) {
        free(h);
        h = NULL;
    }
    return h;
}

void history_free(struct history *h)
{
    if (h == NULL) {
        return;
    }
    for (size_t i = 0; i < h->n; i++) {
        free(h->rings[i]);
    }
    free(h->rings);
    free(h);
}

static struct ring *find(const struct history *h, const char *tenant_id)
{
    for (size_t i = 0; i < h->n; i++) {
        if (strcmp(h->rings[i]->tenant_id, tenant_id) == 0) {
            return h->rings[i];
        }
    }
    return NULL;
}

static int32_t clamp32(int64_t v)
{
    return v > INT32_MAX ? INT32_MAX : v < 0 ? 0 : (int32_t)v;
}

static void push(struct ring *r, const struct history_sample *s)
{
    r->s[r->head] = *s;
    r->head = (r->head + 1) % HISTORY_SAMPLES;
    if (r->n < HISTORY_SAMPLES) {
        r->n++;
    }
}

void history_record(struct history *h, const struct store_metrics_snapshot *snap, int64_t now_ms)
{
    if (h == NULL ||
        (h->last_ms != 0 && now_ms - h->last_ms < HISTORY_MIN_GAP_MS && now_ms >= h->last_ms)) {
        return;
    }
    h->last_ms = now_ms;
    for (size_t i = 0; i < h->n; i++) {
        h->rings[i]->seen = false;
    }
    for (size_t i = 0; i < snap->n_tenants; i++) {
        const struct store_metrics_tenant *t = &snap->tenants[i];
        struct ring *r = find(h, t->tenant_id);
        if (r == NULL && h->n == HISTORY_MAX_TENANTS) {
            if (!h->full_logged) {
                log_warn("chart history full", "tenants=%d", HISTORY_MAX_TENANTS);
                h->full_logged = true;
            }
            continue;
        }
        if (r == NULL) {
            if ((r = calloc(1, sizeof *r)) == NULL) {
                continue; /* out of memory: this tenant's charts start later */
            }
            memcpy(r->tenant_id, t->tenant_id, sizeof r->tenant_id);
            h->rings[h->n++] = r;
        }
        r->seen = true;
        struct history_sample s = {
            .at_ms = now_ms,
            .pending = clamp32(t->pending),
            .scheduled = clamp32(t->scheduled),
            .claimed = clamp32(t->claimed),
            .quarantined = clamp32(t->quarantined),
            .oldest_pending_age_s =
                t->oldest_pending_ms ? clamp32((now_ms - t->oldest_pending_ms) / 1000) : -1,
        };
        push(r, &s);
    }
    /* A tenant the snapshot no longer lists has no unfinished rows: zeros. */
    for (size_t i = 0; i < h->n; i++) {
        if (!h->rings[i]->seen) {
            struct history_sample s = {.at_ms = now_ms, .oldest_pending_age_s = -1};
            push(h->rings[i], &s);
        }
    }
}

size_t history_each(const struct history *h, const char *tenant_id, int64_t after_ms,
                    void (*fn)(void *arg, const struct history_sample *s), void *arg)
{
    const struct ring *r = h != NULL ? find(h, tenant_id) : NULL;
    size_t called = 0;
    for (size_t k = 0; r != NULL && k < r->n; k++) {
        const struct history_sample *s =
            &r->s[(r->head + HISTORY_SAMPLES - r->n + k) % HISTORY_SAMPLES];
        if (s->at_ms > after_ms) {
            fn(arg, s);
            called++;
        }
    }
    return called;
}
