/* SPDX-License-Identifier: MIT */
/* The Model Context Protocol pieces both transports share (see mcp.h): revisions, the JSON-RPC
 * envelope, the tool catalogue with its schemas, the argument check and tool results. */
#include "common/mcp.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "common/jsonutil.h"

#include "common/banned.h"

/* Newest first. The official TypeScript SDK of the day (1.32) speaks 2025-11-25 as its latest. */
static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};
const char *const mcp_latest_version = "2025-11-25";

bool mcp_version_supported(const char *v)
{
    for (size_t i = 0; v != NULL && i < sizeof versions / sizeof versions[0]; i++) {
        if (strcmp(v, versions[i]) == 0) {
            return true;
        }
    }
    return false;
}

const char *mcp_negotiate_version(const char *requested)
{
    for (size_t i = 0; requested != NULL && i < sizeof versions / sizeof versions[0]; i++) {
        if (strcmp(requested, versions[i]) == 0) {
            return versions[i];
        }
    }
    return mcp_latest_version;
}

/* ---- the envelope ---------------------------------------------------------------------------- */

static void invalid(struct mcp_msg *m, int code, const char *msg)
{
    m->kind = MCP_MSG_INVALID;
    m->err_code = code;
    snprintf(m->err_msg, sizeof m->err_msg, "%s", msg);
}

/* A JSON-RPC id: a string or an integer (JSON-RPC allows numbers; MCP forbids null). */
static bool id_valid(const json_t *id)
{
    return json_is_string(id) || json_is_integer(id);
}

void mcp_msg_parse(const char *buf, size_t len, struct mcp_msg *m)
{
    memset(m, 0, sizeof *m);
    m->id = json_null();
    m->id_owned = true;
    if (len > MCP_MAX_MESSAGE_BYTES) {
        invalid(m, MCP_INVALID_REQUEST, "message too large");
        return;
    }
    if (jsonutil_depth(buf, len, MCP_MAX_DEPTH) > MCP_MAX_DEPTH) {
        invalid(m, MCP_INVALID_REQUEST, "message nested too deeply");
        return;
    }
    json_error_t jerr;
    m->root = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &jerr);
    if (m->root == NULL) {
        invalid(m, MCP_PARSE_ERROR, "parse error: not one JSON value");
        return;
    }
    if (json_is_array(m->root)) {
        invalid(m, MCP_INVALID_REQUEST, "batches are not supported: send one message at a time");
        return;
    }
    if (!json_is_object(m->root)) {
        invalid(m, MCP_INVALID_REQUEST, "a message must be a JSON object");
        return;
    }
    json_t *id = json_object_get(m->root, "id");
    if (id != NULL && id_valid(id)) {
        json_decref(m->id);
        m->id = id;
        m->id_owned = false;
    }
    const json_t *version = json_object_get(m->root, "jsonrpc");
    if (!json_is_string(version) || strcmp(json_string_value(version), "2.0") != 0) {
        invalid(m, MCP_INVALID_REQUEST, "jsonrpc must be \"2.0\"");
        return;
    }
    if (id != NULL && !id_valid(id)) {
        invalid(m, MCP_INVALID_REQUEST, "id must be a string or an integer");
        return;
    }
    json_t *method = json_object_get(m->root, "method");
    if (method == NULL) {
        if (id != NULL && (json_object_get(m->root, "result") != NULL ||
                           json_object_get(m->root, "error") != NULL)) {
            m->kind = MCP_MSG_RESPONSE;
            return;
        }
        invalid(m, MCP_INVALID_REQUEST, "method is missing");
        return;
    }
    if (!json_is_string(method) || json_string_length(method) == 0) {
        invalid(m, MCP_INVALID_REQUEST, "method must be a non-empty string");
        return;
    }
    m->method = json_string_value(method);
    json_t *params = json_object_get(m->root, "params");
    if (params != NULL && !json_is_object(params)) {
        invalid(m, MCP_INVALID_PARAMS, "params must be an object");
        return;
    }
    m->params = params;
    m->kind = id != NULL ? MCP_MSG_REQUEST : MCP_MSG_NOTIFICATION;
}

