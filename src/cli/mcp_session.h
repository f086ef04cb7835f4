/* SPDX-License-Identifier: MIT */
/* One `roost mcp` session: the state shared by its threads (the stdio loop that answers requests,
 * the lease keeper that extends at half-life what the session handed out, the wake-up listener
 * on the SSE stream) and the tool calls made on the session's behalf (mcp_tools.c). */
#ifndef ROOST_CLI_MCP_SESSION_H
#define ROOST_CLI_MCP_SESSION_H

#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "roost/roost.h"

/* One lease the session handed out and keeps alive until it is acked or released. */
struct mcp_lease {
    char event_id[64];
    char token[257];
    int lease_s;
    int64_t next_ms;    /* monotonic time of the next extension */
    int64_t expires_ms; /* monotonic estimate of the server's claim_expires_at */
};

/* MCP logging levels (RFC 5424 order), for logging/setLevel. */
enum mcp_level {
    MCP_LOG_DEBUG = 0,
    MCP_LOG_INFO,
    MCP_LOG_NOTICE,
    MCP_LOG_WARNING,
    MCP_LOG_ERROR,
    MCP_LOG_CRITICAL,
    MCP_LOG_ALERT,
    MCP_LOG_EMERGENCY
};

struct mcp_session {
    const char *agent;
    char consumer[129];
    bool channel;                /* --channel: also emit notifications/claude/channel */
    struct roost_client *c;      /* the stdio loop's: tool calls */
    struct roost_client *keep_c; /* the lease keeper's */
    struct roost_client *sub_c;  /* the wake-up listener's */

    pthread_mutex_t out_mu; /* one message at a time on stdout */
    bool out_broken;        /* stdout is gone (EPIPE): the session ends */

    pthread_mutex_t mu; /* guards everything below it */
    pthread_cond_t cv;  /* CLOCK_MONOTONIC: the keeper and the listener's backoff wait on it */
    struct mcp_lease *leases;
    size_t n_leases, cap_leases;
    bool stopping;
    bool initialized;  /* notifications/initialized came */
    bool channel_owed; /* --channel: news came before initialized, told once it comes */
    bool subscribed;   /* resources/subscribe on the inbox resource */
    int log_level;     /* notifications/message from this level on */
    int64_t last_ping_ms;

    atomic_bool sse_up;
    atomic_llong head; /* last head the stream announced, -1 unknown */
    int wake_pipe[2];  /* the listener writes a byte per ping; claim's wait reads it */
    int term_pipe[2];  /* the signal handler writes a byte on SIGTERM/SIGINT/SIGHUP */

    /* --state-dir: processed ids (one per line, appended and fsynced before the ack). */
    const char *state_dir;
    int lock_fd;
    int processed_fd;
    char **processed;
    size_t n_processed, cap_processed;
};

/* Writes one JSON-RPC message (stolen) as one line on stdout. Thread-safe. */
void mcp_send(struct mcp_session *s, json_t *msg);
/* A notifications/message at `level` when the client asked for it, and a line on stderr. */
void mcp_log(struct mcp_session *s, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int64_t mcp_now_ms(void);

/* The tools/call of `tool` with arguments already checked by mcp_check_args: a tool result
 * (success or isError). */
json_t *mcp_tool_call(struct mcp_session *s, const char *tool, const json_t *args);
/* The inbox resource's contents (resources/read). */
json_t *mcp_inbox_resource(struct mcp_session *s, const char *uri);

/* Leases (mutex taken inside). */
void mcp_leases_add(struct mcp_session *s, const char *event_id, const char *token, int lease_s);
void mcp_leases_remove(struct mcp_session *s, const char *event_id);
size_t mcp_leases_count(struct mcp_session *s);
/* The keeper thread's body (arg: the session). */
void *mcp_keeper_main(void *arg);

/* --state-dir: lock it, load the processed ids, settle the consumer id. Returns 0 or -1 with a
 * message on stderr. */
int mcp_state_open(struct mcp_session *s);
void mcp_state_close(struct mcp_session *s);
bool mcp_processed_contains(struct mcp_session *s, const char *event_id);
/* Records an id durably (before its ack is sent). Returns 0 or -1. */
int mcp_processed_add(struct mcp_session *s, const char *event_id);

#endif
