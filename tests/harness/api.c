/* SPDX-License-Identifier: MIT */
/* Shortcuts for the Roost API calls most integration tests make (see harness.h). */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

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

static void *claim_waiting(void *arg)
{
    struct h_waiting_claim *c = arg;
    struct h_client *cl = h_client_new(c->url);
    char *path = h_fmt("/api/v1/agents/%s/inbox/claim", c->agent);
    char *body = h_fmt("{\"wait_s\":%d,\"limit\":1}", c->wait_s);
    struct h_response r;
    if (h_request(cl, "POST", path, c->token, body, strlen(body), NULL, &r) == 0) {
        c->status = r.status;
        json_t *e0 = h_at(json_object_get(r.json, "events"), 0);
        snprintf(c->event_id, sizeof c->event_id, "%s", e0 ? h_str(e0, "event_id") : "");
        snprintf(c->lease_token, sizeof c->lease_token, "%s",
                 e0 && h_str(e0, "lease_token") ? h_str(e0, "lease_token") : "");
        c->attempts = e0 ? h_int(e0, "attempts") : 0;
        h_response_cleanup(&r);
    }
    free(body);
    free(path);
    h_client_free(cl);
    return NULL;
}

void h_claim_start(struct h_waiting_claim *c)
{
    c->status = -1;
    if (pthread_create(&c->thread, NULL, claim_waiting, c) != 0) {
        abort();
    }
}

void h_claim_join(struct h_waiting_claim *c)
{
    pthread_join(c->thread, NULL);
}

bool h_wait_parked(struct h_client *c, double n)
{
    bool ok;
    H_WAIT_UNTIL(ok, 20000, h_metric(c, "roost_long_polls") == n);
    return ok;
}

char *h_scrape(struct h_client *c, const char *bearer)
{
    struct h_response r;
    char *hdr = bearer ? h_fmt("Authorization: Bearer %s", bearer) : NULL;
    struct h_req_opts o = {.extra_header = hdr};
    char *body = NULL;
    if (h_request(c, "GET", "/metrics", NULL, NULL, 0, &o, &r) == 0 && r.status == 200) {
        body = r.body;
        r.body = NULL;
    }
    h_response_cleanup(&r);
    free(hdr);
    return body;
}

double h_sample(const char *text, const char *series)
{
    size_t n = strlen(series);
    for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
        if (strncmp(p, series, n) == 0 && p[n] == ' ') {
            return strtod(p + n + 1, NULL);
        }
    }
    return -1;
}

double h_metric(struct h_client *c, const char *series)
{
    char *m = h_scrape(c, NULL);
    double v = h_sample(m, series);
    free(m);
    return v;
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