void mcp_msg_cleanup(struct mcp_msg *m)
{
    if (m->id_owned) {
        json_decref(m->id);
    }
    json_decref(m->root);
    memset(m, 0, sizeof *m);
}

json_t *mcp_result(json_t *id, json_t *result)
{
    return json_pack("{s:s, s:O?, s:o}", "jsonrpc", "2.0", "id", id, "result",
                     result != NULL ? result : json_object());
}

json_t *mcp_error(json_t *id, int code, const char *message)
{
    json_t *out = json_pack("{s:s, s:O?, s:{s:i, s:s}}", "jsonrpc", "2.0", "id", id, "error",
                            "code", code, "message", message);
    if (out != NULL && id == NULL) {
        json_object_set_new(out, "id", json_null());
    }
    return out;
}

json_t *mcp_notification(const char *method, json_t *params)
{
    json_t *out = json_pack("{s:s, s:s}", "jsonrpc", "2.0", "method", method);
    if (out != NULL && params != NULL) {
        json_object_set_new(out, "params", params);
    } else {
        json_decref(params);
    }
    return out;
}

/* ---- the tools ------------------------------------------------------------------------------- */

/* The event object of the API (doc/API.md "Event object"), as the claim and read tools return
 * it. Open: the server may add fields. */
#define EVENT_SCHEMA                                                                               \
    "{\"type\":\"object\",\"required\":[\"event_id\",\"sequence_number\",\"status\"],"             \
    "\"properties\":{\"event_id\":{\"type\":\"string\"},\"agent_id\":{\"type\":\"string\"},"       \
    "\"sequence_number\":{\"type\":\"integer\"},\"status\":{\"type\":\"string\"},"                 \
    "\"priority\":{\"type\":\"integer\"},\"correlation_id\":{\"type\":[\"string\",\"null\"]},"     \
    "\"payload\":{\"type\":[\"object\",\"null\"]},\"lease_token\":{\"type\":\"string\"},"          \
    "\"claim_expires_at\":{\"type\":\"string\"},\"attempts\":{\"type\":\"integer\"}}}"

#define EVENT_ID_ARG                                                                               \
    "\"event_id\":{\"type\":\"string\",\"maxLength\":64,"                                          \
    "\"description\":\"The event_id the claim tool returned (evt_...).\"}"
#define LEASE_TOKEN_ARG                                                                            \
    "\"lease_token\":{\"type\":\"string\",\"maxLength\":256,"                                      \
    "\"description\":\"The lease_token the claim tool returned with this event.\"}"

struct tool {
    const char *name;
    const char *title;
    const char *description;
    const char *input;    /* JSON Schema of the arguments (without "agent") */
    const char *output;   /* the "properties" of a success */
    const char *required; /* the "required" of a success (a JSON array) */
    bool read_only;
};

