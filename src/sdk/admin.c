/* SPDX-License-Identifier: MIT */
/* The operator API (scope tenant:admin): quarantine list / requeue, the agent list, events by id
 * or correlation id, plus the
 * generic request escape hatch for routes without a dedicated function yet. */
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "sdk/sdk.h"

#include "common/banned.h"

/* Appends "?limit=..&next=.." style paging to a path (first separator `*sep`). */
static void append_page(struct dynbuf *p, char *sep, int limit, const char *page)
{
    if (limit > 0) {
        dynbuf_addf(p, "%climit=%d", *sep, limit);
        *sep = '&';
    }
    if (page != NULL) {
        dynbuf_addf(p, "%cnext=", *sep);
        sdk_add_escaped(p, page);
        *sep = '&';
    }
}

/* The paging arguments every listing checks (after sdk_reset): ROOST_OK or the call's failure. */
static int check_page_args(struct roost_client *c, int limit, const char *page)
{
    if (limit < 0) {
        return sdk_fail(c, ROOST_ELIMIT, "limit must be >= 0");
    }
    if (page != NULL && strlen(page) > SDK_MAX_ID_BYTES) {
        return sdk_fail(c, ROOST_EPAGE, "the page token is too long");
    }
    return ROOST_OK;
}

/* GETs the path in p with the paging appended (first separator sep); *resp gets the answer. */
static int get_page(struct roost_client *c, struct dynbuf *p, char sep, int limit, const char *page,
                    json_t **resp)
{
    append_page(p, &sep, limit, page);
    if (sdk_buf_rc(p) != ROOST_OK) {
        return sdk_path_fail(c, sdk_buf_rc(p));
    }
    return sdk_request(c, "GET", p->s, NULL, 0, 0, resp);
}

/* The start of a listing (have_out: the caller has cleared its output): the client's last error
 * reset, the paging arguments checked. ROOST_OK, ROOST_EINVAL (no client or no output) or the
 * call's failure. */
static int list_call_start(struct roost_client *c, bool have_out, int limit, const char *page)
{
    if (c == NULL || !have_out) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    return check_page_args(c, limit, page);
}

/* The start of a call answering the whole JSON object as text: *json_out cleared, the client's
 * last error reset. ROOST_OK or ROOST_EINVAL (no client or no output). */
