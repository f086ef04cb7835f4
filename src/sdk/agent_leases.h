/* SPDX-License-Identifier: MIT */
/* The lease keeper of the agent loop: the queue of outcomes (acks, releases) the workers hand
 * over, its thread that tells roostd (acks batched, releases one by one, retried with backoff)
 * and extends every held lease at half-life, and the recovery of the leases a crashed run left.
 * Internal; not installed. */
#ifndef ROOST_SDK_AGENT_LEASES_H
#define ROOST_SDK_AGENT_LEASES_H

#include <stdint.h>

#include "sdk/agent_int.h"

enum agent_action_kind { AGENT_ACT_ACK, AGENT_ACT_RELEASE };

/* Queues an outcome for the keeper; takes the strings (freed, and the lease left to expire, when
 * out of memory). error (may be NULL): a release's error text, the event's last_error. attempts:
 * the event's, for the line the keeper logs once the server has said what a failure's release
 * did (released with its delay, or quarantined, its attempts used up); 0 logs nothing. Call with
 * mu held. */
void agent_leases_push(struct roost_agent *a, enum agent_action_kind kind, char *event_id,
                       char *lease_token, int64_t delay_s, enum roost_release_reason reason,
                       char *error, int attempts);
/* Frees the queue (roost_agent_free). */
void agent_leases_free_queue(struct roost_agent *a);

/* The keeper thread (arg: the agent). It flushes the queue once keeper_exit is set, giving up
 * after a deadline, and returns. */
void *agent_leases_keeper_main(void *arg);

/* Releases what a crashed previous run left: every lease of its consumer id (release-all), then
 * each lease still recorded in the state file; then records this run as the owner. Retries until
 * done or stopped. Returns ROOST_OK, or the error when roostd refuses the token or signature. */
int agent_leases_recover(struct roost_agent *a, struct roost_client *c);

#endif
