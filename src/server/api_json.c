/* SPDX-License-Identifier: MIT */
/* JSON shapes shared by the routes and the retention archive (see api_json.h). */
#include "server/api_json.h"

#include <stdlib.h>

#include "common/timeutil.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

json_t *time_json(int64_t ms)
{
    if (ms <= 0) {
        return json_null();
    }
    char buf[TIME_RFC3339_LEN + 1];
    time_format_rfc3339(ms, buf);
    return json_string(buf);
}

json_t *event_to_json(const struct store_event *ev, bool with_claim, bool with_audit)
{
    json_t *payload = NULL;
    if (ev->payload) {
        payload = json_loads(ev->payload, JSON_DECODE_ANY, NULL);
    }
    json_t *o =
        json_pack("{s:s, s:s, s:I, s:s, s:i, s:s?, s:o, s:o, s:o, s:o}", "event_id", ev->event_id,
                  "agent_id", ev->agent_id, "sequence_number", (json_int_t)ev->seq, "status",
                  store_status_name(ev->status), "priority", ev->priority, "correlation_id",
                  ev->correlation_id, "payload", payload ? payload : json_null(), "created_at",
                  time_json(ev->created_at_ms), "available_at", time_json(ev->available_at_ms),
                  "expires_at", time_json(ev->expires_at_ms));
    if (!o) {
        return NULL;
    }
    if (with_claim) {
        json_object_set_new(o, "lease_token", json_string(ev->lease_token));
        json_object_set_new(o, "claim_expires_at", time_json(ev->claim_expires_at_ms));
        json_object_set_new(o, "attempts", json_integer(ev->attempts));
    }
    if (with_audit) {
        json_object_set_new(o, "attempts", json_integer(ev->attempts));
        json_object_set_new(o, "timeouts", json_integer(ev->timeouts));
        json_object_set_new(o, "nacks", json_integer(ev->nacks));
        json_object_set_new(o, "last_error",
                            ev->last_error ? json_string(ev->last_error) : json_null());
        json_object_set_new(o, "completed_at", time_json(ev->completed_at_ms));
    }
    return o;
}
