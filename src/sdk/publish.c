/* SPDX-License-Identifier: MIT */
/* The producer side: POST /api/v1/events with one event or an atomic batch (DESIGN §5.2). Inputs
 * are checked locally first, so a malformed payload never costs a round trip. A publish that
 * fails in a way worth retrying is retried with the same body; every event of that body carries
 * an idempotency key (generated when the caller gave none), so a retry after an answer that was
 * lost finds the events the first attempt made instead of adding a second copy. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/ids.h"
#include "common/jsonutil.h"
#include "common/timeutil.h"
#include "sdk/sdk.h"

#include "common/banned.h"

/* Retries after the first attempt, and the waits between them: PUBLISH_BACKOFF_MS doubling, or
 * the server's Retry-After when longer, never more than PUBLISH_BACKOFF_MAX_MS. */
#define PUBLISH_RETRIES 3
#define PUBLISH_BACKOFF_MS 100
#define PUBLISH_BACKOFF_MAX_MS 2000
/* A generated idempotency key: "rk_" + a ULID (unique, and ordered by creation time). */
#define PUBLISH_KEY_PREFIX "rk_"

void roost_message_init(struct roost_message *m)
{
    if (m != NULL) {
        memset(m, 0, sizeof *m);
    }
}

/* Parses an optional JSON-object argument into obj[key]; `bad` is the rc of a non-object. */
static int put_object_text(struct roost_client *c, json_t *obj, const char *key, const char *text,
                           int bad)
{
    if (text == NULL) {
        return ROOST_OK;
    }
    json_t *v = NULL;
    int rc = sdk_parse_object(text, &v);
    if (rc == ROOST_ENOMEM) {
        return sdk_fail(c, rc, "out of memory");
    }
    if (rc == ROOST_EJSONDEPTH) {
        return sdk_fail(c, rc, "%s nests deeper than %d levels", key, SDK_MAX_JSON_DEPTH);
    }
    if (rc != ROOST_OK) {
        return sdk_fail(c, bad,
                        rc == ROOST_EBODY ? "%s must be a JSON object"
                                          : "%s is not valid JSON (or has duplicate keys)",
                        key);
    }
    return sdk_put(obj, key, v) ? ROOST_OK : sdk_fail(c, ROOST_ENOMEM, "out of memory");
}

/* Optional string member; json_string refuses invalid UTF-8 (reported as `bad`). */
static int put_string(struct roost_client *c, json_t *obj, const char *key, const char *value,
                      int bad)
{
    if (value == NULL) {
        return ROOST_OK;
    }
    return sdk_put(obj, key, json_string(value)) ? ROOST_OK
                                                 : sdk_fail(c, bad, "%s must be UTF-8", key);
}

