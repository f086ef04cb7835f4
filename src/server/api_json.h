/* SPDX-License-Identifier: MIT */
/* The JSON shapes the API shares between routes: an event object and a time value. */
#ifndef ROOST_SERVER_API_JSON_H
#define ROOST_SERVER_API_JSON_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

struct dynbuf;
struct evbuffer;

/* A buffer holding the text of b without a copy (b is left empty), or NULL when b failed or out
 * of memory (b is then freed). For request_reply_json_text. */
struct evbuffer *json_text_take(struct dynbuf *b);

/* An RFC 3339 UTC string (new reference), or JSON null when ms <= 0 (not set). */
json_t *time_json(int64_t ms);
/* The same as JSON text appended to b (any thread: for answers rendered on a worker). */
void time_json_text(struct dynbuf *b, int64_t ms);

/* Page tokens, one format for every listing (admin agents and quarantine, keys, webhook endpoints
 * and attempts): "p1." and the base64url of the position after which the next page starts (an
 * id, "agent_id:seq", "#offset"). Opaque to clients; a token of another form (the formats before
 * issue 34 included) is 400 invalid_page_token. */
#define PAGE_TOKEN_POS_MAX 300
/* The token of `position` (new reference; JSON null when position is NULL or out of memory). */
json_t *page_token_json(const char *position);
/* The position of `token` into out (NUL-terminated, at most cap-1 bytes, no NUL inside).
 * ROOST_OK or ROOST_EPAGE. */
int page_token_parse(const char *token, char *out, size_t cap);

/* Event object as the API shows it (new reference, NULL when out of memory). with_claim adds the
 * lease (claim answers), with_audit the attempt counters and completion (admin views, archive).
 * It parses the payload: for single events; lists use events_json_new. */
json_t *event_to_json(const struct store_event *ev, bool with_claim, bool with_audit);

/* Appends the same object as text to out, its payload written as stored (never re-parsed).
 * ROOST_OK or ROOST_ENOMEM (out then ends in a partial object: discard it). */
int event_json_append(struct evbuffer *out, const struct store_event *ev, bool with_claim,
                      bool with_audit);

/* A new buffer holding `{"events":[…]` (the caller appends its other members and the closing
 * brace) with the events of `list` in order, stopping before the event that would take the
 * buffer past max_bytes (store_budget_take's rule; 0 = no budget; never before the first). *n
 * gets how many it holds. NULL when out of memory. A list the store already held to the budget
 * passes 0: a claim's events each hold a lease and must all reach the client. */
struct evbuffer *events_json_new(const struct store_events *list, bool with_claim, bool with_audit,
                                 size_t max_bytes, size_t *n);

#endif