static const struct tool tools[] = {
    {"claim", "Claim work from the inbox",
     "Takes the next events from this agent's durable Roost inbox, highest priority first, each "
     "under a lease: nobody else gets it while you hold it. For every event you get, do the work "
     "the payload describes, then call ack with its event_id and lease_token; if you cannot do it, "
     "call release (optionally with delay_s and a reason). Leases taken through `roost mcp` are "
     "kept alive for you until you ack or release, so take your time; over remote HTTP, call "
     "extend before claim_expires_at. An empty events list means there is no work now: pass "
     "wait_s to wait for some (it returns as soon as work arrives). attempts > 1 means an earlier "
     "try did not finish: make the work safe to repeat.",
     "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
     "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"default\":1,"
     "\"description\":\"Most events to take (default 1: one task at a time).\"},"
     "\"lease_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":43200,\"default\":60,"
     "\"description\":\"Lease length in seconds (default 60).\"},"
     "\"wait_s\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":300,\"default\":0,"
     "\"description\":\"When nothing is claimable, wait up to this many seconds for work (keep it "
     "below your client's request timeout; the remote endpoint allows its claim.max_wait_s, 30 by "
     "default).\"}}}",
     "\"events\":{\"type\":\"array\",\"items\":" EVENT_SCHEMA "},"
     "\"has_more\":{\"type\":\"boolean\",\"description\":\"More work is claimable right now.\"}",
     "[\"events\",\"has_more\"]", false},
    {"ack", "Mark an event done",
     "Completes an event you claimed: it will never be handed out again. Call it only after the "
     "work is really done. Repeating an ack that succeeded is safe. Error lease_mismatch means "
     "your lease ended and the event may be worked elsewhere: do not repeat side effects; "
     "event_not_found means there is no such event.",
     "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"event_id\","
     "\"lease_token\"],\"properties\":{" EVENT_ID_ARG "," LEASE_TOKEN_ARG "}}",
     "\"event_id\":{\"type\":\"string\"},\"status\":{\"type\":\"string\"}",
     "[\"event_id\",\"status\"]", false},
    {"release", "Give an event back",
     "Gives a claimed event back without completing it, so that it can be tried again (after "
     "delay_s seconds). reason: transient (default: a failure worth retrying; it counts toward "
     "the attempt limit, after which the event is quarantined), shutdown (you are stopping: counts "
     "nothing), poison (it can never succeed: quarantine it now). Put what went wrong in error.",
     "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"event_id\","
     "\"lease_token\"],\"properties\":{" EVENT_ID_ARG "," LEASE_TOKEN_ARG ","
     "\"delay_s\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":31536000,"
     "\"description\":\"Seconds before it may be claimed again (default 0).\"},"
     "\"reason\":{\"type\":\"string\",\"enum\":[\"transient\",\"shutdown\",\"poison\"]},"
     "\"error\":{\"type\":\"string\",\"maxLength\":4096,"
     "\"description\":\"What went wrong, kept as the event's last_error.\"}}}",
     "\"event_id\":{\"type\":\"string\"},\"status\":{\"type\":\"string\","
     "\"description\":\"released, or quarantined\"}",
     "[\"event_id\",\"status\"]", false},
    {"extend", "Extend a lease",
     "Moves the end of an event's lease to lease_s seconds from now. `roost mcp` extends the "
     "leases it handed out by itself; call this over the remote endpoint, or to ask for a longer "
     "lease. Error lease_cap_reached: the lease cannot grow past the server's maximum; "
     "lease_mismatch: the lease is already lost.",
     "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"event_id\","
     "\"lease_token\"],\"properties\":{" EVENT_ID_ARG "," LEASE_TOKEN_ARG ","
     "\"lease_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":43200,\"default\":60}}}",
     "\"event_id\":{\"type\":\"string\"},\"claim_expires_at\":{\"type\":\"string\"}",
     "[\"event_id\",\"claim_expires_at\"]", false},
    {"read_inbox", "Read the inbox history",
     "Reads events of this agent's inbox in order, after a cursor, without claiming or changing "
     "anything (every status, completed ones without payload). Use it to look, never to take "
     "work: use claim for that. Continue from next_cursor while has_more is true. Error "
     "cursor_expired: the cursor is older than retention; call get_state and continue from its "
     "cursor.",
     "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"
     "\"after_cursor\":{\"type\":\"integer\",\"minimum\":0,\"default\":0,"
     "\"description\":\"Sequence number to read after (0: from the start).\"},"
     "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000,\"default\":10}}}",
     "\"events\":{\"type\":\"array\",\"items\":" EVENT_SCHEMA "},"
     "\"next_cursor\":{\"type\":\"integer\"},\"has_more\":{\"type\":\"boolean\"},"
     "\"head\":{\"type\":\"integer\"}",
     "[\"events\",\"next_cursor\",\"has_more\"]", true},
    {"publish", "Send work to agents",
     "Hands work to other agents (or to yourself): puts one event into the durable inbox of each "
     "recipient, where they claim it. payload is a JSON object describing the task. Give an "
     "idempotency_key when you might send the same task twice (a retry returns the first event "
     "instead of a copy, with duplicate true). correlation_id ties replies to a request; delay_s "
     "defers it; priority -100..100 (higher first).",
     "{\"type\":\"object\",\"additionalProperties\":false,\"required\":[\"recipients\"],"
     "\"properties\":{"
     "\"recipients\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":1000,\"items\":{\"type\":"
     "\"string\",\"maxLength\":128},\"description\":\"Agent ids that get the event.\"},"
     "\"payload\":{\"type\":\"object\",\"description\":\"The task, any JSON object.\"},"
     "\"correlation_id\":{\"type\":\"string\",\"maxLength\":256},"
     "\"idempotency_key\":{\"type\":\"string\",\"maxLength\":256},"
     "\"delay_s\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":31536000},"
     "\"ttl_s\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":315360000,"
     "\"description\":\"Expire unclaimed after this many seconds.\"},"
     "\"priority\":{\"type\":\"integer\",\"minimum\":-100,\"maximum\":100}}}",
     "\"events\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"required\":[\"event_id\","
     "\"agent_id\",\"sequence_number\"],\"properties\":{\"event_id\":{\"type\":\"string\"},"
     "\"agent_id\":{\"type\":\"string\"},\"sequence_number\":{\"type\":\"integer\"},"
     "\"duplicate\":{\"type\":\"boolean\"}}}}",
     "[\"events\"]", false},
    {"get_state", "Read the agent's state",
     "Reads this agent's state document (built from the state_patch of events) and the inbox "
     "cursor it is consistent with. Read-only.",
     "{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{}}",
     "\"state\":{\"type\":\"object\"},\"cursor\":{\"type\":\"integer\"}", "[\"state\",\"cursor\"]",
     true},
};

