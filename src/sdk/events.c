/* SPDX-License-Identifier: MIT */
/* Converting the server's event and agent objects into the SDK's result structures, and freeing
 * them. Every string is copied; nothing borrows from the parsed JSON. */
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "sdk/sdk.h"

#include "common/banned.h"

char *sdk_json_dump(const json_t *v)
{
    /* jansson prints reals with 17 significant digits (0.1 → 0.10000000000000001). Try 15 first
     * and keep it when it reads back as the same values, which is the common case. */
    const size_t base = JSON_COMPACT | JSON_ENCODE_ANY;
    char *text = json_dumps(v, base | JSON_REAL_PRECISION(15));
    if (text == NULL) {
        return NULL;
    }
    json_error_t err;
    json_t *back = json_loads(text, JSON_DECODE_ANY, &err);
    bool same = back != NULL && json_equal(back, v);
    json_decref(back);
    if (same) {
        return text;
    }
    free(text);
    return json_dumps(v, base);
}

int sdk_dup_string_member(const json_t *obj, const char *key, char **out)
{
    *out = NULL;
    json_t *v = json_object_get(obj, key);
    if (v == NULL || json_is_null(v)) {
        return ROOST_OK;
    }
    if (!json_is_string(v)) {
        return ROOST_EPROTO;
    }
    /* json_string_length: strings with embedded NULs were refused by the parser. */
    size_t n = json_string_length(v);
    char *p = malloc(n + 1);
    if (p == NULL) {
        return ROOST_ENOMEM;
    }
    memcpy(p, json_string_value(v), n + 1);
    *out = p;
    return ROOST_OK;
}

/* An optional integer member: `def` when absent or null, ROOST_EPROTO for another type. */
static int int_member(const json_t *obj, const char *key, int64_t def, int64_t *out)
{
    json_t *v = json_object_get(obj, key);
    *out = def;
    if (v == NULL || json_is_null(v)) {
        return ROOST_OK;
    }
    if (!json_is_integer(v)) {
        return ROOST_EPROTO;
    }
    *out = (int64_t)json_integer_value(v);
    return ROOST_OK;
}

/* Same, narrowed to int (values outside int's range are a protocol error). */
static int small_int_member(const json_t *obj, const char *key, int *out)
{
    int64_t v;
    int rc = int_member(obj, key, 0, &v);
    if (rc == ROOST_OK && (v < -2147483647 || v > 2147483647)) {
        rc = ROOST_EPROTO;
    }
    *out = rc == ROOST_OK ? (int)v : 0;
    return rc;
}

void sdk_event_free(struct roost_event *ev)
{
    if (ev == NULL) {
        return;
    }
    free(ev->event_id);
    free(ev->agent_id);
    free(ev->status);
    free(ev->correlation_id);
    free(ev->payload);
    free(ev->created_at);
    free(ev->available_at);
    free(ev->expires_at);
    free(ev->lease_token);
    free(ev->claim_expires_at);
    free(ev->last_error);
    free(ev->json);
    free(ev);
}

