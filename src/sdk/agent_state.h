/* SPDX-License-Identifier: MIT */
/* The agent's local state file (STATE_DIR/agent.db, SQLite, guarded by STATE_DIR/agent.lock):
 * the cursor and connection state for `roost agent status`, the processed event ids that stop a
 * handler from running twice, and the outstanding leases a crashed run leaves for the next one to
 * release. Internal to the agent loop of libroost; not installed. */
#ifndef ROOST_SDK_AGENT_STATE_H
#define ROOST_SDK_AGENT_STATE_H

#include <pthread.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "roost/roost_agent.h"

/* Leases recovery reads per round (agent_state_leases_list). */
#define AGENT_STATE_LEASE_PAGE 64

struct agent_state {
    sqlite3 *db;
    /* Guards db. The agent takes it after its own mutex, never the other way round. */
    pthread_mutex_t mu;
    int lock_fd; /* agent.lock, flocked exclusively for the agent's life; -1 when not open */
    int inserts_since_prune;
    int processed_max;
    int64_t processed_max_age_s;
};

/* One recorded lease (ids longer than the fields are cut, which makes their release fail). */
struct agent_state_lease {
    char event_id[64];
    char lease_token[64];
};

/* Prepares st (nothing opened yet) with the processed-set limits. */
void agent_state_init(struct agent_state *st, int processed_max, int64_t processed_max_age_s);
/* Closes the file and releases the lock (safe after a failed or no open). */
void agent_state_cleanup(struct agent_state *st);
/* Creates dir (0700) when missing, takes its lock and opens (creating) the state file, which
 * must belong to agent_id or to nobody yet. ROOST_OK, ROOST_ESTATE (locked by another process,
 * or another agent's file), ROOST_EIO, ROOST_EINVAL (path too long). */
int agent_state_open(struct agent_state *st, const char *dir, const char *agent_id);

/* What the previous run left: cursor, last sync (Unix ms) and the number of recorded leases. */
void agent_state_load(struct agent_state *st, int64_t *cursor, int64_t *last_sync_ms,
                      int64_t *leases);
/* Records the connection state, cursor and last sync in one transaction. */
void agent_state_save_meta(struct agent_state *st, enum roost_agent_conn conn, int64_t cursor,
                           int64_t last_sync_ms);
/* The consumer id of the previous run ("" when none) into buf. */
void agent_state_owner_get(struct agent_state *st, char *buf, size_t len);
/* Records this run's consumer id and pid. */
void agent_state_owner_set(struct agent_state *st, const char *consumer, int64_t pid);

bool agent_state_processed_contains(struct agent_state *st, const char *event_id);
/* Records a handled event (before its ack is sent); prunes the set by age and count now and
 * then. Returns 0, or -1 when the file cannot be written. */
int agent_state_processed_add(struct agent_state *st, const char *event_id);
int64_t agent_state_processed_count(struct agent_state *st);

/* Records the leases of a claim in one transaction, before any handler runs. 0 or -1. */
int agent_state_leases_store(struct agent_state *st, const struct roost_events *evs);
/* Up to `max` recorded leases into rows (with `processed`, only those of processed events);
 * returns how many. */
int agent_state_leases_list(struct agent_state *st, bool processed, struct agent_state_lease *rows,
                            int max);
void agent_state_lease_forget(struct agent_state *st, const char *event_id);
void agent_state_leases_clear(struct agent_state *st);
int64_t agent_state_leases_count(struct agent_state *st);

#endif
