/* SPDX-License-Identifier: MIT */
/* Internals of the agent loop (include/roost/roost_agent.h) shared by its files: the agent
 * object, the slots handlers run from, and the helpers every thread uses (logging, backoff,
 * waits, the connection state). Not installed.
 *
 *   agent.c         the object: options, new/free/stop/status, the shared helpers
 *   agent_loop.c    roost_agent_run: recovery, cursor sync, claims, workers, the SSE thread
 *   agent_leases.c  the keeper: batched acks, releases, lease extension at half-life
 *   agent_state.c   the local SQLite state file
 */
#ifndef ROOST_SDK_AGENT_INT_H
#define ROOST_SDK_AGENT_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "roost/roost_agent.h"
#include "sdk/agent_state.h"

#define AGENT_MAX_CONCURRENCY 256

enum slot_state { SLOT_FREE = 0, SLOT_QUEUED, SLOT_RUNNING };

/* One claimed event: queued by the run thread, run by a worker, its lease extended by the
 * keeper. */
struct slot {
    enum slot_state state;
    struct roost_event *ev;
    int64_t next_extend_ms; /* monotonic */
};

struct action; /* an outcome waiting for the keeper (agent_leases.c) */

struct roost_agent {
    /* options (copied) */
    char *server_url, *token, *agent_id, *state_dir, *consumer, *ca_file;
    roost_token_fn token_cb; /* may be NULL (roost_agent_options.token_cb) */
    void *token_cb_arg;
    roost_signing_key_fn signing_key_cb; /* may be NULL (roost_agent_options.signing_key_cb) */
    void *signing_key_cb_arg;
    char *signing_key, *key_id, *key_alg; /* signing_key NULL: requests are not signed */
    int concurrency, lease_s, poll_ceiling_s, long_poll_s, tempfail_max;
    int64_t stream_resync_ms;       /* safety pull while streaming (stream_resync_s) */
    roost_agent_handler_fn handler; /* one of handler, handler_ex */
    roost_agent_handler_ex_fn handler_ex;
    void *handler_ctx;
    roost_agent_state_fn on_state;
    roost_agent_conn_fn on_conn;
    roost_agent_log_fn on_log;
    void *cb_ctx;

    struct agent_state st; /* the state file, with its own lock (taken after mu) */

    /* stop */
    atomic_int stop;
    int stop_pipe[2];

    /* shared, under mu */
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool run_called;
    bool sse_up;
    bool server_ok; /* the last request reached roostd */
    bool contacted; /* any request reached roostd */
    bool need_sync;
    unsigned wake_gen; /* counts stream connects and pings: "roostd has news, pull now" */
    int64_t sse_head;  /* last head an SSE frame announced, -1 unknown */
    struct slot *slots;
    int n_busy; /* slots not free */
    struct action *act_head, *act_tail;
    bool workers_exit, keeper_exit;
    int fatal_rc;
    enum roost_agent_conn conn;
    int64_t cursor;
    int64_t last_sync_ms;
    int64_t last_meta_sync_ms; /* last_sync_ms value last written to the state file */
    int64_t handled, acked, released, quarantined, outstanding;

    /* callbacks are serialised by cb_mu; conn_notified is what on_conn last heard */
    pthread_mutex_t cb_mu;
    enum roost_agent_conn conn_notified;
    unsigned rng;
};

static inline bool agent_stopping(const struct roost_agent *a)
{
    return atomic_load(&a->stop) != 0;
}

/* One line to on_log (when set), serialised with the other callbacks. */
void agent_log(struct roost_agent *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A random factor in [0.75, 1.25) applied to a delay, so that many agents restarted together do
 * not retry in lockstep. Call with mu held. */
int64_t agent_jitter(struct roost_agent *a, int64_t ms);
/* Waits on cond for up to ms (mu held). */
void agent_cond_wait_ms(struct roost_agent *a, int64_t ms);
/* Sleeps up to ms, waking early on a stop (mu not held). */
void agent_pause_ms(struct roost_agent *a, int64_t ms);
/* A backoff delay doubled, up to max_ms. */
int64_t agent_backoff_next(int64_t ms, int64_t max_ms);
/* Errors that say "try again later" rather than "this will never work". */
bool agent_transient_rc(int rc);
/* A refused token or signature: a retry cannot fix it. */
bool agent_auth_rc(int rc);

/* Writes the connection state, cursor and last sync to the state file (mu held). */
void agent_persist_meta(struct roost_agent *a);
/* Recomputes the connection state (mu held). */
void agent_conn_update(struct roost_agent *a);
/* Tells on_conn about a change (mu not held). */
void agent_conn_notify(struct roost_agent *a);
/* Records the outcome of a request to roostd (mu not held). */
void agent_note_request(struct roost_agent *a, int rc);

/* A client with the agent's URL, token, CA and signing key. */
int agent_client_new(const struct roost_agent *a, struct roost_client **out);

#endif
