/* SPDX-License-Identifier: MIT */
/* Per-tenant token buckets (publish rows per second): a leaf of the loop thread, keyed by tenant
 * id. A bucket refills at `rate` up to `burst`; a request passes while the bucket is not in debt
 * and then takes all it costs, so one large request delays the next ones instead of never
 * fitting. Loop thread only. */
#ifndef ROOST_SERVER_RATELIMIT_H
#define ROOST_SERVER_RATELIMIT_H

#include <stdint.h>

struct ratelimit;

/* NULL when out of memory. */
struct ratelimit *ratelimit_new(void);
/* NULL is a no-op. */
void ratelimit_free(struct ratelimit *rl);

/* Charges `cost` units to tenant_id's bucket (rate per second, burst units; rate <= 0 means no
 * limit) at monotonic now_ms. Returns 0 when it passes, else the seconds until it would (>= 1),
 * and charges nothing. Out of memory lets the request pass (the limit is a guard, not a
 * promise). */
int64_t ratelimit_take(struct ratelimit *rl, const char *tenant_id, double rate, double burst,
                       double cost, int64_t now_ms);

#endif
