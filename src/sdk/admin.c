/* SPDX-License-Identifier: MIT */
/* The operator API (scope tenant:admin): quarantine list / requeue and the agent list, plus the
 * generic request escape hatch for routes without a dedicated function yet. */
#include <stdlib.h>
#include <string.h>

#include "common/jsonutil.h"
#include "sdk/sdk.h"

#include "common/banned.h"

/* Appends "?limit=..&next=.." style paging to a path (first separator `*sep`). */
static void append_page(struct sdk_str *p, char *sep, int limit, const char *page)
{
    if (limit > 0) {
        sdk_str_appendf(p, "%climit=%d", *sep, limit);
        *sep = '&';
    }
    if (page != NULL) {
        sdk_str_appendf(p, "%cnext=", *sep);
        sdk_str_append_escaped(p, page);
        *sep = '&';
    }
}

int roost_admin_quarantine_list(struct roost_client *c, const char *agent_id, int limit,
                                const char *page, struct roost_events **out)
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
    if (page != NULL && strlen(page) > SDK_MAX_ID_BYTES) {
        return sdk_fail(c, ROOST_EPAGE, "the page token is too long");
    }
    json_t *resp = NULL;
    struct sdk_str p;
    sdk_str_init(&p, 0);
    int rc = ROOST_OK;
    char sep = '?';
    sdk_str_appendz(&p, "/api/v1/admin/quarantine");
    if (agent_id != NULL) {
        struct sdk_str check;
        sdk_str_init(&check, 0);
        rc = sdk_path_agent(&check, agent_id, "");
        sdk_str_cleanup(&check);
        if (rc != ROOST_OK) {
            rc = sdk_path_fail(c, rc);
            goto out;
        }
        sdk_str_appendz(&p, "?agent_id=");
        sdk_str_append_escaped(&p, agent_id);
        sep = '&';
    }
    append_page(&p, &sep, limit, page);
    if (p.rc != ROOST_OK) {
        rc = sdk_path_fail(c, p.rc);
        goto out;
    }
    if ((rc = sdk_request(c, "GET", p.data, NULL, 0, 0, &resp)) != ROOST_OK) {
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
    sdk_str_cleanup(&p);
    return rc;
}

