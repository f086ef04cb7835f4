/* SPDX-License-Identifier: MIT */
/* The lease keeper (agent_leases.h). It runs on its own client, so that acks and extensions do
 * not wait behind the run thread's long polls. A settled lease leaves the state file before the
 * keeper's bookkeeping; an unsettled one is retried with backoff until the stop's deadline. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/timeutil.h"
#include "sdk/agent_leases.h"
#include "sdk/sdk.h"

#include "common/banned.h"

/* Acks sent in one request (and actions taken per round). */
#define AGENT_ACK_BATCH 100
/* After a stop, unanswered acks and releases are retried this long before the keeper gives up
 * (the final release-all still gives their leases back). */
#define AGENT_FLUSH_DEADLINE_MS 10000

/* An outcome waiting to be told to roostd. */
struct action {
    struct action *next;
    enum agent_action_kind kind;
    char *event_id;
    char *lease_token;
    char *error; /* a release's error text, or NULL */
    int64_t delay_s;
    enum roost_release_reason reason;
    int tries;
    int64_t not_before_ms; /* monotonic */
    int attempts;          /* > 0: log the release's outcome (agent_leases_push) */
    bool quarantined;      /* the server answered the release with status quarantined */
};

/* A lease to extend, copied out of its slot (the slot may be freed meanwhile). */
struct extend_job {
    char *event_id;
    char *lease_token;
};

void agent_leases_push(struct roost_agent *a, enum agent_action_kind kind, char *event_id,
                       char *lease_token, int64_t delay_s, enum roost_release_reason reason,
                       char *error, int attempts)
{
    struct action *x = calloc(1, sizeof *x);
    if (x == NULL) {
        /* Without memory the lease simply expires and the event comes back: nothing is lost. */
        free(event_id);
        free(lease_token);
        free(error);
        return;
    }
    x->error = error;
    x->kind = kind;
    x->event_id = event_id;
    x->lease_token = lease_token;
    x->delay_s = delay_s;
    x->reason = reason;
    x->attempts = attempts;
    if (a->act_tail != NULL) {
        a->act_tail->next = x;
    } else {
        a->act_head = x;
    }
    a->act_tail = x;
}

static void action_free(struct action *x)
{
    free(x->event_id);
    free(x->lease_token);
    free(x->error);
    free(x);
}

void agent_leases_free_queue(struct roost_agent *a)
{
    struct action *x = a->act_head;
    while (x != NULL) {
        struct action *next = x->next;
        action_free(x);
        x = next;
    }
    a->act_head = a->act_tail = NULL;
}

/* Handles the server's answer to an action: done (forget the lease) or retry later. mu held. */
static bool action_settle(struct roost_agent *a, struct action *x, int rc, int64_t now)
{
    if (agent_transient_rc(rc)) {
        x->tries++;
        int64_t d = 500;
        for (int i = 1; i < x->tries && d < 5000; i++) {
            d *= 2;
        }
        x->not_before_ms = now + agent_jitter(a, d < 5000 ? d : 5000);
        return false;
    }
    if (rc == ROOST_OK) {
        if (x->kind == AGENT_ACT_ACK) {
            a->acked++;
        } else if (x->quarantined) {
            a->quarantined++;
        } else {
            a->released++;
        }
    }
    if (a->outstanding > 0) {
        a->outstanding--;
    }
    return true;
}

/* Reads what the server made of a release (its answer's status) and logs a failure's outcome:
 * the last attempt of an event is quarantined, not retried, and says so. */
static void release_outcome(struct roost_agent *a, struct roost_client *c, struct action *x)
{
    size_t len = 0;
    const char *body = roost_client_last_body(c, &len);
    json_t *doc = json_loadb(body, len, 0, NULL);
    const char *status = json_string_value(json_object_get(doc, "status"));
    x->quarantined = status != NULL && strcmp(status, "quarantined") == 0;
    json_decref(doc);
    if (x->attempts <= 0) {
        return;
    }
    if (x->quarantined) {
        agent_log(a, "event %s attempt %d: quarantined, not retried (%s)", x->event_id, x->attempts,
                  x->reason == ROOST_RELEASE_POISON ? "the handler asked for it"
                                                    : "its attempts are used up: the server's "
                                                      "claim.max_attempts");
    } else if (x->delay_s > 0) {
        agent_log(a, "event %s attempt %d: released, retry in %" PRId64 " s", x->event_id,
                  x->attempts, x->delay_s);
    } else {
        agent_log(a, "event %s attempt %d: released", x->event_id, x->attempts);
    }
}

