/* SPDX-License-Identifier: MIT */
/* Shortcuts for the Roost API calls most integration tests make (see harness.h). */
#include <stdarg.h>
#include <stdlib.h>

#include "harness/harness.h"

#include "common/banned.h"

/* A malloc'd vprintf (aborts on OOM, as h_fmt). */
static char *vfmt(const char *fmt, va_list ap)
{
    va_list again;
    va_copy(again, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *out = malloc((size_t)n + 1);
    if (!out) {
        abort();
    }
    vsnprintf(out, (size_t)n + 1, fmt, again);
    va_end(again);
    return out;
}

/* h_callj with its path formatted. */
static long call_path(struct h_client *c, const char *method, const char *token, json_t *body,
                      json_t **out, const char *path)
{
    char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    struct h_response r;
    h_request(c, method, path, token, text, text ? strlen(text) : 0, NULL, &r);
    long status = r.status;
    if (out) {
        *out = r.json;
        r.json = NULL;
    }
    h_response_cleanup(&r);
    free(text);
    return status;
}

long h_callj(struct h_client *c, const char *method, const char *token, json_t *body, json_t **out,
             const char *path_fmt, ...)
{
    va_list ap;
    va_start(ap, path_fmt);
    char *path = vfmt(path_fmt, ap);
    va_end(ap);
    long status = call_path(c, method, token, body, out, path);
    free(path);
    return status;
}

void h_expect_error(struct h_client *c, const char *method, const char *token, json_t *body,
                    long status, const char *code, const char *path_fmt, ...)
{
    va_list ap;
    va_start(ap, path_fmt);
    char *path = vfmt(path_fmt, ap);
    va_end(ap);
    json_t *res = NULL;
    long got = call_path(c, method, token, body, &res, path);
    if (got == status) {
        check_pass();
    } else {
        check_fail(__FILE__, __LINE__, "%s %s: status %ld, want %ld", method, path, got, status);
    }
    const char *got_code = h_error_code(res);
    if (got_code != NULL && strcmp(got_code, code) == 0) {
        check_pass();
    } else {
        check_fail(__FILE__, __LINE__, "%s %s: error code %s, want %s", method, path,
                   got_code ? got_code : "(none)", code);
    }
    json_decref(res);
    free(path);
}

int64_t h_publish(struct h_client *c, const char *token, const char *agent, json_t *payload,
                  json_t *extra, char *event_id)
{
    json_t *ev = json_pack("{s:[s], s:o}", "recipients", agent, "payload",
                           payload ? payload : json_object());
    if (extra) {
        json_object_update(ev, extra);
        json_decref(extra);
    }
    json_t *res = NULL;
    long st = h_callj(c, "POST", token, ev, &res, "/api/v1/events");
    json_t *e0 = h_at(json_object_get(res, "events"), 0);
    int64_t seq = (st == 201 || st == 200) && e0 ? (int64_t)h_int(e0, "sequence_number")
                  : st > 0                       ? -st
                                                 : -1;
    if (event_id) {
        snprintf(event_id, 31, "%s", e0 && h_str(e0, "event_id") ? h_str(e0, "event_id") : "");
    }
    json_decref(res);
    return seq;
}

json_t *h_claim(struct h_client *c, const char *token, const char *agent, int limit, int lease_s,
                const char *consumer)
{
    json_t *body = json_pack("{s:i}", "limit", limit);
    if (lease_s > 0) {
        json_object_set_new(body, "lease_s", json_integer(lease_s));
    }
    if (consumer) {
        json_object_set_new(body, "consumer", json_string(consumer));
    }
    json_t *res = NULL;
    long st = h_callj(c, "POST", token, body, &res, "/api/v1/agents/%s/inbox/claim", agent);
    json_t *events = st == 200 ? json_incref(json_object_get(res, "events")) : NULL;
    json_decref(res);
    return events;
}

long h_ack(struct h_client *c, const char *token, const char *agent, const char *event_id,
           const char *lease_token)
{
    return h_callj(c, "POST", token, json_pack("{s:s}", "lease_token", lease_token), NULL,
                   "/api/v1/agents/%s/inbox/%s/ack", agent, event_id);
}

json_t *h_inbox(struct h_client *c, const char *token, const char *agent, int64_t after, int limit,
                long *status)
{
    json_t *res = NULL;
    long st =
        h_callj(c, "GET", token, NULL, &res, "/api/v1/agents/%s/inbox?after_cursor=%lld&limit=%d",
                agent, (long long)after, limit);
    if (status) {
        *status = st;
    }
    return res;
}

const char *h_str(const json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

json_int_t h_int(const json_t *obj, const char *key)
{
    return json_integer_value(json_object_get(obj, key));
}

json_t *h_at(const json_t *arr, size_t i)
{
    return json_array_get(arr, i);
}