static int json_call_start(struct roost_client *c, char **json_out)
{
    if (json_out != NULL) {
        *json_out = NULL;
    }
    if (c == NULL || json_out == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    return ROOST_OK;
}

int roost_admin_quarantine_list(struct roost_client *c, const char *agent_id, int limit,
                                const char *page, struct roost_events **out)
{
    if (out != NULL) {
        *out = NULL;
    }
    int rc = list_call_start(c, out != NULL, limit, page);
    if (rc != ROOST_OK) {
        return rc;
    }
    json_t *resp = NULL;
    struct dynbuf p;
    dynbuf_init(&p, SDK_MAX_URL_BYTES * 4);
    char sep = '?';
    dynbuf_adds(&p, "/api/v1/admin/quarantine");
    if (agent_id != NULL) {
        struct dynbuf check;
        dynbuf_init(&check, SDK_MAX_URL_BYTES * 4);
        rc = sdk_path_agent(&check, agent_id, "");
        dynbuf_cleanup(&check);
        if (rc != ROOST_OK) {
            rc = sdk_path_fail(c, rc);
            goto out;
        }
        dynbuf_adds(&p, "?agent_id=");
        sdk_add_escaped(&p, agent_id);
        sep = '&';
    }
    if ((rc = get_page(c, &p, sep, limit, page, &resp)) != ROOST_OK) {
        goto out;
    }
    if ((rc = sdk_events_from_response(resp, out)) != ROOST_OK ||
        (rc = sdk_dup_string_member(resp, "next", &(*out)->next_page)) != ROOST_OK) {
        roost_events_free(*out);
        *out = NULL;
        rc = sdk_shape_fail(c, rc, "quarantine list");
    }
out:
    json_decref(resp);
    dynbuf_cleanup(&p);
    return rc;
}

int roost_admin_quarantine_requeue(struct roost_client *c, const char *event_id)
{
    if (c == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    if (!sdk_id_ok(event_id)) {
        return sdk_path_fail(c, ROOST_EEVENTID);
    }
    struct dynbuf p;
    dynbuf_init(&p, SDK_MAX_URL_BYTES * 4);
    dynbuf_adds(&p, "/api/v1/admin/quarantine/");
    sdk_add_escaped(&p, event_id);
    dynbuf_adds(&p, "/requeue");
    int rc = sdk_buf_rc(&p) != ROOST_OK ? sdk_path_fail(c, sdk_buf_rc(&p))
                                        : sdk_request(c, "POST", p.s, NULL, 0, 0, NULL);
    dynbuf_cleanup(&p);
    return rc;
}

int roost_admin_agents_list(struct roost_client *c, int limit, const char *page,
                            struct roost_agents **out)
{
    return roost_admin_agents_list_sorted(c, NULL, limit, page, out);
}

int roost_admin_agents_list_sorted(struct roost_client *c, const char *sort, int limit,
                                   const char *page, struct roost_agents **out)
{
    if (out != NULL) {
        *out = NULL;
    }
    int rc = list_call_start(c, out != NULL, limit, page);
    if (rc != ROOST_OK) {
        return rc;
    }
    json_t *resp = NULL;
    struct dynbuf p;
    dynbuf_init(&p, SDK_MAX_URL_BYTES * 4);
    char sep = '?';
    dynbuf_adds(&p, "/api/v1/admin/agents");
    if (sort != NULL) {
        if (strcmp(sort, "agent") != 0 && strcmp(sort, "depth") != 0 && strcmp(sort, "age") != 0) {
            dynbuf_cleanup(&p);
            return sdk_fail(c, ROOST_EINVAL, "sort must be agent, depth or age");
        }
        dynbuf_addf(&p, "?sort=%s", sort);
        sep = '&';
    }
    if ((rc = get_page(c, &p, sep, limit, page, &resp)) != ROOST_OK) {
        goto out;
    }
    if ((rc = sdk_agents_from_response(resp, out)) != ROOST_OK) {
        rc = sdk_shape_fail(c, rc, "agent list");
    }
out:
    json_decref(resp);
    dynbuf_cleanup(&p);
    return rc;
}

/* GET `path` and hand the whole answer object back as compact text. */
static int get_json_text(struct roost_client *c, const char *path, char **json_out)
{
    json_t *resp = NULL;
    int rc = sdk_request(c, "GET", path, NULL, 0, 0, &resp);
    if (rc == ROOST_OK) {
        *json_out = json_dumps(resp, JSON_COMPACT);
        rc = *json_out != NULL ? ROOST_OK : sdk_fail(c, ROOST_ENOMEM, "out of memory");
    }
    json_decref(resp);
    return rc;
}

/* GET prefix + the escaped event_id, the answer as JSON text (an event by id). */
static int get_event_json(struct roost_client *c, const char *prefix, const char *event_id,
                          char **json_out)
{
    int rc = json_call_start(c, json_out);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (!sdk_id_ok(event_id)) {
        return sdk_path_fail(c, ROOST_EEVENTID);
    }
    struct dynbuf p;
    dynbuf_init(&p, SDK_MAX_URL_BYTES * 4);
    dynbuf_adds(&p, prefix);
    sdk_add_escaped(&p, event_id);
    rc = sdk_buf_rc(&p) != ROOST_OK ? sdk_path_fail(c, sdk_buf_rc(&p))
                                    : get_json_text(c, p.s, json_out);
    dynbuf_cleanup(&p);
    return rc;
}

int roost_admin_quarantine_inspect(struct roost_client *c, const char *event_id, char **json_out)
{
    return get_event_json(c, "/api/v1/admin/quarantine/", event_id, json_out);
}

/* Reads a bulk answer {"<key>": N, "more": bool} into the caller's outputs. */
static int count_more(struct roost_client *c, json_t *resp, const char *key, const char *what,
                      int64_t *count_out, bool *more_out)
{
    json_t *n = json_object_get(resp, key);
    if (!json_is_integer(n)) {
        return sdk_shape_fail(c, ROOST_EPROTO, what);
    }
    if (count_out != NULL) {
        *count_out = json_integer_value(n);
    }
    if (more_out != NULL) {
        *more_out = json_is_true(json_object_get(resp, "more"));
    }
    return ROOST_OK;
}
/* The start of a bulk operation: outputs cleared, the client's last error reset, the limit
 * checked. ROOST_OK, ROOST_EINVAL (no client) or ROOST_ELIMIT. */
static int bulk_call_start(struct roost_client *c, int limit, int64_t *count_out, bool *more_out)
{
    if (count_out != NULL) {
        *count_out = 0;
    }
    if (more_out != NULL) {
        *more_out = false;
    }
    if (c == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    if (limit < 0) {
        return sdk_fail(c, ROOST_ELIMIT, "limit must be >= 0");
    }
    return ROOST_OK;
}

/* A bulk operation's body, {"agent_id": .., "limit": ..} with the members given; NULL when out
 * of memory. */
static json_t *bulk_body(const char *agent_id, int limit)
{
    json_t *body = json_object();
    if (body == NULL || (agent_id != NULL && !sdk_put(body, "agent_id", json_string(agent_id))) ||
        (limit > 0 && !sdk_put(body, "limit", json_integer(limit)))) {
        json_decref(body);
        return NULL;
    }
    return body;
}

int roost_admin_quarantine_purge(struct roost_client *c, const char *agent_id, const char *event_id,
                                 int limit, int64_t *purged_out, bool *more_out)
{
    int rc = bulk_call_start(c, limit, purged_out, more_out);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (event_id != NULL && !sdk_id_ok(event_id)) {
        return sdk_path_fail(c, ROOST_EEVENTID);
    }
    if (agent_id != NULL && !sdk_id_ok(agent_id)) {
        return sdk_path_fail(c, ROOST_EAGENTID);
    }
    struct dynbuf p;
    dynbuf_init(&p, SDK_MAX_URL_BYTES * 4);
    json_t *body = NULL, *resp = NULL;
    dynbuf_adds(&p, "/api/v1/admin/quarantine/");
    if (event_id != NULL) {
        sdk_add_escaped(&p, event_id);
        dynbuf_adds(&p, "/purge");
    } else {
        dynbuf_adds(&p, "purge");
        if ((body = bulk_body(agent_id, limit)) == NULL) {
            rc = sdk_fail(c, ROOST_ENOMEM, "out of memory");
            goto out;
        }
    }
    if (sdk_buf_rc(&p) != ROOST_OK) {
        rc = sdk_path_fail(c, sdk_buf_rc(&p));
        goto out;
    }
    if ((rc = sdk_request_json(c, "POST", p.s, body, 0, &resp)) != ROOST_OK) {
        goto out;
    }
    rc = count_more(c, resp, "purged", "purge", purged_out, more_out);
out:
    json_decref(body);
    json_decref(resp);
    dynbuf_cleanup(&p);
    return rc;
}

int roost_admin_quarantine_requeue_all(struct roost_client *c, const char *agent_id, int limit,
                                       int64_t *requeued_out, bool *more_out)
{
    int rc = bulk_call_start(c, limit, requeued_out, more_out);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (agent_id != NULL && !sdk_id_ok(agent_id)) {
        return sdk_path_fail(c, ROOST_EAGENTID);
    }
    json_t *body = bulk_body(agent_id, limit), *resp = NULL;
    if (body == NULL) {
        rc = sdk_fail(c, ROOST_ENOMEM, "out of memory");
        goto out;
    }
    if ((rc = sdk_request_json(c, "POST", "/api/v1/admin/quarantine/requeue", body, 0, &resp)) !=
        ROOST_OK) {
        goto out;
    }
    rc = count_more(c, resp, "requeued", "requeue", requeued_out, more_out);
out:
    json_decref(body);
    json_decref(resp);
    return rc;
}

int roost_admin_stats(struct roost_client *c, char **json_out)
{
    int rc = json_call_start(c, json_out);
    return rc != ROOST_OK ? rc : get_json_text(c, "/api/v1/admin/stats", json_out);
}

int roost_admin_event_get(struct roost_client *c, const char *event_id, char **json_out)
{
    return get_event_json(c, "/api/v1/admin/events/", event_id, json_out);
}

int roost_admin_events_find(struct roost_client *c, const char *correlation_id, int limit,
                            const char *page, char **json_out)
{
    int rc = json_call_start(c, json_out);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (correlation_id == NULL || correlation_id[0] == '\0' || strlen(correlation_id) > 256) {
        return sdk_fail(c, ROOST_ECORRELATION, "correlation_id must be 1 to 256 bytes");
    }
    if ((rc = check_page_args(c, limit, page)) != ROOST_OK) {
        return rc;
    }
    struct dynbuf p;
    dynbuf_init(&p, SDK_MAX_URL_BYTES * 4);
    char sep = '&';
    dynbuf_adds(&p, "/api/v1/admin/events?correlation_id=");
    sdk_add_escaped(&p, correlation_id);
    append_page(&p, &sep, limit, page);
    rc = sdk_buf_rc(&p) != ROOST_OK ? sdk_path_fail(c, sdk_buf_rc(&p))
                                    : get_json_text(c, p.s, json_out);
    dynbuf_cleanup(&p);
    return rc;
}

int roost_client_request(struct roost_client *c, const char *method, const char *path_and_query,
                         const char *body_json, int *status_out, char **response_out)
{
    if (status_out != NULL) {
        *status_out = 0;
    }
    if (response_out != NULL) {
        *response_out = NULL;
    }
    if (c == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    static const char *const methods[] = {"GET", "POST", "PUT", "DELETE", "PATCH"};
    bool known = false;
    for (size_t i = 0; method != NULL && i < sizeof methods / sizeof methods[0]; i++) {
        known = known || strcmp(method, methods[i]) == 0;
    }
    if (!known) {
        return sdk_fail(c, ROOST_EINVAL, "method must be GET, POST, PUT, DELETE or PATCH");
    }
    if (path_and_query == NULL || path_and_query[0] != '/') {
        return sdk_fail(c, ROOST_EINVAL, "the path must start with '/'");
    }
    for (const char *s = path_and_query; *s != '\0'; s++) {
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f) {
            return sdk_fail(c, ROOST_EINVAL, "the path must be escaped printable ASCII");
        }
    }
    if (body_json != NULL) {
        json_t *check = NULL;
        int prc = sdk_parse_object(body_json, &check);
        json_decref(check);
        if (prc != ROOST_OK) {
            return sdk_fail(c, prc, "the body must be a JSON object (%s)", roost_strerror(prc));
        }
    }
    int rc = sdk_request(c, method, path_and_query, body_json,
                         body_json != NULL ? strlen(body_json) : 0, 0, NULL);
    if (status_out != NULL) {
        *status_out = c->http_status;
    }
    if (rc == ROOST_OK && response_out != NULL) {
        char *copy = malloc(c->resp.len + 1);
        if (copy == NULL) {
            return sdk_fail(c, ROOST_ENOMEM, "out of memory");
        }
        if (c->resp.len > 0) {
            memcpy(copy, c->resp.s, c->resp.len);
        }
        copy[c->resp.len] = '\0';
        *response_out = copy;
    }
    return rc;
}
