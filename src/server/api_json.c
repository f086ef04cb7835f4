/* SPDX-License-Identifier: MIT */
/* JSON shapes shared by the routes and the retention archive (see api_json.h). */
#include "server/api_json.h"

#include <event2/buffer.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"
#include "common/jsonutil.h"
#include "common/timeutil.h"
#include "proto/jwt.h"
#include "roost/roost_error.h"

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

/* ---- page tokens ---- */

#define PAGE_TOKEN_PREFIX "p1."

json_t *page_token_json(const char *position)
{
    char *enc = NULL;
    if (position == NULL ||
        jwt_b64url_encode((const unsigned char *)position, strlen(position), &enc) != 0) {
        return json_null();
    }
    size_t n = sizeof PAGE_TOKEN_PREFIX + strlen(enc);
    char *tok = malloc(n);
    json_t *out = json_null();
    if (tok != NULL) {
        memcpy(tok, PAGE_TOKEN_PREFIX, sizeof PAGE_TOKEN_PREFIX - 1);
        memcpy(tok + sizeof PAGE_TOKEN_PREFIX - 1, enc, strlen(enc) + 1);
        out = json_string(tok);
        free(tok);
    }
    free(enc);
    return out != NULL ? out : json_null();
}

int page_token_parse(const char *token, char *out, size_t cap)
{
    size_t plen = sizeof PAGE_TOKEN_PREFIX - 1, len = strlen(token);
    if (len <= plen || len > plen + 4 * PAGE_TOKEN_POS_MAX / 3 + 4 ||
        memcmp(token, PAGE_TOKEN_PREFIX, plen) != 0) {
        return ROOST_EPAGE;
    }
    unsigned char *raw = NULL;
    size_t n = 0;
    if (jwt_b64url_decode(token + plen, len - plen, &raw, &n) != 0) {
        return ROOST_EPAGE;
    }
    int rc = n > 0 && n < cap && memchr(raw, '\0', n) == NULL ? ROOST_OK : ROOST_EPAGE;
    if (rc == ROOST_OK) {
        memcpy(out, raw, n);
        out[n] = '\0';
    }
    free(raw);
    return rc;
}

/* ---- an event as JSON text ---- */

void time_json_text(struct dynbuf *b, int64_t ms)
{
    if (ms <= 0) {
        dynbuf_add(b, "null", 4);
        return;
    }
    char t[TIME_RFC3339_LEN + 3];
    t[0] = '"';
    time_format_rfc3339(ms, t + 1);
    t[TIME_RFC3339_LEN + 1] = '"';
    dynbuf_add(b, t, TIME_RFC3339_LEN + 2);
}

#define ADD_KEY(b, key) dynbuf_add(b, "," key ":", sizeof key + 1)

/* The one place an event's members and their order are written: event_json_append and
 * events_json_new write it, event_to_json parses it. Written directly rather than through jansson
 * objects: a claim answer of 10 events cost ~60,000 instructions per event that way, on the I/O
 * loop thread. The payload is validated JSON text (publish checked it), written as stored:
 * parsing it again only to print it cost a copy of every payload in jansson objects, and jansson
 * 2.14's lexer overruns the heap when an allocation fails inside a string (lex_save ignores the
 * failed append, so the copy loop of lex_scan_string never meets the closing quote). */