void *agent_leases_keeper_main(void *arg)
{
    struct roost_agent *a = arg;
    struct roost_client *c = NULL;
    if (agent_client_new(a, &c) != ROOST_OK) {
        return NULL;
    }
    roost_client_set_timeouts(c, 5000, 10000);
    struct action *batch[AGENT_ACK_BATCH];
    struct roost_ack acks[AGENT_ACK_BATCH];
    struct extend_job ext[AGENT_MAX_CONCURRENCY];
    int64_t flush_deadline = -1;
    int gave_up = 0;
    bool single_acks = false;

    pthread_mutex_lock(&a->mu);
    for (;;) {
        int64_t now = time_mono_ms();
        if (a->keeper_exit && flush_deadline < 0) {
            flush_deadline = now + AGENT_FLUSH_DEADLINE_MS;
        }
        /* Take up to a batch of ready actions: all acks together, releases one by one. */
        size_t n = 0;
        int64_t next_due = now + 250;
        struct action **pp = &a->act_head, *prev = NULL;
        while (*pp != NULL && n < AGENT_ACK_BATCH) {
            struct action *x = *pp;
            if (x->not_before_ms <= now) {
                *pp = x->next;
                if (a->act_tail == x) {
                    a->act_tail = prev;
                }
                x->next = NULL;
                batch[n++] = x;
            } else {
                if (x->not_before_ms < next_due) {
                    next_due = x->not_before_ms;
                }
                prev = x;
                pp = &x->next;
            }
        }
        /* Leases at half-life are extended (queued and running alike). */
        size_t n_ext = 0;
        for (int i = 0; i < a->concurrency; i++) {
            struct slot *s = &a->slots[i];
            if (s->state == SLOT_FREE || s->ev == NULL || s->ev->lease_token == NULL) {
                continue;
            }
            if (s->next_extend_ms <= now) {
                ext[n_ext].event_id = sdk_strdup(s->ev->event_id);
                ext[n_ext].lease_token = sdk_strdup(s->ev->lease_token);
                if (ext[n_ext].event_id == NULL || ext[n_ext].lease_token == NULL) {
                    free(ext[n_ext].event_id);
                    free(ext[n_ext].lease_token);
                    continue;
                }
                n_ext++;
                s->next_extend_ms = now + (int64_t)a->lease_s * 500;
            } else if (s->next_extend_ms < next_due) {
                next_due = s->next_extend_ms;
            }
        }
        if (n == 0 && n_ext == 0) {
            if (a->keeper_exit && (a->act_head == NULL || now >= flush_deadline)) {
                break;
            }
            agent_cond_wait_ms(a, next_due - now > 0 ? next_due - now : 1);
            continue;
        }
        pthread_mutex_unlock(&a->mu);

        /* Acks in one request; releases individually. */
        size_t n_acks = 0;
        for (size_t i = 0; i < n; i++) {
            if (batch[i]->kind == AGENT_ACT_ACK) {
                acks[n_acks].event_id = batch[i]->event_id;
                acks[n_acks].lease_token = batch[i]->lease_token;
                acks[n_acks].rc = ROOST_OK;
                n_acks++;
            }
        }
        int batch_rc = ROOST_OK;
        if (n_acks > 0 && !single_acks) {
            batch_rc = roost_events_ack(c, a->agent_id, acks, n_acks, NULL);
            agent_note_request(a, batch_rc);
            if (agent_auth_rc(batch_rc)) {
                agent_log(a, "acks refused: %s", roost_client_errmsg(c));
            }
            if (batch_rc == ROOST_ENOTFOUND || batch_rc == ROOST_EMETHOD) {
                /* A roostd without the batch route: ack one by one from now on. */
                agent_log(a, "no batch ack route on this server: acking one by one");
                single_acks = true;
            }
        }
        if (n_acks > 0 && single_acks) {
            batch_rc = ROOST_OK;
            for (size_t k = 0; k < n_acks; k++) {
                acks[k].rc = roost_event_ack(c, a->agent_id, acks[k].event_id, acks[k].lease_token);
                agent_note_request(a, acks[k].rc);
            }
        }
        int rel_rc[AGENT_ACK_BATCH];
        for (size_t i = 0, k = 0; i < n; i++) {
            struct action *x = batch[i];
            if (x->kind == AGENT_ACT_ACK) {
                rel_rc[i] = batch_rc == ROOST_OK ? acks[k].rc : batch_rc;
                k++;
                if (rel_rc[i] != ROOST_OK && !agent_transient_rc(rel_rc[i])) {
                    agent_log(a, "ack of %s refused: %s", x->event_id, roost_err_code(rel_rc[i]));
                }
                continue;
            }
            rel_rc[i] = roost_event_release(c, a->agent_id, x->event_id, x->lease_token, x->delay_s,
                                            x->reason, x->error);
            agent_note_request(a, rel_rc[i]);
            if (rel_rc[i] == ROOST_OK) {
                release_outcome(a, c, x);
            }
            if (rel_rc[i] != ROOST_OK && !agent_transient_rc(rel_rc[i])) {
                agent_log(a, "release of %s refused: %s", x->event_id, roost_err_code(rel_rc[i]));
            }
        }
        int ext_rc[AGENT_MAX_CONCURRENCY];
        for (size_t i = 0; i < n_ext; i++) {
            ext_rc[i] = roost_event_extend(c, a->agent_id, ext[i].event_id, ext[i].lease_token,
                                           a->lease_s, NULL);
            agent_note_request(a, ext_rc[i]);
            if (ext_rc[i] != ROOST_OK && !agent_transient_rc(ext_rc[i])) {
                agent_log(a, "extending the lease of %s failed: %s", ext[i].event_id,
                          roost_err_code(ext_rc[i]));
            }
        }
        /* Settled leases leave the state file before the bookkeeping below. */
        for (size_t i = 0; i < n; i++) {
            if (!agent_transient_rc(rel_rc[i])) {
                agent_state_lease_forget(&a->st, batch[i]->event_id);
            }
        }

        pthread_mutex_lock(&a->mu);
        now = time_mono_ms();
        for (size_t i = 0; i < n; i++) {
            struct action *x = batch[i];
            if (action_settle(a, x, rel_rc[i], now)) {
                action_free(x);
            } else if (a->keeper_exit && now >= flush_deadline) {
                /* release-all at the very end still gives these back. */
                gave_up++;
                action_free(x);
            } else {
                if (a->act_tail != NULL) {
                    a->act_tail->next = x;
                } else {
                    a->act_head = x;
                }
                a->act_tail = x;
            }
        }
        for (size_t i = 0; i < n_ext; i++) {
            if (agent_transient_rc(ext_rc[i])) {
                /* Try again soon: the lease is still running down. */
                for (int j = 0; j < a->concurrency; j++) {
                    struct slot *s = &a->slots[j];
                    if (s->ev != NULL && strcmp(s->ev->event_id, ext[i].event_id) == 0) {
                        s->next_extend_ms = now + 1000;
                    }
                }
            }
            free(ext[i].event_id);
            free(ext[i].lease_token);
        }
        pthread_cond_broadcast(&a->cond);
    }
    pthread_mutex_unlock(&a->mu);
    if (gave_up > 0) {
        agent_log(a, "shutdown: gave up on %d ack(s)/release(s) roostd did not answer", gave_up);
    }
    roost_client_free(c);
    return NULL;
}

