/* SPDX-License-Identifier: MIT */
/* POST /mcp: the Model Context Protocol over Streamable HTTP, stateless (no Mcp-Session-Id, no
 * server-to-client stream: GET is 405). A JSON-RPC request comes in the body and its answer goes
 * back as application/json. A tools/call becomes the REST request of its route (path ids, body
 * or query) and runs that route's own handler, whose JSON answer a reply filter wraps into the
 * tool result: scopes, bounds, errors and store logic are the REST API's, written once. */
#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>

#include "common/ids.h"
#include "common/mcp.h"
#include "server/api.h"
#include "server/auth.h"
#include "server/config.h"
#include "server/request.h"
#include "server/router.h"
#include "server/runtime.h"

#include "common/banned.h"

static void reply_rpc(struct request *rq, int status, json_t *msg)
{
    request_reply_json(rq, status, msg);
}

static int dump_cb(const char *buffer, size_t size, void *data)
{
    return evbuffer_add(data, buffer, size);
}

/* The reply filter: the REST answer of the tool's route becomes the JSON-RPC result. */
static struct evbuffer *wrap_tool_answer(struct request *rq, int *status, struct evbuffer *body)
{
    size_t len = evbuffer_get_length(body);
    const char *text = (const char *)evbuffer_pullup(body, -1);
    json_t *doc = text != NULL ? json_loadb(text, len, 0, NULL) : NULL;
    evbuffer_free(body);
    json_t *result;
    if (*status < 300 && json_is_object(doc)) {
        result = mcp_tool_ok(doc);
    } else {
        json_t *err = json_object_get(doc, "error");
        const char *code = json_string_value(json_object_get(err, "code"));
        const char *msg = json_string_value(json_object_get(err, "message"));
        json_t *detail = json_is_object(err) ? json_deep_copy(err) : NULL;
        if (detail != NULL) {
            json_object_del(detail, "code");
            json_object_del(detail, "message");
        }
        result = mcp_tool_error(code != NULL ? code : "internal_error",
                                msg != NULL ? msg : "the request failed", detail);
        json_decref(doc);
    }
    json_t *msg = result != NULL ? mcp_result(rq->reply_filter_arg, result) : NULL;
    struct evbuffer *out = msg != NULL ? evbuffer_new() : NULL;
    if (out != NULL && json_dump_callback(msg, dump_cb, out, JSON_COMPACT) != 0) {
        evbuffer_free(out);
        out = NULL;
    }
    json_decref(msg);
    *status = 200;
    return out;
}

/* Copies the named arguments that are present into a new REST body. */
static json_t *body_of(const json_t *args, const char *const *names)
{
    json_t *body = json_object();
    for (size_t i = 0; body != NULL && names[i] != NULL; i++) {
        json_t *v = json_object_get(args, names[i]);
        if (v != NULL && !json_is_null(v)) {
            json_object_set(body, names[i], v);
        }
    }
    return body;
}

static int query_add_int(struct evkeyvalq *q, const json_t *args, const char *name)
{
    const json_t *v = json_object_get(args, name);
    if (!json_is_integer(v)) {
        return 0;
    }
    char num[32];
    snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
    return evhttp_add_header(q, name, num);
}

static void tool_error(struct request *rq, json_t *id, const char *code, const char *msg,
                       json_t *detail)
{
    reply_rpc(rq, 200, mcp_result(id, mcp_tool_error(code, msg, detail)));
}