/* Encodes one message as the event object of the publish body. */
static int message_to_json(struct roost_client *c, const struct roost_message *m, size_t index,
                           json_t **out)
{
    *out = NULL;
    if (m->recipients == NULL || m->n_recipients == 0) {
        return sdk_fail(c, ROOST_ERECIPIENTS, "message %zu has no recipients", index);
    }
    if (m->priority < -100 || m->priority > 100) {
        return sdk_fail(c, ROOST_EPRIORITY, "priority must be an integer in -100..100");
    }
    if (m->delay_s < 0 || (m->delay_s > 0 && m->available_at != NULL)) {
        return sdk_fail(c, ROOST_EAVAILABLEAT, "give either delay_s >= 0 or available_at");
    }
    if (m->ttl_s < 0 || (m->ttl_s > 0 && m->expires_at != NULL)) {
        return sdk_fail(c, ROOST_EEXPIRESAT, "give either ttl_s >= 0 or expires_at");
    }
    json_t *ev = json_object();
    json_t *to = json_array();
    int rc = ROOST_OK;
    if (ev == NULL || to == NULL || json_object_set(ev, "recipients", to) != 0) {
        rc = sdk_fail(c, ROOST_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < m->n_recipients; i++) {
        const char *a = m->recipients[i];
        if (a == NULL || !ids_valid_name(a, strlen(a))) {
            rc = sdk_fail(c, ROOST_EAGENTID,
                          "recipient %zu: agent_id must match "
                          "[A-Za-z0-9._-]{1,128}",
                          i);
            goto out;
        }
        if (json_array_append_new(to, json_string(a)) != 0) {
            rc = sdk_fail(c, ROOST_ENOMEM, "out of memory");
            goto out;
        }
    }
    if (m->payload == NULL) {
        if (!sdk_put(ev, "payload", json_object())) {
            rc = sdk_fail(c, ROOST_ENOMEM, "out of memory");
            goto out;
        }
    } else if ((rc = put_object_text(c, ev, "payload", m->payload, ROOST_EPAYLOAD)) != ROOST_OK) {
        goto out;
    }
    if ((m->priority != 0 && !sdk_put(ev, "priority", json_integer(m->priority))) ||
        (m->delay_s > 0 && !sdk_put(ev, "delay_s", json_integer((json_int_t)m->delay_s))) ||
        (m->ttl_s > 0 && !sdk_put(ev, "ttl_s", json_integer((json_int_t)m->ttl_s)))) {
        rc = sdk_fail(c, ROOST_ENOMEM, "out of memory");
        goto out;
    }
    /* The generated key: "evt_" + ULID, retagged. */
    char auto_key[IDS_EVENT_ID_LEN + 1];
    const char *key = m->idempotency_key;
    if (key == NULL) {
        if (ids_event_id(time_now_ms(), auto_key) != 0) {
            rc = sdk_fail(c, ROOST_EINTERNAL, "cannot generate an idempotency key");
            goto out;
        }
        memcpy(auto_key + 1, PUBLISH_KEY_PREFIX, sizeof PUBLISH_KEY_PREFIX - 1);
        key = auto_key + 1;
    }
    if ((rc = put_string(c, ev, "correlation_id", m->correlation_id, ROOST_ECORRELATION)) != 0 ||
        (rc = put_string(c, ev, "idempotency_key", key, ROOST_EIDEMKEY)) != 0 ||
        (rc = put_string(c, ev, "available_at", m->available_at, ROOST_EAVAILABLEAT)) != 0 ||
        (rc = put_string(c, ev, "expires_at", m->expires_at, ROOST_EEXPIRESAT)) != 0 ||
        (rc = put_object_text(c, ev, "state_patch", m->state_patch, ROOST_ESTATEPATCH)) != 0) {
        goto out;
    }
    *out = ev;
    ev = NULL;
out:
    json_decref(to);
    json_decref(ev);
    return rc;
}

/* Failures after which the same request may succeed: the connection (the request may or may not
 * have arrived), a busy or unavailable store (503) and a rate limit (429). */
static bool retryable(int rc)
{
    return rc == ROOST_ECONNECT || rc == ROOST_ERETRY || rc == ROOST_EUNAVAILABLE ||
           rc == ROOST_ESHUTDOWN || rc == ROOST_ERATELIMIT;
}

static void backoff(const struct roost_client *c, int attempt)
{
    int64_t ms = (int64_t)PUBLISH_BACKOFF_MS << attempt;
    if (c->retry_after_s > 0 && c->retry_after_s * 1000 > ms) {
        ms = c->retry_after_s * 1000;
    }
    if (ms > PUBLISH_BACKOFF_MAX_MS) {
        ms = PUBLISH_BACKOFF_MAX_MS;
    }
    struct timespec ts = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* Sends a publish body and converts the answer; `keyed`: every event of the body has an
 * idempotency key, so a retryable failure is retried (PUBLISH_RETRIES times at most). An
 * answer of 200 after a retry is the first attempt's events, found through their keys. */
static int publish_body(struct roost_client *c, const char *text, size_t len, bool keyed,
                        struct roost_events **out)
{
    int rc;
    for (int attempt = 0;; attempt++) {
        json_t *resp = NULL;
        rc = sdk_request(c, "POST", "/api/v1/events", text, len, 0, &resp);
        if (rc == ROOST_OK) {
            rc = sdk_events_from_response(resp, out);
            if (rc != ROOST_OK) {
                rc = sdk_shape_fail(c, rc, "publish");
            } else {
                (*out)->duplicate = c->http_status == 200;
            }
        }
        json_decref(resp);
        if (!keyed || attempt == PUBLISH_RETRIES || !retryable(rc)) {
            return rc;
        }
        backoff(c, attempt);
    }
}

/* True when the body (one event object, or {"events":[...]}) gives every event a key. */
static bool body_keyed(const json_t *body)
{
    const json_t *list = json_object_get(body, "events");
    if (list == NULL) {
        return json_is_string(json_object_get(body, "idempotency_key"));
    }
    size_t i;
    const json_t *ev;
    json_array_foreach(list, i, ev)
    {
        if (!json_is_string(json_object_get(ev, "idempotency_key"))) {
            return false;
        }
    }
    return json_array_size(list) > 0;
}

static int publish_json_value(struct roost_client *c, const json_t *body, struct roost_events **out)
{
    char *text = sdk_json_dump(body);
    if (text == NULL) {
        return sdk_fail(c, ROOST_ENOMEM, "out of memory");
    }
    int rc = publish_body(c, text, strlen(text), true, out);
    free(text);
    return rc;
}

int roost_publish(struct roost_client *c, const struct roost_message *msg,
                  struct roost_events **out)
{
    if (out != NULL) {
        *out = NULL;
    }
    if (c == NULL || msg == NULL || out == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    json_t *ev = NULL;
    int rc = message_to_json(c, msg, 0, &ev);
    if (rc == ROOST_OK) {
        rc = publish_json_value(c, ev, out);
    }
    json_decref(ev);
    return rc;
}

int roost_publish_batch(struct roost_client *c, const struct roost_message *msgs, size_t n,
                        struct roost_events **out)
{
    if (out != NULL) {
        *out = NULL;
    }
    if (c == NULL || out == NULL || (msgs == NULL && n > 0)) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    if (n == 0) {
        return sdk_fail(c, ROOST_EBATCH, "events must be a non-empty list");
    }
    json_t *body = json_object();
    json_t *list = json_array();
    int rc = ROOST_OK;
    if (body == NULL || list == NULL || json_object_set(body, "events", list) != 0) {
        rc = sdk_fail(c, ROOST_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        json_t *ev = NULL;
        if ((rc = message_to_json(c, &msgs[i], i, &ev)) != ROOST_OK) {
            goto out;
        }
        if (json_array_append_new(list, ev) != 0) {
            rc = sdk_fail(c, ROOST_ENOMEM, "out of memory");
            goto out;
        }
    }
    rc = publish_json_value(c, body, out);
out:
    json_decref(list);
    json_decref(body);
    return rc;
}

int roost_publish_json(struct roost_client *c, const char *body_json, struct roost_events **out)
{
    if (out != NULL) {
        *out = NULL;
    }
    if (c == NULL || body_json == NULL || out == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    json_t *check = NULL;
    int rc = sdk_parse_object(body_json, &check);
    bool keyed = rc == ROOST_OK && body_keyed(check);
    json_decref(check);
    if (rc != ROOST_OK) {
        return sdk_fail(c, rc == ROOST_EJSON ? ROOST_EJSON : rc,
                        "the publish body must be a JSON object (%s)", roost_strerror(rc));
    }
    /* Sent byte for byte as given: the server is the judge of its fields. Retried only when
     * every event carries its own idempotency key (none is added to a body given as text). */
    return publish_body(c, body_json, strlen(body_json), keyed, out);
}