#define N_TOOLS (sizeof tools / sizeof tools[0])

static const struct tool *tool_find(const char *name)
{
    for (size_t i = 0; name != NULL && i < N_TOOLS; i++) {
        if (strcmp(tools[i].name, name) == 0) {
            return &tools[i];
        }
    }
    return NULL;
}

bool mcp_tool_known(const char *name)
{
    return tool_find(name) != NULL;
}

static const char agent_arg_schema[] =
    "{\"type\":\"string\",\"maxLength\":128,\"description\":\"The agent whose inbox this acts on "
    "([A-Za-z0-9._-]{1,128}); the token must grant it.\"}";

/* The input schema of t as a new object (with the agent argument when asked). */
static json_t *input_schema(const struct tool *t, bool agent_arg)
{
    json_t *in = json_loads(t->input, 0, NULL);
    if (in == NULL || !agent_arg || strcmp(t->name, "publish") == 0) {
        return in;
    }
    json_object_set_new(json_object_get(in, "properties"), "agent",
                        json_loads(agent_arg_schema, 0, NULL));
    json_t *req = json_object_get(in, "required");
    if (req == NULL) {
        json_object_set_new(in, "required", req = json_array());
    }
    json_array_insert_new(req, 0, json_string("agent"));
    return in;
}

static json_t *output_schema(const struct tool *t)
{
    char text[4096];
    int n = snprintf(text, sizeof text,
                     "{\"type\":\"object\",\"properties\":{%s,\"error\":{\"type\":\"object\","
                     "\"required\":[\"code\",\"message\"],\"properties\":{\"code\":{\"type\":"
                     "\"string\"},\"message\":{\"type\":\"string\"}}}},\"anyOf\":[{\"required\":"
                     "%s},{\"required\":[\"error\"]}]}",
                     t->output, t->required);
    if (n < 0 || (size_t)n >= sizeof text) {
        return NULL;
    }
    return json_loads(text, 0, NULL);
}

