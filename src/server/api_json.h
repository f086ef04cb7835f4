/* SPDX-License-Identifier: MIT */
/* The JSON shapes the API shares between routes: an event object and a time value. */
#ifndef ROOST_SERVER_API_JSON_H
#define ROOST_SERVER_API_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

/* An RFC 3339 UTC string (new reference), or JSON null when ms <= 0 (not set). */
json_t *time_json(int64_t ms);

/* Event object as the API shows it (new reference, NULL when out of memory). with_claim adds the
 * lease (claim answers), with_audit the attempt counters and completion (admin views, archive). */
json_t *event_to_json(const struct store_event *ev, bool with_claim, bool with_audit);

#endif