static void event_text(struct dynbuf *b, const struct store_event *ev, bool with_claim,
                       bool with_audit)
{
    dynbuf_add(b, "{\"event_id\":", 12);
    jsonutil_add_string(b, ev->event_id);
    ADD_KEY(b, "\"agent_id\"");
    jsonutil_add_string(b, ev->agent_id);
    ADD_KEY(b, "\"sequence_number\"");
    jsonutil_add_int(b, ev->seq);
    ADD_KEY(b, "\"status\"");
    jsonutil_add_string(b, store_status_name(ev->status));
    ADD_KEY(b, "\"priority\"");
    jsonutil_add_int(b, ev->priority);
    ADD_KEY(b, "\"correlation_id\"");
    jsonutil_add_string(b, ev->correlation_id);
    ADD_KEY(b, "\"payload\"");
    dynbuf_adds(b, ev->payload ? ev->payload : "null");
    ADD_KEY(b, "\"created_at\"");
    time_json_text(b, ev->created_at_ms);
    ADD_KEY(b, "\"available_at\"");
    time_json_text(b, ev->available_at_ms);
    ADD_KEY(b, "\"expires_at\"");
    time_json_text(b, ev->expires_at_ms);
    if (with_claim) {
        ADD_KEY(b, "\"lease_token\"");
        jsonutil_add_string(b, ev->lease_token);
        ADD_KEY(b, "\"claim_expires_at\"");
        time_json_text(b, ev->claim_expires_at_ms);
    }
    if (with_claim || with_audit) {
        ADD_KEY(b, "\"attempts\"");
        jsonutil_add_int(b, ev->attempts);
    }
    if (with_audit) {
        ADD_KEY(b, "\"timeouts\"");
        jsonutil_add_int(b, ev->timeouts);
        ADD_KEY(b, "\"nacks\"");
        jsonutil_add_int(b, ev->nacks);
        ADD_KEY(b, "\"last_error\"");
        jsonutil_add_string(b, ev->last_error);
        ADD_KEY(b, "\"completed_at\"");
        time_json_text(b, ev->completed_at_ms);
    }
    dynbuf_addc(b, '}');
}

json_t *event_to_json(const struct store_event *ev, bool with_claim, bool with_audit)
{
    struct dynbuf b = {.max = SIZE_MAX};
    event_text(&b, ev, with_claim, with_audit);
    json_t *o = b.err == DYNBUF_OK ? json_loadb(b.s, b.len, 0, NULL) : NULL;
    dynbuf_cleanup(&b);
    return o;
}

int event_json_append(struct evbuffer *out, const struct store_event *ev, bool with_claim,
                      bool with_audit)
{
    struct dynbuf b = {.max = SIZE_MAX};
    event_text(&b, ev, with_claim, with_audit);
    int rc = b.err == DYNBUF_OK && evbuffer_add(out, b.s, b.len) == 0 ? ROOST_OK : ROOST_ENOMEM;
    dynbuf_cleanup(&b);
    return rc;
}

static void free_text(const void *data, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    free((void *)data);
}

struct evbuffer *json_text_take(struct dynbuf *b)
{
    struct evbuffer *out = b->err == DYNBUF_OK && b->s != NULL ? evbuffer_new() : NULL;
    if (out != NULL && evbuffer_add_reference(out, b->s, b->len, free_text, NULL) == 0) {
        b->s = NULL; /* the evbuffer owns it now */
        b->len = b->cap = 0;
        return out;
    }
    if (out != NULL) {
        evbuffer_free(out);
    }
    dynbuf_cleanup(b);
    return NULL;
}

struct evbuffer *events_json_new(const struct store_events *list, bool with_claim, bool with_audit,
                                 size_t max_bytes, size_t *n_out)
{
    struct dynbuf b = {.max = SIZE_MAX};
    size_t n = 0;
    dynbuf_add(&b, "{\"events\":[", 11);
    for (; n < list->len; n++) {
        const struct store_event *ev = &list->items[n];
        /* The store's rule, over the bytes rendered so far. */
        size_t used = b.len;
        if (!store_budget_take(&used, n, ev->payload ? strlen(ev->payload) : 0, max_bytes)) {
            break;
        }
        if (n > 0) {
            dynbuf_addc(&b, ',');
        }
        event_text(&b, ev, with_claim, with_audit);
    }
    dynbuf_addc(&b, ']');
    struct evbuffer *out = json_text_take(&b);
    if (out != NULL) {
        *n_out = n;
    }
    return out;
}
