/* SPDX-License-Identifier: MIT */
/* Statement descriptors (store_stmt.h): the completeness check and the per-connection map from a
 * descriptor to the dialect's prepared handle. */
#include "store/store_stmt.h"

#include <stdlib.h>
#include <string.h>

#include "roost/roost_error.h"

#include "common/banned.h"

#define CACHE_MIN 64

const char *store_stmt_sql(const struct store_stmt *d, enum store_sql_col col)
{
    if (d == NULL || (unsigned)col >= STORE_SQL_COLS || d->sql[col] == NULL ||
        d->sql[col][0] == '\0') {
        return NULL;
    }
    return d->sql[col];
}

static size_t slot_of(const struct store_stmt *d, size_t cap)
{
    uint64_t h = (uint64_t)(uintptr_t)d;
    h ^= h >> 17;
    h *= 0x9e3779b97f4a7c15ULL;
    return (size_t)(h >> 32) & (cap - 1);
}

static int grow(struct store_stmt_cache *c)
{
    size_t cap = c->cap == 0 ? CACHE_MIN : c->cap * 2;
    const struct store_stmt **keys = calloc(cap, sizeof *keys);
    uint32_t *idx = calloc(cap, sizeof *idx);
    if (keys == NULL || idx == NULL) {
        free(keys);
        free(idx);
        return ROOST_ENOMEM;
    }
    for (size_t i = 0; i < c->cap; i++) {
        if (c->keys[i] != NULL) {
            size_t s = slot_of(c->keys[i], cap);
            while (keys[s] != NULL) {
                s = (s + 1) & (cap - 1);
            }
            keys[s] = c->keys[i];
            idx[s] = c->idx[i];
        }
    }
    free(c->keys);
    free(c->idx);
    c->keys = keys;
    c->idx = idx;
    c->cap = cap;
    return ROOST_OK;
}

int store_stmt_cache_find(struct store_stmt_cache *c, const struct store_stmt *d, size_t *idx,
                          bool *fresh)
{
    *fresh = false;
    if (c->cap > 0) {
        for (size_t s = slot_of(d, c->cap);; s = (s + 1) & (c->cap - 1)) {
            if (c->keys[s] == d) {
                *idx = c->idx[s];
                return ROOST_OK;
            }
            if (c->keys[s] == NULL) {
                break;
            }
        }
    }
    /* New: keep the load at most one half. */
    if (2 * (c->n + 1) > c->cap && grow(c) != ROOST_OK) {
        return ROOST_ENOMEM;
    }
    size_t s = slot_of(d, c->cap);
    while (c->keys[s] != NULL) {
        s = (s + 1) & (c->cap - 1);
    }
    c->keys[s] = d;
    c->idx[s] = (uint32_t)c->n;
    *idx = c->n++;
    *fresh = true;
    return ROOST_OK;
}

void *store_stmt_slots_grow(void *slots, size_t *n, size_t elem, size_t idx)
{
    size_t cap = *n == 0 ? CACHE_MIN : *n * 2;
    while (cap <= idx) {
        cap *= 2;
    }
    if (cap > SIZE_MAX / elem) {
        return NULL;
    }
    unsigned char *grown = realloc(slots, cap * elem);
    if (grown == NULL) {
        return NULL;
    }
    memset(grown + *n * elem, 0, (cap - *n) * elem);
    *n = cap;
    return grown;
}

void store_stmt_cache_free(struct store_stmt_cache *c)
{
    free(c->keys);
    free(c->idx);
    c->keys = NULL;
    c->idx = NULL;
    c->cap = c->n = 0;
}