/* tools/call: builds the route's request and runs its handler. */
static void tools_call(struct request *rq, json_t *id, const json_t *params)
{
    const char *name = json_string_value(json_object_get(params, "name"));
    const json_t *args = json_object_get(params, "arguments");
    const char *code = NULL;
    char why[256];
    if (name == NULL || !mcp_tool_known(name)) {
        reply_rpc(rq, 200, mcp_error(id, MCP_INVALID_PARAMS, "unknown tool: see tools/list"));
        return;
    }
    if (!mcp_check_args(name, args, true, &code, why, sizeof why)) {
        tool_error(rq, id, code, why, NULL);
        return;
    }
    bool publish = strcmp(name, "publish") == 0;
    const char *agent = json_string_value(json_object_get(args, "agent"));
    const char *event = json_string_value(json_object_get(args, "event_id"));
    if (!publish && !ids_valid_name(agent, strlen(agent))) {
        tool_error(rq, id, "invalid_agent_id", roost_strerror(ROOST_EAGENTID), NULL);
        return;
    }
    if (event != NULL && !ids_valid_event_id(event, strlen(event))) {
        tool_error(rq, id, "invalid_event_id", roost_strerror(ROOST_EEVENTID), NULL);
        return;
    }
    char path[512];
    enum evhttp_cmd_type method = EVHTTP_REQ_POST;
    json_t *body = NULL;
    static const char *const claim_f[] = {"limit", "lease_s", "wait_s", NULL};
    static const char *const ack_f[] = {"lease_token", NULL};
    static const char *const release_f[] = {"lease_token", "delay_s", "reason", "error", NULL};
    static const char *const extend_f[] = {"lease_token", "lease_s", NULL};
    static const char *const publish_f[] = {"recipients",      "payload", "correlation_id",
                                            "idempotency_key", "delay_s", "ttl_s",
                                            "priority",        NULL};
    if (strcmp(name, "claim") == 0) {
        snprintf(path, sizeof path, "/api/v1/agents/%s/inbox/claim", agent);
        body = body_of(args, claim_f);
        if (body != NULL && json_object_get(body, "limit") == NULL) {
            json_object_set_new(body, "limit", json_integer(1));
        }
    } else if (strcmp(name, "ack") == 0 || strcmp(name, "release") == 0 ||
               strcmp(name, "extend") == 0) {
        snprintf(path, sizeof path, "/api/v1/agents/%s/inbox/%s/%s", agent, event, name);
        body = body_of(args, name[0] == 'a' ? ack_f : name[0] == 'r' ? release_f : extend_f);
        if (body != NULL && name[0] == 'e' && json_object_get(body, "lease_s") == NULL) {
            json_object_set_new(body, "lease_s", json_integer(60));
        }
    } else if (strcmp(name, "read_inbox") == 0) {
        snprintf(path, sizeof path, "/api/v1/agents/%s/inbox", agent);
        method = EVHTTP_REQ_GET;
    } else if (publish) {
        snprintf(path, sizeof path, "/api/v1/events");
        body = body_of(args, publish_f);
    } else {
        snprintf(path, sizeof path, "/api/v1/agents/%s/state", agent);
        method = EVHTTP_REQ_GET;
    }
    const struct route *route = NULL;
    struct route_captures caps;
    if (router_match(method, path, &route, &caps) != ROOST_OK ||
        (method == EVHTTP_REQ_POST && body == NULL)) {
        json_decref(body);
        reply_rpc(rq, 200, mcp_error(id, MCP_INTERNAL_ERROR, "internal error"));
        return;
    }
    if (!publish) {
        snprintf(rq->agent_id, sizeof rq->agent_id, "%s", agent);
        if (event != NULL) {
            snprintf(rq->event_id, sizeof rq->event_id, "%s", event);
        }
        if (!auth_allows(&rq->principal, route->action, rq->agent_id)) {
            char scope[AUTH_SCOPE_TEXT_MAX], msg[AUTH_SCOPE_TEXT_MAX + 64];
            auth_required_scope(route->action, rq->agent_id, scope, sizeof scope);
            snprintf(msg, sizeof msg, "the token lacks the scope %s", scope);
            json_decref(body);
            tool_error(rq, id, "forbidden", msg, json_pack("{s:s}", "required_scope", scope));
            return;
        }
    }
    if (method == EVHTTP_REQ_GET && strcmp(name, "read_inbox") == 0) {
        rq->query = calloc(1, sizeof *rq->query);
        if (rq->query == NULL) {
            reply_rpc(rq, 200, mcp_error(id, MCP_INTERNAL_ERROR, "out of memory"));
            return;
        }
        TAILQ_INIT(rq->query);
        if (query_add_int(rq->query, args, "after_cursor") != 0 ||
            query_add_int(rq->query, args, "limit") != 0) {
            reply_rpc(rq, 200, mcp_error(id, MCP_INTERNAL_ERROR, "out of memory"));
            return;
        }
    }
    json_decref(rq->body);
    rq->body = body;
    rq->reply_filter = wrap_tool_answer;
    rq->reply_filter_arg = json_incref(id);
    /* The tool's route: its declaration bounds what its handler reads (the log and metric label
     * stays "mcp": route_name). */
    rq->route = route;
    route->handler(rq);
}

