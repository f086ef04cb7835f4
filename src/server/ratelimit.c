/* SPDX-License-Identifier: MIT */
/* Per-tenant token buckets (see ratelimit.h): a hash table of tenants that grows with them; a
 * bucket that has refilled completely is the same as none, so idle tenants are dropped when the
 * table is walked for growth. */
#include "server/ratelimit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

struct bucket {
    struct bucket *next;
    double tokens; /* may go negative: the debt of the last request */
    int64_t at_ms; /* when tokens was computed */
    char tenant_id[];
};

struct ratelimit {
    struct bucket **slots;
    size_t n_slots, n_buckets;
};

struct ratelimit *ratelimit_new(void)
{
    struct ratelimit *rl = calloc(1, sizeof *rl);
    if (rl == NULL || (rl->slots = calloc(64, sizeof *rl->slots)) == NULL) {
        free(rl);
        return NULL;
    }
    rl->n_slots = 64;
    return rl;
}

void ratelimit_free(struct ratelimit *rl)
{
    if (rl == NULL) {
        return;
    }
    for (size_t i = 0; i < rl->n_slots; i++) {
        while (rl->slots[i]) {
            struct bucket *b = rl->slots[i];
            rl->slots[i] = b->next;
            free(b);
        }
    }
    free(rl->slots);
    free(rl);
}

static void refill(struct bucket *b, double rate, double burst, int64_t now_ms)
{
    if (now_ms > b->at_ms) {
        b->tokens = fmin(burst, b->tokens + rate * (double)(now_ms - b->at_ms) / 1000.0);
        b->at_ms = now_ms;
    }
}

/* Doubles the table, leaving out buckets that are full again (they carry no state). */
static void grow(struct ratelimit *rl, double rate, double burst, int64_t now_ms)
{
    size_t n = rl->n_slots * 2;
    struct bucket **slots = calloc(n, sizeof *slots);
    if (slots == NULL) {
        return;
    }
    rl->n_buckets = 0;
    for (size_t i = 0; i < rl->n_slots; i++) {
        while (rl->slots[i]) {
            struct bucket *b = rl->slots[i];
            rl->slots[i] = b->next;
            refill(b, rate, burst, now_ms);
            if (b->tokens >= burst) {
                free(b);
                continue;
            }
            size_t k = hash_fnv1a_str(HASH_FNV1A_INIT, b->tenant_id) % n;
            b->next = slots[k];
            slots[k] = b;
            rl->n_buckets++;
        }
    }
    free(rl->slots);
    rl->slots = slots;
    rl->n_slots = n;
}

int64_t ratelimit_take(struct ratelimit *rl, const char *tenant_id, double rate, double burst,
                       double cost, int64_t now_ms)
{
    if (rl == NULL || rate <= 0) {
        return 0;
    }
    if (burst < 1) {
        burst = 1;
    }
    size_t k = hash_fnv1a_str(HASH_FNV1A_INIT, tenant_id) % rl->n_slots;
    struct bucket *b = rl->slots[k];
    while (b != NULL && strcmp(b->tenant_id, tenant_id) != 0) {
        b = b->next;
    }
    if (b == NULL) {
        if (rl->n_buckets >= 2 * rl->n_slots) {
            grow(rl, rate, burst, now_ms);
            k = hash_fnv1a_str(HASH_FNV1A_INIT, tenant_id) % rl->n_slots;
        }
        size_t len = strlen(tenant_id) + 1;
        if ((b = malloc(sizeof *b + len)) == NULL) {
            return 0;
        }
        memcpy(b->tenant_id, tenant_id, len);
        b->tokens = burst;
        b->at_ms = now_ms;
        b->next = rl->slots[k];
        rl->slots[k] = b;
        rl->n_buckets++;
    }
    refill(b, rate, burst, now_ms);
    if (b->tokens < 0) {
        int64_t wait_s = (int64_t)ceil(-b->tokens / rate);
        return wait_s > 0 ? wait_s : 1;
    }
    b->tokens -= cost;
    return 0;
}
