/* SPDX-License-Identifier: MIT */
/* The agent side of the API: cursor reads, claims, ack / release / extend of leases, release-all
 * and the full state sync (DESIGN §5). */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "sdk/sdk.h"

#include "common/banned.h"

int roost_inbox_read(struct roost_client *c, const char *agent_id, int64_t after_cursor, int limit,
                     int wait_s, struct roost_events **out)
{
    if (out != NULL) {
        *out = NULL;
    }
    if (c == NULL || out == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    if (after_cursor < 0) {
        return sdk_fail(c, ROOST_ECURSOR, "after_cursor must be >= 0");
    }
    if (limit < 0 || wait_s < 0) {
        return sdk_fail(c, limit < 0 ? ROOST_ELIMIT : ROOST_EWAIT, "limit and wait_s must be >= 0");
    }
    json_t *resp = NULL;
    struct dynbuf p;
    dynbuf_init(&p, SDK_MAX_URL_BYTES * 4);
    int rc = sdk_path_agent(&p, agent_id, "/inbox");
    dynbuf_addf(&p, "?after_cursor=%" PRId64, after_cursor);
    if (limit > 0) {
        dynbuf_addf(&p, "&limit=%d", limit);
    }
    if (wait_s > 0) {
        dynbuf_addf(&p, "&wait_s=%d", wait_s);
    }
    if (rc != ROOST_OK || (rc = sdk_buf_rc(&p)) != ROOST_OK) {
        rc = sdk_path_fail(c, rc);
        goto out;
    }
    rc = sdk_request(c, "GET", p.s, NULL, 0, wait_s, &resp);
    if (rc != ROOST_OK) {
        goto out;
    }
    json_t *next = json_object_get(resp, "next_cursor");
    json_t *more = json_object_get(resp, "has_more");
    if (!json_is_integer(next) || (more != NULL && !json_is_boolean(more))) {
        rc = sdk_shape_fail(c, ROOST_EPROTO, "inbox read");
        goto out;
    }
    if ((rc = sdk_events_from_response(resp, out)) != ROOST_OK) {
        rc = sdk_shape_fail(c, rc, "inbox read");
        goto out;
    }
    (*out)->next_cursor = (int64_t)json_integer_value(next);
    (*out)->has_more = json_is_true(more);
    json_t *head = json_object_get(resp, "head");
    if (json_is_integer(head)) {
        (*out)->head = (int64_t)json_integer_value(head);
    }
out:
    json_decref(resp);
    dynbuf_cleanup(&p);
    return rc;
}

int roost_inbox_peek(struct roost_client *c, const char *agent_id, struct roost_events **out)
{
    if (out != NULL) {
        *out = NULL;
    }
    if (c == NULL || out == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    json_t *resp = NULL;
    struct dynbuf p;
    dynbuf_init(&p, SDK_MAX_URL_BYTES * 4);
    int rc = sdk_path_agent(&p, agent_id, "/inbox/peek");
    if (rc != ROOST_OK || (rc = sdk_buf_rc(&p)) != ROOST_OK) {
        rc = sdk_path_fail(c, rc);
        goto out;
    }
    if ((rc = sdk_request(c, "GET", p.s, NULL, 0, 0, &resp)) != ROOST_OK) {
        goto out;
    }
    /* {"event":{…}} or {"event":null}: a list of one or none. */
    json_t *ev = json_object_get(resp, "event");
    if (ev == NULL || !(json_is_null(ev) || json_is_object(ev))) {
        rc = sdk_shape_fail(c, ROOST_EPROTO, "inbox peek");
        goto out;
    }
    struct roost_events *evs = calloc(1, sizeof *evs);
    if (evs == NULL) {
        rc = sdk_fail(c, ROOST_ENOMEM, "out of memory");
        goto out;
    }
    evs->head = -1;
    if (json_is_object(ev)) {
        if ((evs->items = calloc(1, sizeof *evs->items)) == NULL) {
            rc = ROOST_ENOMEM;
        } else if ((rc = sdk_event_from_json(ev, &evs->items[0])) == ROOST_OK) {
            evs->count = 1;
        }
        if (rc != ROOST_OK) {
            roost_events_free(evs);
            rc = sdk_shape_fail(c, rc, "inbox peek");
            goto out;
        }
    }
    *out = evs;
out:
    json_decref(resp);
    dynbuf_cleanup(&p);
    return rc;
}

int roost_inbox_claim(struct roost_client *c, const char *agent_id, int limit, int lease_s,
                      int wait_s, const char *consumer, struct roost_events **out)
{
    if (out != NULL) {
        *out = NULL;
    }
    if (c == NULL || out == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    if (limit < 0) {
        return sdk_fail(c, ROOST_ELIMIT, "limit must be >= 0");
    }
    if (lease_s < 0) {
        return sdk_fail(c, ROOST_ELEASE, "lease_s must be >= 0");
    }
    if (wait_s < 0) {
        return sdk_fail(c, ROOST_EWAIT, "wait_s must be >= 0");
    }
    json_t *resp = NULL;
    json_t *body = json_object();
    struct dynbuf p;
    dynbuf_init(&p, SDK_MAX_URL_BYTES * 4);
    int rc = sdk_path_agent(&p, agent_id, "/inbox/claim");
    if (rc != ROOST_OK) {
        rc = sdk_path_fail(c, rc);
        goto out;
    }
    if (body == NULL || (limit > 0 && !sdk_put(body, "limit", json_integer(limit))) ||
        (lease_s > 0 && !sdk_put(body, "lease_s", json_integer(lease_s))) ||
        (wait_s > 0 && !sdk_put(body, "wait_s", json_integer(wait_s)))) {
        rc = sdk_fail(c, ROOST_ENOMEM, "out of memory");
        goto out;
    }
    /* json_string refuses invalid UTF-8. */
    if (consumer != NULL && !sdk_put(body, "consumer", json_string(consumer))) {
        rc = sdk_fail(c, ROOST_ECONSUMER, "consumer must be UTF-8");
        goto out;
    }
    rc = sdk_request_json(c, "POST", p.s, body, wait_s, &resp);
    if (rc != ROOST_OK) {
        goto out;
    }
    if ((rc = sdk_events_from_response(resp, out)) != ROOST_OK) {
        rc = sdk_shape_fail(c, rc, "claim");
    } else {
        /* The batch ended at limit or at the server's byte budget (an older roostd omits it). */
        (*out)->has_more = json_is_true(json_object_get(resp, "has_more"));
    }
out:
    json_decref(resp);
    json_decref(body);
    dynbuf_cleanup(&p);
    return rc;
}

/* POSTs `body` to …/inbox/{event_id}/{action}; *resp_out (optional) gets the answer. */
static int event_call(struct roost_client *c, const char *agent_id, const char *event_id,
                      const char *action, const json_t *body, json_t **resp_out)
{
    struct dynbuf p;
    dynbuf_init(&p, SDK_MAX_URL_BYTES * 4);
    int rc = sdk_path_event(&p, agent_id, event_id, action);
    if (rc != ROOST_OK) {
        rc = sdk_path_fail(c, rc);
    } else {
        rc = sdk_request_json(c, "POST", p.s, body, 0, resp_out);
    }
    dynbuf_cleanup(&p);
    return rc;
}

int roost_event_ack(struct roost_client *c, const char *agent_id, const char *event_id,
                    const char *lease_token)
{
    if (c == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    if (!sdk_id_ok(lease_token)) {
        return sdk_fail(c, ROOST_ELEASETOKEN, "lease_token is missing or too long");
    }
    json_t *body = json_object();
    if (body == NULL || !sdk_put(body, "lease_token", json_string(lease_token))) {
        json_decref(body);
        return sdk_fail(c, body == NULL ? ROOST_ENOMEM : ROOST_ELEASETOKEN,
                        "cannot build the ack request");
    }
    int rc = event_call(c, agent_id, event_id, "ack", body, NULL);
    json_decref(body);
    return rc;
}

/* Fills one batch item's outcome from its result object. */
static int ack_item_rc(const json_t *result)
{
    json_t *err = json_object_get(result, "error");
    if (json_is_object(err)) {
        const char *code = json_string_value(json_object_get(err, "code"));
        int rc = roost_err_from_code(code);
        return rc != ROOST_OK ? rc : ROOST_EPROTO;
    }
    const char *status = json_string_value(json_object_get(result, "status"));
    return status != NULL && strcmp(status, "completed") == 0 ? ROOST_OK : ROOST_EPROTO;
}

/* The result for event_id: results[hint] when it matches (the usual case: same order), else a
 * search. NULL when absent. */
static const json_t *find_result(const json_t *results, size_t hint, const char *event_id)
{
    const json_t *r = json_array_get(results, hint);
    const char *id = json_string_value(json_object_get(r, "event_id"));
    if (id != NULL && strcmp(id, event_id) == 0) {
        return r;
    }
    size_t i;
    json_t *v;
    json_array_foreach(results, i, v)
    {
        id = json_string_value(json_object_get(v, "event_id"));
        if (id != NULL && strcmp(id, event_id) == 0) {
            return v;
        }
    }
    return NULL;
}

int roost_events_ack(struct roost_client *c, const char *agent_id, struct roost_ack *acks, size_t n,
                     size_t *n_failed)
{
    if (n_failed != NULL) {
        *n_failed = n;
    }
    if (c == NULL || (acks == NULL && n > 0)) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    json_t *resp = NULL;
    json_t *body = json_object();
    json_t *list = json_array();
    struct dynbuf p;
    dynbuf_init(&p, SDK_MAX_URL_BYTES * 4);
    int rc = ROOST_OK;
    if (n == 0) {
        rc = sdk_fail(c, ROOST_EACKS, "acks must be a non-empty list");
        goto out;
    }
    if ((rc = sdk_path_agent(&p, agent_id, "/inbox/ack")) != ROOST_OK) {
        rc = sdk_path_fail(c, rc);
        goto out;
    }
    if (body == NULL || list == NULL || json_object_set(body, "acks", list) != 0) {
        rc = sdk_fail(c, ROOST_ENOMEM, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        if (acks[i].event_id == NULL || !sdk_id_ok(acks[i].lease_token)) {
            rc = sdk_fail(c, acks[i].event_id == NULL ? ROOST_EEVENTID : ROOST_ELEASETOKEN,
                          "acks[%zu] lacks an event_id or a lease_token", i);
            goto out;
        }
        json_t *item = json_object();
        if (item == NULL || !sdk_put(item, "event_id", json_string(acks[i].event_id)) ||
            !sdk_put(item, "lease_token", json_string(acks[i].lease_token)) ||
            json_array_append_new(list, item) != 0) {
            rc = sdk_fail(c, ROOST_EINVAL, "acks[%zu] cannot be encoded (UTF-8?)", i);
            goto out;
        }
    }
    if ((rc = sdk_request_json(c, "POST", p.s, body, 0, &resp)) != ROOST_OK) {
        goto out;
    }
    json_t *results = json_object_get(resp, "results");
    if (!json_is_array(results)) {
        rc = sdk_shape_fail(c, ROOST_EPROTO, "batch ack");
        goto out;
    }
    size_t failed = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *r = find_result(results, i, acks[i].event_id);
        acks[i].rc = r != NULL ? ack_item_rc(r) : ROOST_EPROTO;
        failed += acks[i].rc != ROOST_OK;
    }
    if (n_failed != NULL) {
        *n_failed = failed;
    }
out:
    if (rc != ROOST_OK) {
        for (size_t i = 0; i < n; i++) {
            acks[i].rc = rc;
        }
    }
    json_decref(resp);
    json_decref(body);
    json_decref(list);
    dynbuf_cleanup(&p);
    return rc;
}

const char *roost_release_reason_name(enum roost_release_reason reason)
{
    switch (reason) {
    case ROOST_RELEASE_TRANSIENT:
        return "transient";
    case ROOST_RELEASE_SHUTDOWN:
        return "shutdown";
    case ROOST_RELEASE_POISON:
        return "poison";
    case ROOST_RELEASE_DEFAULT:
        break;
    }
    return NULL;
}

int roost_release_reason_parse(const char *name, enum roost_release_reason *out)
{
    static const enum roost_release_reason all[] = {ROOST_RELEASE_TRANSIENT, ROOST_RELEASE_SHUTDOWN,
                                                    ROOST_RELEASE_POISON};
    for (size_t i = 0; name != NULL && out != NULL && i < sizeof all / sizeof all[0]; i++) {
        if (strcmp(name, roost_release_reason_name(all[i])) == 0) {
            *out = all[i];
            return ROOST_OK;
        }
    }
    return ROOST_EREASON;
}

int roost_event_release(struct roost_client *c, const char *agent_id, const char *event_id,
                        const char *lease_token, int64_t delay_s, enum roost_release_reason reason,
                        const char *error_text)
{
    if (c == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    if (!sdk_id_ok(lease_token)) {
        return sdk_fail(c, ROOST_ELEASETOKEN, "lease_token is missing or too long");
    }
    if (delay_s < 0) {
        return sdk_fail(c, ROOST_EDELAY, "delay_s must be >= 0");
    }
    const char *reason_name = roost_release_reason_name(reason);
    if (reason != ROOST_RELEASE_DEFAULT && reason_name == NULL) {
        return sdk_fail(c, ROOST_EREASON, "unknown release reason %d", (int)reason);
    }
    json_t *body = json_object();
    int rc = ROOST_OK;
    if (body == NULL || !sdk_put(body, "lease_token", json_string(lease_token)) ||
        (delay_s > 0 && !sdk_put(body, "delay_s", json_integer((json_int_t)delay_s))) ||
        (reason_name != NULL && !sdk_put(body, "reason", json_string(reason_name)))) {
        rc = sdk_fail(c, ROOST_ENOMEM, "cannot build the release request");
        goto out;
    }
    if (error_text != NULL && !sdk_put(body, "error", json_string(error_text))) {
        rc = sdk_fail(c, ROOST_EERRORTEXT, "error text must be UTF-8");
        goto out;
    }
    rc = event_call(c, agent_id, event_id, "release", body, NULL);
out:
    json_decref(body);
    return rc;
}

int roost_event_extend(struct roost_client *c, const char *agent_id, const char *event_id,
                       const char *lease_token, int lease_s, char **claim_expires_at_out)
{
    if (claim_expires_at_out != NULL) {
        *claim_expires_at_out = NULL;
    }
    if (c == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    if (!sdk_id_ok(lease_token)) {
        return sdk_fail(c, ROOST_ELEASETOKEN, "lease_token is missing or too long");
    }
    if (lease_s < 0) {
        return sdk_fail(c, ROOST_ELEASE, "lease_s must be >= 0");
    }
    json_t *resp = NULL;
    json_t *body = json_object();
    int rc = ROOST_OK;
    if (body == NULL || !sdk_put(body, "lease_token", json_string(lease_token)) ||
        (lease_s > 0 && !sdk_put(body, "lease_s", json_integer(lease_s)))) {
        rc = sdk_fail(c, ROOST_ENOMEM, "cannot build the extend request");
        goto out;
    }
    rc = event_call(c, agent_id, event_id, "extend", body, &resp);
    if (rc == ROOST_OK && claim_expires_at_out != NULL) {
        rc = sdk_dup_string_member(resp, "claim_expires_at", claim_expires_at_out);
        if (rc != ROOST_OK || *claim_expires_at_out == NULL) {
            rc = sdk_shape_fail(c, rc == ROOST_OK ? ROOST_EPROTO : rc, "extend");
        }
    }
out:
    json_decref(resp);
    json_decref(body);
    return rc;
}

int roost_inbox_release_all(struct roost_client *c, const char *agent_id, const char *consumer,
                            int64_t *released_out)
{
    if (released_out != NULL) {
        *released_out = 0;
    }
    if (c == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    json_t *resp = NULL;
    json_t *body = NULL;
    struct dynbuf p;
    dynbuf_init(&p, SDK_MAX_URL_BYTES * 4);
    int rc = sdk_path_agent(&p, agent_id, "/inbox/release-all");
    if (rc != ROOST_OK) {
        rc = sdk_path_fail(c, rc);
        goto out;
    }
    if (consumer != NULL) {
        body = json_object();
        if (body == NULL || !sdk_put(body, "consumer", json_string(consumer))) {
            rc = sdk_fail(c, body == NULL ? ROOST_ENOMEM : ROOST_ECONSUMER,
                          "cannot build the release-all request");
            goto out;
        }
    }
    if ((rc = sdk_request_json(c, "POST", p.s, body, 0, &resp)) != ROOST_OK) {
        goto out;
    }
    json_t *released = json_object_get(resp, "released");
    if (!json_is_integer(released)) {
        rc = sdk_shape_fail(c, ROOST_EPROTO, "release-all");
        goto out;
    }
    if (released_out != NULL) {
        *released_out = (int64_t)json_integer_value(released);
    }
out:
    json_decref(resp);
    json_decref(body);
    dynbuf_cleanup(&p);
    return rc;
}

int roost_state_get(struct roost_client *c, const char *agent_id, char **state_json_out,
                    int64_t *cursor_out)
{
    if (state_json_out != NULL) {
        *state_json_out = NULL;
    }
    if (cursor_out != NULL) {
        *cursor_out = 0;
    }
    if (c == NULL || state_json_out == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    json_t *resp = NULL;
    struct dynbuf p;
    dynbuf_init(&p, SDK_MAX_URL_BYTES * 4);
    int rc = sdk_path_agent(&p, agent_id, "/state");
    if (rc != ROOST_OK) {
        rc = sdk_path_fail(c, rc);
        goto out;
    }
    if ((rc = sdk_request(c, "GET", p.s, NULL, 0, 0, &resp)) != ROOST_OK) {
        goto out;
    }
    json_t *state = json_object_get(resp, "state");
    json_t *cursor = json_object_get(resp, "cursor");
    if (!json_is_integer(cursor) ||
        (state != NULL && !json_is_object(state) && !json_is_null(state))) {
        rc = sdk_shape_fail(c, ROOST_EPROTO, "state");
        goto out;
    }
    /* A state never written reads as {} whether the server sends {} or null. */
    char *text = state != NULL && json_is_object(state) ? sdk_json_dump(state) : sdk_strdup("{}");
    if (text == NULL) {
        rc = sdk_fail(c, ROOST_ENOMEM, "out of memory");
        goto out;
    }
    *state_json_out = text;
    if (cursor_out != NULL) {
        *cursor_out = (int64_t)json_integer_value(cursor);
    }
out:
    json_decref(resp);
    dynbuf_cleanup(&p);
    return rc;
}
