/* SPDX-License-Identifier: MIT */
/* libFuzzer target: one JSON-RPC message as `roost mcp` reads a line of stdin and roostd's /mcp a
 * POST body (src/common/mcp.c): mcp_msg_parse, then for a tools/call the argument check of every
 * tool against the message's arguments, with and without the agent argument. Invariants: an
 * invalid message has a JSON-RPC error code and a NUL-terminated message; a request has a method
 * and a string or integer id; the answers built from it can be rendered. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/mcp.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const tool_names[] = {"claim",      "ack",     "release",   "extend",
                                         "read_inbox", "publish", "get_state", "nope"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mcp_msg m;
    mcp_msg_parse((const char *)data, size, &m);
    json_t *answer = NULL;
    switch (m.kind) {
    case MCP_MSG_INVALID:
        if (m.err_code > -32000 || m.err_code < -32700 || strlen(m.err_msg) >= sizeof m.err_msg) {
            abort();
        }
        answer = mcp_error(m.id, m.err_code, m.err_msg);
        break;
    case MCP_MSG_REQUEST:
        if (m.method == NULL || !(json_is_string(m.id) || json_is_integer(m.id))) {
            abort();
        }
        if (m.params != NULL) {
            const json_t *args = json_object_get(m.params, "arguments");
            for (size_t i = 0; i < sizeof tool_names / sizeof tool_names[0]; i++) {
                const char *code = NULL;
                char why[256];
                for (int agent = 0; agent < 2; agent++) {
                    if (!mcp_check_args(tool_names[i], args, agent, &code, why, sizeof why) &&
                        (code == NULL || strlen(why) >= sizeof why)) {
                        abort();
                    }
                }
            }
        }
        answer = mcp_result(m.id, mcp_tool_error("invalid_request", "fuzz", NULL));
        break;
    case MCP_MSG_NOTIFICATION:
        if (m.method == NULL) {
            abort();
        }
        break;
    case MCP_MSG_RESPONSE:
        break;
    }
    if (answer != NULL) {
        char *text = json_dumps(answer, JSON_COMPACT);
        if (text == NULL || strchr(text, '\n') != NULL) {
            abort();
        }
        free(text);
        json_decref(answer);
    }
    mcp_msg_cleanup(&m);
    return 0;
}