json_t *mcp_tools_list(bool agent_arg)
{
    json_t *list = json_array();
    for (size_t i = 0; list != NULL && i < N_TOOLS; i++) {
        const struct tool *t = &tools[i];
        json_t *in = input_schema(t, agent_arg);
        json_t *out = output_schema(t);
        json_t *one =
            json_pack("{s:s, s:s, s:s, s:o*, s:o*, s:{s:b, s:b, s:b}}", "name", t->name, "title",
                      t->title, "description", t->description, "inputSchema", in, "outputSchema",
                      out, "annotations", "readOnlyHint", t->read_only, "idempotentHint",
                      strcmp(t->name, "ack") == 0 || t->read_only, "openWorldHint", 0);
        if (one == NULL || json_array_append_new(list, one) != 0) {
            json_decref(list);
            return NULL;
        }
    }
    return list != NULL ? json_pack("{s:o}", "tools", list) : NULL;
}

/* ---- the argument check ---------------------------------------------------------------------- */

/* The API's code for a bad value of argument `name`. */
static const char *arg_code(const char *name)
{
    static const char *const map[][2] = {
        {"limit", "invalid_limit"},
        {"lease_s", "invalid_lease_s"},
        {"wait_s", "invalid_wait_s"},
        {"after_cursor", "invalid_cursor"},
        {"event_id", "invalid_event_id"},
        {"lease_token", "invalid_lease_token"},
        {"delay_s", "invalid_delay_s"},
        {"reason", "invalid_reason"},
        {"error", "invalid_error"},
        {"priority", "invalid_priority"},
        {"payload", "invalid_payload"},
        {"recipients", "invalid_recipients"},
        {"correlation_id", "invalid_correlation_id"},
        {"idempotency_key", "invalid_idempotency_key"},
        {"ttl_s", "invalid_expires_at"},
        {"agent", "invalid_agent_id"},
    };
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
        if (strcmp(map[i][0], name) == 0) {
            return map[i][1];
        }
    }
    return "invalid_request";
}

/* Checks one value against its property schema (the subset the catalogue uses). */
static bool value_fits(const json_t *schema, const json_t *v, char *why, size_t whylen)
{
    const char *type = json_string_value(json_object_get(schema, "type"));
    if (type == NULL) {
        return true;
    }
    if (strcmp(type, "integer") == 0) {
        if (!json_is_integer(v)) {
            snprintf(why, whylen, "must be an integer");
            return false;
        }
        json_int_t x = json_integer_value(v);
        const json_t *min = json_object_get(schema, "minimum");
        const json_t *max = json_object_get(schema, "maximum");
        if ((min != NULL && x < json_integer_value(min)) ||
            (max != NULL && x > json_integer_value(max))) {
            if (max != NULL) {
                snprintf(why, whylen, "must be an integer between %lld and %lld",
                         (long long)json_integer_value(min), (long long)json_integer_value(max));
            } else {
                snprintf(why, whylen, "must be an integer >= %lld",
                         (long long)json_integer_value(min));
            }
            return false;
        }
        return true;
    }
    if (strcmp(type, "string") == 0) {
        if (!json_is_string(v)) {
            snprintf(why, whylen, "must be a string");
            return false;
        }
        const json_t *maxlen = json_object_get(schema, "maxLength");
        if (maxlen != NULL && json_string_length(v) > (size_t)json_integer_value(maxlen)) {
            snprintf(why, whylen, "must be at most %lld bytes",
                     (long long)json_integer_value(maxlen));
            return false;
        }
        const json_t *choices = json_object_get(schema, "enum");
        if (choices != NULL) {
            size_t i;
            const json_t *c;
            json_array_foreach(choices, i, c)
            {
                if (strcmp(json_string_value(c), json_string_value(v)) == 0) {
                    return true;
                }
            }
            snprintf(why, whylen, "must be one of the listed values");
            return false;
        }
        return true;
    }
    if (strcmp(type, "object") == 0) {
        if (!json_is_object(v)) {
            snprintf(why, whylen, "must be a JSON object");
            return false;
        }
        return true;
    }
    if (strcmp(type, "array") == 0) {
        if (!json_is_array(v)) {
            snprintf(why, whylen, "must be an array");
            return false;
        }
        size_t n = json_array_size(v);
        const json_t *mn = json_object_get(schema, "minItems");
        const json_t *mx = json_object_get(schema, "maxItems");
        if ((mn != NULL && n < (size_t)json_integer_value(mn)) ||
            (mx != NULL && n > (size_t)json_integer_value(mx))) {
            snprintf(why, whylen, "must have %lld..%lld items", (long long)json_integer_value(mn),
                     (long long)json_integer_value(mx));
            return false;
        }
        const json_t *items = json_object_get(schema, "items");
        size_t i;
        const json_t *item;
        json_array_foreach(v, i, item)
        {
            if (items != NULL && !value_fits(items, item, why, whylen)) {
                return false;
            }
        }
        return true;
    }
    return true;
}

