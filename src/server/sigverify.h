/* SPDX-License-Identifier: MIT */
/* RFC 9421 request signatures on the server (DESIGN §6.2): the policy (signatures.require and
 * signatures.tenant.<id>), the checks made on the loop thread (components, window, digest), the
 * worker job that looks the key up, verifies and claims the nonce in the store. roostd's own
 * signing key is server_key.h's. */
#ifndef ROOST_SERVER_SIGVERIFY_H
#define ROOST_SERVER_SIGVERIFY_H

#include <stdbool.h>
#include <stddef.h>

#define SIG_MAX_WINDOW_S 300 /* expires - created */
#define SIG_SKEW_S 60        /* clock skew: created this far ahead, expires this far past */

struct request;
struct sigcheck;

/* True when the request must be verified: `policy_route` (an agent route or publish) and the
 * tenant's policy covers its method, or it carries a Signature / Signature-Input header (a
 * signature sent is always checked). */
bool sigverify_needed(struct request *rq, bool policy_route);

/* Verifies rq's signature. On success calls cont(rq) on the loop thread (possibly later, after
 * the store job); on failure answers 401 with the precise code and ends rq. */
void sigverify_start(struct request *rq, void (*cont)(struct request *rq));

/* Frees the state a check left on the request (NULL is a no-op). */
void sigcheck_free(struct sigcheck *c);

#endif