int sdk_event_from_json(const json_t *obj, struct roost_event **out)
{
    *out = NULL;
    if (!json_is_object(obj) || !json_is_string(json_object_get(obj, "event_id"))) {
        return ROOST_EPROTO;
    }
    struct roost_event *ev = calloc(1, sizeof *ev);
    if (ev == NULL) {
        return ROOST_ENOMEM;
    }
    int rc;
#define STR(field)                                                                                 \
    if ((rc = sdk_dup_string_member(obj, #field, &ev->field)) != ROOST_OK) {                       \
        goto fail;                                                                                 \
    }
    STR(event_id)
    STR(agent_id)
    STR(status)
    STR(correlation_id)
    STR(created_at)
    STR(available_at)
    STR(expires_at)
    STR(lease_token)
    STR(claim_expires_at)
    STR(last_error)
#undef STR
    if ((rc = int_member(obj, "sequence_number", 0, &ev->sequence_number)) != ROOST_OK ||
        (rc = small_int_member(obj, "priority", &ev->priority)) != ROOST_OK ||
        (rc = small_int_member(obj, "attempts", &ev->attempts)) != ROOST_OK ||
        (rc = small_int_member(obj, "timeouts", &ev->timeouts)) != ROOST_OK ||
        (rc = small_int_member(obj, "nacks", &ev->nacks)) != ROOST_OK) {
        goto fail;
    }
    json_t *payload = json_object_get(obj, "payload");
    if (payload != NULL && !json_is_null(payload)) {
        if ((ev->payload = sdk_json_dump(payload)) == NULL) {
            rc = ROOST_ENOMEM;
            goto fail;
        }
    }
    if ((ev->json = sdk_json_dump(obj)) == NULL) {
        rc = ROOST_ENOMEM;
        goto fail;
    }
    *out = ev;
    return ROOST_OK;
fail:
    sdk_event_free(ev);
    return rc;
}

int sdk_events_from_response(const json_t *resp, struct roost_events **out)
{
    *out = NULL;
    json_t *arr = json_object_get(resp, "events");
    if (!json_is_array(arr)) {
        return ROOST_EPROTO;
    }
    struct roost_events *evs = calloc(1, sizeof *evs);
    if (evs == NULL) {
        return ROOST_ENOMEM;
    }
    evs->head = -1;
    size_t n = json_array_size(arr);
    int rc = ROOST_OK;
    if (n > 0) {
        evs->items = calloc(n, sizeof *evs->items);
        if (evs->items == NULL) {
            rc = ROOST_ENOMEM;
            goto fail;
        }
    }
    for (size_t i = 0; i < n; i++) {
        rc = sdk_event_from_json(json_array_get(arr, i), &evs->items[i]);
        if (rc != ROOST_OK) {
            goto fail;
        }
        evs->count++;
    }
    *out = evs;
    return ROOST_OK;
fail:
    roost_events_free(evs);
    return rc;
}

void roost_events_free(struct roost_events *evs)
{
    if (evs == NULL) {
        return;
    }
    for (size_t i = 0; i < evs->count; i++) {
        sdk_event_free(evs->items[i]);
    }
    free(evs->items);
    free(evs->next_page);
    free(evs);
}

static void agent_info_free(struct roost_agent_info *a)
{
    if (a == NULL) {
        return;
    }
    free(a->agent_id);
    free(a->json);
    free(a);
}

static int agent_info_from_json(const json_t *obj, struct roost_agent_info **out)
{
    *out = NULL;
    if (!json_is_object(obj) || !json_is_string(json_object_get(obj, "agent_id"))) {
        return ROOST_EPROTO;
    }
    struct roost_agent_info *a = calloc(1, sizeof *a);
    if (a == NULL) {
        return ROOST_ENOMEM;
    }
    int rc;
    if ((rc = sdk_dup_string_member(obj, "agent_id", &a->agent_id)) != ROOST_OK ||
        (rc = int_member(obj, "head", -1, &a->head)) != ROOST_OK ||
        (rc = int_member(obj, "pending", -1, &a->pending)) != ROOST_OK ||
        (rc = int_member(obj, "scheduled", -1, &a->scheduled)) != ROOST_OK ||
        (rc = int_member(obj, "claimed", -1, &a->claimed)) != ROOST_OK ||
        (rc = int_member(obj, "quarantined", -1, &a->quarantined)) != ROOST_OK) {
        goto fail;
    }
    if ((a->json = sdk_json_dump(obj)) == NULL) {
        rc = ROOST_ENOMEM;
        goto fail;
    }
    *out = a;
    return ROOST_OK;
fail:
    agent_info_free(a);
    return rc;
}

int sdk_agents_from_response(const json_t *resp, struct roost_agents **out)
{
    *out = NULL;
    json_t *arr = json_object_get(resp, "agents");
    if (!json_is_array(arr)) {
        return ROOST_EPROTO;
    }
    struct roost_agents *list = calloc(1, sizeof *list);
    if (list == NULL) {
        return ROOST_ENOMEM;
    }
    size_t n = json_array_size(arr);
    int rc = ROOST_OK;
    if (n > 0 && (list->items = calloc(n, sizeof *list->items)) == NULL) {
        rc = ROOST_ENOMEM;
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        if ((rc = agent_info_from_json(json_array_get(arr, i), &list->items[i])) != ROOST_OK) {
            goto fail;
        }
        list->count++;
    }
    if ((rc = sdk_dup_string_member(resp, "next", &list->next_page)) != ROOST_OK) {
        goto fail;
    }
    *out = list;
    return ROOST_OK;
fail:
    roost_agents_free(list);
    return rc;
}

void roost_agents_free(struct roost_agents *agents)
{
    if (agents == NULL) {
        return;
    }
    for (size_t i = 0; i < agents->count; i++) {
        agent_info_free(agents->items[i]);
    }
    free(agents->items);
    free(agents->next_page);
    free(agents);
}