bool mcp_check_args(const char *tool, const json_t *args, bool agent_arg, const char **code,
                    char *msg, size_t msglen)
{
    const struct tool *t = tool_find(tool);
    *code = "invalid_request";
    if (t == NULL) {
        snprintf(msg, msglen, "no tool named %s", tool != NULL ? tool : "(none)");
        return false;
    }
    if (args != NULL && !json_is_object(args)) {
        snprintf(msg, msglen, "arguments must be a JSON object");
        return false;
    }
    json_t *schema = input_schema(t, agent_arg);
    if (schema == NULL) {
        *code = "out_of_memory";
        snprintf(msg, msglen, "out of memory");
        return false;
    }
    bool ok = true;
    const json_t *props = json_object_get(schema, "properties");
    size_t i;
    const json_t *req;
    json_array_foreach(json_object_get(schema, "required"), i, req)
    {
        const char *name = json_string_value(req);
        const json_t *v = args != NULL ? json_object_get(args, name) : NULL;
        if (v == NULL || json_is_null(v)) {
            *code = arg_code(name);
            snprintf(msg, msglen, "%s is required", name);
            ok = false;
            goto out;
        }
    }
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)args, key, v)
    {
        const json_t *p = json_object_get(props, key);
        if (p == NULL) {
            *code = "unknown_field";
            snprintf(msg, msglen, "%.64s is not an argument of %s", key, t->name);
            ok = false;
            goto out;
        }
        char why[96];
        if (!json_is_null(v) && !value_fits(p, v, why, sizeof why)) {
            *code = arg_code(key);
            snprintf(msg, msglen, "%s %s", key, why);
            ok = false;
            goto out;
        }
    }
out:
    json_decref(schema);
    return ok;
}

/* ---- results --------------------------------------------------------------------------------- */

static json_t *tool_result(json_t *structured, bool is_error)
{
    if (structured == NULL) {
        return NULL;
    }
    char *text = jsonutil_dump(structured);
    json_t *out = json_pack("{s:[{s:s, s:s*}], s:o, s:b}", "content", "type", "text", "text", text,
                            "structuredContent", structured, "isError", is_error);
    free(text);
    return out;
}

json_t *mcp_tool_ok(json_t *structured)
{
    return tool_result(structured, false);
}

json_t *mcp_tool_error(const char *code, const char *message, json_t *detail)
{
    json_t *err = json_pack("{s:s, s:s}", "code", code != NULL ? code : "internal_error", "message",
                            message != NULL ? message : "");
    if (err != NULL && json_is_object(detail)) {
        json_object_update_missing(err, detail);
    }
    json_decref(detail);
    return tool_result(err != NULL ? json_pack("{s:o}", "error", err) : NULL, true);
}
