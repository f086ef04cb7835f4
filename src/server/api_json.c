/* SPDX-License-Identifier: MIT */
/* JSON shapes shared by the routes and the retention archive (see api_json.h). */
#include "server/api_json.h"

#include <event2/buffer.h>
#include <stdlib.h>
#include <string.h>

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

/* The members of an event object before its payload, and after it (times, claim and audit
 * fields): event_to_json joins them around the parsed payload, event_json_append around the
 * stored payload text. NULL when out of memory. */
static json_t *event_head(const struct store_event *ev)
{
    return json_pack("{s:s, s:s, s:I, s:s, s:i, s:s?}", "event_id", ev->event_id, "agent_id",
                     ev->agent_id, "sequence_number", (json_int_t)ev->seq, "status",
                     store_status_name(ev->status), "priority", ev->priority, "correlation_id",
                     ev->correlation_id);
}

static json_t *event_tail(const struct store_event *ev, bool with_claim, bool with_audit)
{
    json_t *o =
        json_pack("{s:o, s:o, s:o}", "created_at", time_json(ev->created_at_ms), "available_at",
                  time_json(ev->available_at_ms), "expires_at", time_json(ev->expires_at_ms));
    if (!o) {
        return NULL;
    }
    int bad = 0;
    if (with_claim) {
        bad |= json_object_set_new(o, "lease_token", json_string(ev->lease_token));
        bad |= json_object_set_new(o, "claim_expires_at", time_json(ev->claim_expires_at_ms));
        bad |= json_object_set_new(o, "attempts", json_integer(ev->attempts));
    }
    if (with_audit) {
        bad |= json_object_set_new(o, "attempts", json_integer(ev->attempts));
        bad |= json_object_set_new(o, "timeouts", json_integer(ev->timeouts));
        bad |= json_object_set_new(o, "nacks", json_integer(ev->nacks));
        bad |= json_object_set_new(o, "last_error",
                                   ev->last_error ? json_string(ev->last_error) : json_null());
        bad |= json_object_set_new(o, "completed_at", time_json(ev->completed_at_ms));
    }
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

json_t *event_to_json(const struct store_event *ev, bool with_claim, bool with_audit)
{
    json_t *o = event_head(ev);
    json_t *tail = event_tail(ev, with_claim, with_audit);
    json_t *payload = ev->payload ? json_loads(ev->payload, JSON_DECODE_ANY, NULL) : json_null();
    bool ok = o && tail && payload;
    if (!ok) {
        json_decref(payload);
    }
    /* json_object_set_new takes the payload over even when it fails. */
    if (!ok || json_object_set_new(o, "payload", payload) != 0 ||
        json_object_update(o, tail) != 0) {
        json_decref(o);
        o = NULL;
    }
    json_decref(tail);
    return o;
}

/* Appends the compact text of obj to out, without its last byte (the closing brace) when
 * `open_end`, without its first (the opening brace) otherwise. ROOST_OK or ROOST_ENOMEM. */
static int append_members(struct evbuffer *out, const json_t *obj, bool open_end)
{
    char small[1024];
    size_t n = json_dumpb(obj, small, sizeof small, JSON_COMPACT);
    char *text = small;
    if (n < 2) {
        return ROOST_ENOMEM; /* json_dumpb answers 0 when it could not allocate */
    }
    if (n > sizeof small) {
        if ((text = malloc(n)) == NULL || json_dumpb(obj, text, n, JSON_COMPACT) != n) {
            free(text);
            return ROOST_ENOMEM;
        }
    }
    int rc = evbuffer_add(out, open_end ? text : text + 1, n - 1) == 0 ? ROOST_OK : ROOST_ENOMEM;
    if (text != small) {
        free(text);
    }
    return rc;
}

int event_json_append(struct evbuffer *out, const struct store_event *ev, bool with_claim,
                      bool with_audit)
{
    /* {head members,"payload":<stored text>,tail members}: the payload is validated JSON text
     * (publish checked it), written as stored. Parsing it again only to print it cost a copy of
     * every payload in jansson objects, and jansson 2.14's lexer overruns the heap when an
     * allocation fails inside a string (lex_save ignores the failed append, so the copy loop of
     * lex_scan_string never meets the closing quote). */
    json_t *head = event_head(ev);
    json_t *tail = event_tail(ev, with_claim, with_audit);
    const char *payload = ev->payload ? ev->payload : "null";
    int rc = ROOST_ENOMEM;
    if (head && tail && append_members(out, head, true) == ROOST_OK &&
        evbuffer_add(out, ",\"payload\":", 11) == 0 &&
        evbuffer_add(out, payload, strlen(payload)) == 0 && evbuffer_add(out, ",", 1) == 0) {
        rc = append_members(out, tail, false);
    }
    json_decref(head);
    json_decref(tail);
    return rc;
}

struct evbuffer *events_json_new(const struct store_events *list, bool with_claim, bool with_audit,
                                 size_t max_bytes, size_t *n_out)
{
    struct evbuffer *out = evbuffer_new();
    size_t n = 0;
    if (!out || evbuffer_add(out, "{\"events\":[", 11) != 0) {
        goto fail;
    }
    for (; n < list->len; n++) {
        const struct store_event *ev = &list->items[n];
        /* The store's rule, over the bytes rendered so far. */
        size_t used = evbuffer_get_length(out);
        if (!store_budget_take(&used, n, ev->payload ? strlen(ev->payload) : 0, max_bytes)) {
            break;
        }
        if ((n > 0 && evbuffer_add(out, ",", 1) != 0) ||
            event_json_append(out, ev, with_claim, with_audit) != ROOST_OK) {
            goto fail;
        }
    }
    if (evbuffer_add(out, "]", 1) != 0) {
        goto fail;
    }
    *n_out = n;
    return out;
fail:
    if (out) {
        evbuffer_free(out);
    }
    return NULL;
}