/* Acks the recorded leases of events already processed (their handler finished, their ack was
 * lost): released instead, they would run again on whichever consumer of the agent claimed them
 * next. Settled rows (acked, or refused: already completed, expired, re-claimed) leave the state
 * file. Returns ROOST_OK or the first transient or auth error. */
static int recover_acks(struct roost_agent *a, struct roost_client *c)
{
    struct agent_state_lease rows[AGENT_STATE_LEASE_PAGE];
    struct roost_ack acks[AGENT_STATE_LEASE_PAGE];
    int n;
    while ((n = agent_state_leases_list(&a->st, true, rows, AGENT_STATE_LEASE_PAGE)) > 0) {
        for (int i = 0; i < n; i++) {
            acks[i] = (struct roost_ack){rows[i].event_id, rows[i].lease_token, ROOST_OK};
        }
        int rc = roost_events_ack(c, a->agent_id, acks, (size_t)n, NULL);
        agent_note_request(a, rc);
        if (rc != ROOST_OK && !agent_transient_rc(rc) && !agent_auth_rc(rc)) {
            /* A roostd without the batch route (404, 405), or one whose limits.max_batch is
             * smaller than a page (invalid_acks): one by one. */
            rc = ROOST_OK;
            for (int i = 0; i < n; i++) {
                acks[i].rc = roost_event_ack(c, a->agent_id, rows[i].event_id, rows[i].lease_token);
                agent_note_request(a, acks[i].rc);
            }
        }
        if (rc != ROOST_OK) {
            return rc;
        }
        int done = 0;
        for (int i = 0; i < n; i++) {
            if (agent_transient_rc(acks[i].rc) || agent_auth_rc(acks[i].rc)) {
                return acks[i].rc;
            }
            done += acks[i].rc == ROOST_OK;
            agent_state_lease_forget(&a->st, rows[i].event_id);
        }
        if (done > 0) {
            agent_log(a, "recovery: acked %d processed event(s) whose ack was lost", done);
        }
    }
    return ROOST_OK;
}

