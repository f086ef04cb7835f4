/* SPDX-License-Identifier: MIT */
/* The webhook settings that need more than a number: the retry schedule of
 * webhooks.retry_schedule_s. A leaf, so the config validates it before anything starts. */
#ifndef ROOST_SERVER_WEBHOOKS_CONFIG_H
#define ROOST_SERVER_WEBHOOKS_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#define WEBHOOKS_SCHEDULE_MAX 32

/* The consumer id of the dispatcher's leases: the scavenger knows a delivery's lease by it. */
#define WEBHOOKS_CONSUMER "roostd-webhooks"

/* Parses "5,300,1800" (seconds, each 0..31536000, 1..WEBHOOKS_SCHEDULE_MAX entries). 0, or -1
 * with "webhooks.retry_schedule_s: …" in err. */
int webhooks_parse_schedule(const char *text, int64_t *out, size_t *n, char *err, size_t errlen);

/* The deliveries an event gets under the schedule `text` before it is quarantined: the first
 * and one after each delay (its length + 1), whether an attempt failed or its lease ran out;
 * 0 when the text does not parse (the config has validated it). */
int webhooks_schedule_attempts(const char *text);

#endif