int roost_admin_quarantine_requeue(struct roost_client *c, const char *event_id)
{
    if (c == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    if (event_id == NULL || event_id[0] == '\0' || strlen(event_id) > SDK_MAX_ID_BYTES) {
        return sdk_path_fail(c, ROOST_EEVENTID);
    }
    struct sdk_str p;
    sdk_str_init(&p, 0);
    sdk_str_appendz(&p, "/api/v1/admin/quarantine/");
    sdk_str_append_escaped(&p, event_id);
    sdk_str_appendz(&p, "/requeue");
    int rc = p.rc != ROOST_OK ? sdk_path_fail(c, p.rc)
                              : sdk_request(c, "POST", p.data, NULL, 0, 0, NULL);
    sdk_str_cleanup(&p);
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
    if (c == NULL || out == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    if (limit < 0) {
        return sdk_fail(c, ROOST_ELIMIT, "limit must be >= 0");
    }
    if (page != NULL && strlen(page) > SDK_MAX_ID_BYTES) {
        return sdk_fail(c, ROOST_EPAGE, "the page token is too long");
    }
    json_t *resp = NULL;
    struct sdk_str p;
    sdk_str_init(&p, 0);
    char sep = '?';
    sdk_str_appendz(&p, "/api/v1/admin/agents");
    if (sort != NULL) {
        if (strcmp(sort, "agent") != 0 && strcmp(sort, "depth") != 0 && strcmp(sort, "age") != 0) {
            sdk_str_cleanup(&p);
            return sdk_fail(c, ROOST_EINVAL, "sort must be agent, depth or age");
        }
        sdk_str_appendf(&p, "?sort=%s", sort);
        sep = '&';
    }
    append_page(&p, &sep, limit, page);
    int rc = p.rc;
    if (rc != ROOST_OK) {
        rc = sdk_path_fail(c, rc);
        goto out;
    }
    if ((rc = sdk_request(c, "GET", p.data, NULL, 0, 0, &resp)) != ROOST_OK) {
        goto out;
    }
    if ((rc = sdk_agents_from_response(resp, out)) != ROOST_OK) {
        rc = sdk_shape_fail(c, rc, "agent list");
    }
out:
    json_decref(resp);
    sdk_str_cleanup(&p);
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

int roost_admin_quarantine_inspect(struct roost_client *c, const char *event_id, char **json_out)
{
    if (json_out != NULL) {
        *json_out = NULL;
    }
    if (c == NULL || json_out == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    if (event_id == NULL || event_id[0] == '\0' || strlen(event_id) > SDK_MAX_ID_BYTES) {
        return sdk_path_fail(c, ROOST_EEVENTID);
    }
    struct sdk_str p;
    sdk_str_init(&p, 0);
    sdk_str_appendz(&p, "/api/v1/admin/quarantine/");
    sdk_str_append_escaped(&p, event_id);
    int rc = p.rc != ROOST_OK ? sdk_path_fail(c, p.rc) : get_json_text(c, p.data, json_out);
    sdk_str_cleanup(&p);
    return rc;
}

int roost_admin_quarantine_purge(struct roost_client *c, const char *agent_id, const char *event_id,
                                 int limit, int64_t *purged_out, bool *more_out)
{
    if (purged_out != NULL) {
        *purged_out = 0;
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
    if (event_id != NULL && (event_id[0] == '\0' || strlen(event_id) > SDK_MAX_ID_BYTES)) {
        return sdk_path_fail(c, ROOST_EEVENTID);
    }
    if (agent_id != NULL && (agent_id[0] == '\0' || strlen(agent_id) > SDK_MAX_ID_BYTES)) {
        return sdk_path_fail(c, ROOST_EAGENTID);
    }
    struct sdk_str p;
    sdk_str_init(&p, 0);
    json_t *body = NULL, *resp = NULL;
    int rc = ROOST_ENOMEM;
    sdk_str_appendz(&p, "/api/v1/admin/quarantine/");
    if (event_id != NULL) {
        sdk_str_append_escaped(&p, event_id);
        sdk_str_appendz(&p, "/purge");
    } else {
        sdk_str_appendz(&p, "purge");
        if ((body = json_object()) == NULL ||
            (agent_id != NULL && !sdk_put(body, "agent_id", json_string(agent_id))) ||
            (limit > 0 && !sdk_put(body, "limit", json_integer(limit)))) {
            rc = sdk_fail(c, ROOST_ENOMEM, "out of memory");
            goto out;
        }
    }
    if (p.rc != ROOST_OK) {
        rc = sdk_path_fail(c, p.rc);
        goto out;
    }
    if ((rc = sdk_request_json(c, "POST", p.data, body, 0, &resp)) != ROOST_OK) {
        goto out;
    }
    json_t *n = json_object_get(resp, "purged");
    if (!json_is_integer(n)) {
        rc = sdk_shape_fail(c, ROOST_EPROTO, "purge");
        goto out;
    }
    if (purged_out != NULL) {
        *purged_out = json_integer_value(n);
    }
    if (more_out != NULL) {
        *more_out = json_is_true(json_object_get(resp, "more"));
    }
out:
    json_decref(body);
    json_decref(resp);
    sdk_str_cleanup(&p);
    return rc;
}

int roost_admin_stats(struct roost_client *c, char **json_out)
{
    if (json_out != NULL) {
        *json_out = NULL;
    }
    if (c == NULL || json_out == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    return get_json_text(c, "/api/v1/admin/stats", json_out);
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
        char *copy = malloc(c->resp_len + 1);
        if (copy == NULL) {
            return sdk_fail(c, ROOST_ENOMEM, "out of memory");
        }
        if (c->resp_len > 0) {
            memcpy(copy, c->resp, c->resp_len);
        }
        copy[c->resp_len] = '\0';
        *response_out = copy;
    }
    return rc;
}