int agent_leases_recover(struct roost_agent *a, struct roost_client *c)
{
    char old[160];
    agent_state_owner_get(&a->st, old, sizeof old);
    int64_t backoff = 1000;
    while (!agent_stopping(a)) {
        /* Acks first: a release-all would give the processed events back too. */
        int rc = recover_acks(a, c);
        if (rc == ROOST_OK && old[0] != '\0') {
            int64_t n = 0;
            rc = roost_inbox_release_all(c, a->agent_id, old, &n);
            agent_note_request(a, rc);
            if (rc == ROOST_OK && n > 0) {
                agent_log(a, "recovery: released %" PRId64 " lease(s) of the previous run (%s)", n,
                          old);
            }
        }
        /* Leases recorded individually (a claim without consumer, or another consumer id). */
        struct agent_state_lease rows[AGENT_STATE_LEASE_PAGE];
        int n = rc == ROOST_OK
                    ? agent_state_leases_list(&a->st, false, rows, AGENT_STATE_LEASE_PAGE)
                    : 0;
        for (int i = 0; rc == ROOST_OK && i < n; i++) {
            int r = roost_event_release(c, a->agent_id, rows[i].event_id, rows[i].lease_token, 0,
                                        ROOST_RELEASE_SHUTDOWN, NULL);
            agent_note_request(a, r);
            if (agent_transient_rc(r) || agent_auth_rc(r)) {
                rc = r;
                break;
            }
            /* Released now, or already gone (acked, expired, re-claimed): forget it. */
            agent_state_lease_forget(&a->st, rows[i].event_id);
        }
        if (rc == ROOST_OK && n == AGENT_STATE_LEASE_PAGE) {
            continue; /* more rows */
        }
        if (rc == ROOST_OK) {
            break;
        }
        if (agent_auth_rc(rc)) {
            agent_log(a, "recovery refused: %s", roost_client_errmsg(c));
            return rc;
        }
        agent_log(a, "recovery: %s; retrying", roost_client_errmsg(c));
        pthread_mutex_lock(&a->mu);
        int64_t w = agent_jitter(a, backoff);
        pthread_mutex_unlock(&a->mu);
        agent_pause_ms(a, w);
        backoff = agent_backoff_next(backoff, (int64_t)a->poll_ceiling_s * 1000);
    }
    agent_state_owner_set(&a->st, a->consumer, (int64_t)getpid());
    int64_t left = agent_state_leases_count(&a->st);
    pthread_mutex_lock(&a->mu);
    a->outstanding = left;
    pthread_mutex_unlock(&a->mu);
    return ROOST_OK;
}