static json_t *initialize_result(const json_t *params)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    return json_pack("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}", "protocolVersion",
                     mcp_negotiate_version(asked), "capabilities", "tools", "listChanged", 0,
                     "serverInfo", "name", "roostd", "title", "Roost", "version", ROOST_VERSION,
                     "instructions",
                     "Roost gives agents durable, leased inboxes. Every tool takes the agent "
                     "whose inbox it acts on. Call claim to take work, do what the payload asks, "
                     "then ack it (or release it); call extend before claim_expires_at while you "
                     "work, since this remote endpoint keeps no session. publish hands work to "
                     "other agents.");
}

void api_mcp(struct request *rq)
{
    struct evbuffer *in = evhttp_request_get_input_buffer(rq->req);
    size_t len = evbuffer_get_length(in);
    struct evkeyvalq *headers = evhttp_request_get_input_headers(rq->req);
    if (len > (size_t)rq->rt->cfg->limits_max_body_bytes || len > MCP_MAX_MESSAGE_BYTES) {
        request_reply_error(rq, ROOST_ETOOLARGE, NULL, NULL);
        return;
    }
    if (!request_content_type_is_json(evhttp_find_header(headers, "Content-Type"))) {
        request_reply_error(rq, ROOST_EMEDIATYPE, NULL, NULL);
        return;
    }
    const char *pv = evhttp_find_header(headers, "MCP-Protocol-Version");
    if (pv != NULL && !mcp_version_supported(pv)) {
        reply_rpc(rq, 400,
                  mcp_error(NULL, MCP_INVALID_REQUEST, "unsupported MCP-Protocol-Version"));
        return;
    }
    const char *data = len > 0 ? (const char *)evbuffer_pullup(in, -1) : "";
    if (data == NULL) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    struct mcp_msg m;
    mcp_msg_parse(data, len, &m);
    if (m.kind == MCP_MSG_INVALID) {
        reply_rpc(rq, 400, mcp_error(m.id, m.err_code, m.err_msg));
    } else if (m.kind != MCP_MSG_REQUEST) {
        /* A notification or a response: accepted, nothing to answer. */
        struct evbuffer *empty = evbuffer_new();
        if (empty == NULL) {
            request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        } else {
            request_reply_buffer(rq, 202, "application/json", empty);
            evbuffer_free(empty);
        }
    } else if (strcmp(m.method, "initialize") == 0) {
        reply_rpc(rq, 200, mcp_result(m.id, initialize_result(m.params)));
    } else if (strcmp(m.method, "ping") == 0) {
        reply_rpc(rq, 200, mcp_result(m.id, json_object()));
    } else if (strcmp(m.method, "tools/list") == 0) {
        reply_rpc(rq, 200, mcp_result(m.id, mcp_tools_list(true)));
    } else if (strcmp(m.method, "tools/call") == 0) {
        tools_call(rq, m.id, m.params);
    } else {
        reply_rpc(rq, 200, mcp_error(m.id, MCP_METHOD_NOT_FOUND, "method not found"));
    }
    mcp_msg_cleanup(&m);
}
