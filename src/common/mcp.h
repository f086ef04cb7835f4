/* SPDX-License-Identifier: MIT */
/* What `roost mcp` (stdio) and roostd's /mcp (Streamable HTTP) share of the Model Context
 * Protocol: the protocol revisions and their negotiation, the JSON-RPC 2.0 envelope (classifying
 * one message, building answers), the tool catalogue (names, descriptions written for a model,
 * input and output JSON Schemas) with the check of a call's arguments against it, and the shape
 * of a tool result. Both transports answer from this one table, so a tool reads the same
 * locally and remotely. doc/MCP.md describes the tools. */
#ifndef ROOST_COMMON_MCP_H
#define ROOST_COMMON_MCP_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* The largest JSON-RPC message either transport reads (a line on stdin, a POST body). */
#define MCP_MAX_MESSAGE_BYTES ((size_t)4 * 1024 * 1024)
/* The deepest nesting of a message (a publish payload inside arguments inside params). */
#define MCP_MAX_DEPTH 64

/* JSON-RPC 2.0 error codes. */
#define MCP_PARSE_ERROR (-32700)
#define MCP_INVALID_REQUEST (-32600)
#define MCP_METHOD_NOT_FOUND (-32601)
#define MCP_INVALID_PARAMS (-32602)
#define MCP_INTERNAL_ERROR (-32603)

/* The newest revision spoken; the answer to a client asking for one we do not know. */
extern const char *const mcp_latest_version;
/* The revision to answer an initialize asking for `requested` (NULL or unknown: the newest). */
const char *mcp_negotiate_version(const char *requested);
/* True when `v` is a revision this server speaks. */
bool mcp_version_supported(const char *v);

/* What one message is. */
enum mcp_kind {
    MCP_MSG_INVALID = 0, /* *err_code / err_msg tell why; id is what to echo (JSON null if none) */
    MCP_MSG_REQUEST,     /* method + id (+ params) */
    MCP_MSG_NOTIFICATION,
    MCP_MSG_RESPONSE /* a client's answer to a request of ours: ignored */
};

struct mcp_msg {
    enum mcp_kind kind;
    json_t *root;       /* the parsed message (owned; NULL when it did not parse) */
    json_t *id;         /* borrowed from root; a new JSON null when there is none (owned then) */
    bool id_owned;      /* id is the null above */
    const char *method; /* borrowed from root */
    json_t *params;     /* borrowed from root; NULL when absent */
    int err_code;       /* MCP_MSG_INVALID: a JSON-RPC error code */
    char err_msg[160];
};

/* Parses and classifies one message of len bytes (any bytes: not NUL-terminated, possibly
 * hostile). Bounded: more than MCP_MAX_MESSAGE_BYTES or deeper than MCP_MAX_DEPTH is refused
 * before jansson allocates; a JSON array (a batch, which MCP no longer has) is refused. Always
 * fills *m; release with mcp_msg_cleanup(). */
void mcp_msg_parse(const char *buf, size_t len, struct mcp_msg *m);
void mcp_msg_cleanup(struct mcp_msg *m);

/* {"jsonrpc":"2.0","id":id,"result":result}: result stolen, id borrowed (copied). */
json_t *mcp_result(json_t *id, json_t *result);
/* {"jsonrpc":"2.0","id":id,"error":{"code","message"}}; id borrowed (NULL: JSON null). */
json_t *mcp_error(json_t *id, int code, const char *message);
/* {"jsonrpc":"2.0","method":method,"params":params} (params stolen, may be NULL). */
json_t *mcp_notification(const char *method, json_t *params);

/* The tools/list result: {"tools":[...]}. agent_arg: every tool takes an "agent" argument
 * (roostd's /mcp, where the agent is not fixed by the session). */
json_t *mcp_tools_list(bool agent_arg);
/* True when `name` is one of the tools. */
bool mcp_tool_known(const char *name);

/* Checks a tools/call's arguments (may be NULL: {}) against the tool's input schema: required
 * members, types, ranges, enums, no unknown member. Returns true when they fit; else false with
 * *code the API error code a model can act on ("invalid_lease_s", "unknown_field", ...) and a
 * sentence in msg naming the argument and its rule. */
bool mcp_check_args(const char *tool, const json_t *args, bool agent_arg, const char **code,
                    char *msg, size_t msglen);

/* A successful tools/call result: structuredContent (stolen) and its text copy. */
json_t *mcp_tool_ok(json_t *structured);
/* A tool error ("isError": true) carrying {"error":{"code","message",...detail}} both as
 * structuredContent and as text. detail (stolen, may be NULL): more members of "error". */
json_t *mcp_tool_error(const char *code, const char *message, json_t *detail);

#endif
