/* SPDX-License-Identifier: MIT */
/* roost_agent_run: the loop of the agent and its threads (agent.h).
 *
 *   run (the caller)  recovery, cursor sync, claims (long polls while SSE is down) → slots
 *   workers × N       take a queued slot, consult the processed set, run the handler, queue
 *                     the outcome (ack / release) for the keeper
 *   keeper            batched acks, releases, lease extension at half-life (agent_leases.c)
 *   sse               GET …/subscribe through sse_reader.c; pings set need_sync
 *   watcher           blocks on the stop pipe, so roost_agent_stop() stays async-signal-safe
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/strutil.h"
#include "common/timeutil.h"
#include "sdk/agent_int.h"
#include "sdk/agent_leases.h"
#include "sdk/sdk.h"
#include "sdk/sse_reader.h"

#include "common/banned.h"

/* Reconnection backoff of the SSE stream: from 1 s, doubling up to this. */
#define AGENT_SSE_MAX_BACKOFF_MS 30000

/* ---- workers ---------------------------------------------------------------------------- */

/* The release delay of a failed or "later" handler run: 1 s doubling per attempt, at most
 * 300 s. */
static int64_t retry_delay_s(int attempts)
{
    int64_t d = 1;
    for (int i = 1; i < attempts && d < 300; i++) {
        d *= 2;
    }
    return d < 300 ? d : 300;
}

/* The length of the valid UTF-8 sequence at s (n bytes left), 0 when it is not one. Strict as
 * jansson is (no overlongs, no surrogates, nothing above U+10FFFF). */
static size_t utf8_seq_len(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c < 0x80) {
        return 1;
    } else if (c >= 0xC2 && c <= 0xDF) {
        len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        len = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        len = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    if (n < len || s[1] < lo || s[1] > hi) {
        return 0;
    }
    for (size_t i = 2; i < len; i++) {
        if (s[i] < 0x80 || s[i] > 0xBF) {
            return 0;
        }
    }
    return len;
}

/* A handler's error text made fit for the release request (JSON wants UTF-8) and for one log
 * line: invalid bytes become '?', control characters but newline and tab a space. */
static char *error_text_clean(const char *in)
{
    size_t n = strlen(in);
    char *out = malloc(n + 1);
    if (out == NULL) {
        return NULL;
    }
    const unsigned char *s = (const unsigned char *)in;
    size_t i = 0, k = 0;
    while (i < n) {
        size_t l = utf8_seq_len(s + i, n - i);
        if (l == 0) {
            out[k++] = '?';
            i++;
        } else if (l == 1 && s[i] < 0x20 && s[i] != '\n' && s[i] != '\t') {
            out[k++] = ' ';
            i++;
        } else {
            memcpy(out + k, s + i, l);
            k += l;
            i += l;
        }
    }
    out[k] = '\0';
    return out;
}

/* What the agent does with a handler's result: the release (reason, delay) or the ack. */
struct disposition {
    enum agent_action_kind kind;
    enum roost_release_reason reason;
    int64_t delay_s;
    const char *what; /* for the log line */
};

static struct disposition dispose(const struct roost_agent *a, int result, int attempts,
                                  int64_t retry_after_s)
{
    struct disposition d = {AGENT_ACT_RELEASE, ROOST_RELEASE_TRANSIENT, 0, ""};
    int64_t delay = retry_after_s > 0 ? retry_after_s : retry_delay_s(attempts);
    switch (result) {
    case ROOST_AGENT_ACK:
        d.kind = AGENT_ACT_ACK;
        d.reason = ROOST_RELEASE_DEFAULT;
        d.what = "ack";
        break;
    case ROOST_AGENT_RETRY_LATER:
        /* A delay that grows keeps "later" from spinning (claim, release, ping, claim...), and
         * a bound keeps it from going on for ever: past it, it is a failure like any other. */
        d.delay_s = delay;
        if (attempts < a->tempfail_max) {
            d.reason = ROOST_RELEASE_SHUTDOWN;
            d.what = "retry later";
        } else {
            d.what = "retry later, counted as a failure";
        }
        break;
    case ROOST_AGENT_QUARANTINE:
        d.reason = ROOST_RELEASE_POISON;
        d.what = "quarantine";
        break;
    default:
        d.delay_s = delay;
        d.what = "failed";
        break;
    }
    return d;
}

static void *worker_main(void *arg)
{
    struct roost_agent *a = arg;
    struct roost_agent_outcome outcome, *oc = &outcome;
    pthread_mutex_lock(&a->mu);
    for (;;) {
        struct slot *s = NULL;
        for (int i = 0; i < a->concurrency && s == NULL; i++) {
            if (a->slots[i].state == SLOT_QUEUED) {
                s = &a->slots[i];
            }
        }
        if (s == NULL) {
            if (a->workers_exit) {
                break;
            }
            pthread_cond_wait(&a->cond, &a->mu);
            continue;
        }
        s->state = SLOT_RUNNING;
        struct roost_event *ev = s->ev;
        pthread_mutex_unlock(&a->mu);

        int result;
        bool ran = false;
        memset(oc, 0, sizeof *oc);
        int64_t t0 = time_mono_ms();
        struct disposition d;
        if (agent_state_processed_contains(&a->st, ev->event_id)) {
            /* Handled before (its ack was lost): ack again, never run twice. */
            agent_log(a, "event %s already processed: acking without running the handler",
                      ev->event_id);
            d = dispose(a, ROOST_AGENT_ACK, ev->attempts, 0);
        } else {
            result = a->handler != NULL ? a->handler(ev, a->handler_ctx)
                                        : a->handler_ex(ev, oc, a->handler_ctx);
            ran = true;
            oc->error[sizeof oc->error - 1] = '\0';
            if (oc->retry_after_s < 0 || oc->retry_after_s > 31536000) {
                oc->retry_after_s = 0;
            }
            d = dispose(a, result, ev->attempts, oc->retry_after_s);
            if (result == ROOST_AGENT_ACK && agent_state_processed_add(&a->st, ev->event_id) != 0) {
                agent_log(a, "cannot record event %s as processed: releasing it", ev->event_id);
                d = (struct disposition){AGENT_ACT_RELEASE, ROOST_RELEASE_SHUTDOWN, 0,
                                         "not recorded, released"};
            }
        }
        char *err = oc->error[0] != '\0' ? error_text_clean(oc->error) : NULL;
        if (ran) {
            /* One line per event: what ran, how long, what came of it, and why (the error's
             * last line; the whole text goes to the server as last_error). A failure's release
             * is logged by the keeper once the server has answered: released with its delay,
             * or quarantined when that was its last attempt. */
            char delay[48] = "";
            if (d.delay_s > 0 && d.reason != ROOST_RELEASE_TRANSIENT) {
                snprintf(delay, sizeof delay, ", retry in %" PRId64 " s", d.delay_s);
            }
            const char *why = err != NULL ? err : "";
            size_t at = 0;
            int why_len = (int)strutil_last_line(why, strlen(why), &at);
            agent_log(a, "event %s attempt %d: %s%s after %" PRId64 " ms%s%.*s", ev->event_id,
                      ev->attempts, d.what, delay, time_mono_ms() - t0, why_len > 0 ? ": " : "",
                      why_len > 300 ? 300 : why_len, why + at);
        }

        pthread_mutex_lock(&a->mu);
        if (ran) {
            a->handled++;
        }
        agent_leases_push(a, d.kind, ev->event_id, ev->lease_token, d.delay_s, d.reason,
                          d.kind == AGENT_ACT_RELEASE ? err : NULL,
                          ran && d.kind == AGENT_ACT_RELEASE && d.reason == ROOST_RELEASE_TRANSIENT
                              ? ev->attempts
                              : 0);
        if (d.kind == AGENT_ACT_ACK) {
            free(err);
        }
        ev->event_id = NULL;
        ev->lease_token = NULL;
        sdk_event_free(ev);
        s->ev = NULL;
        s->state = SLOT_FREE;
        a->n_busy--;
        pthread_cond_broadcast(&a->cond);
    }
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* Gives a claimed event back from the run thread's point of view (not started). mu held. */
static void slot_release_unstarted(struct roost_agent *a, struct slot *s)
{
    agent_leases_push(a, AGENT_ACT_RELEASE, s->ev->event_id, s->ev->lease_token, 0,
                      ROOST_RELEASE_SHUTDOWN, NULL, 0);
    s->ev->event_id = NULL;
    s->ev->lease_token = NULL;
    sdk_event_free(s->ev);
    s->ev = NULL;
    s->state = SLOT_FREE;
    a->n_busy--;
}

/* ---- SSE -------------------------------------------------------------------------------- */

/* The stream is up: the server is reachable, and whatever happened while it was down is pulled. */
static void on_sse_open(void *ctx)
{
    struct roost_agent *a = ctx;
    pthread_mutex_lock(&a->mu);
    a->sse_up = true;
    a->server_ok = true;
    a->contacted = true;
    a->need_sync = true;
    a->wake_gen++;
    a->last_sync_ms = time_now_ms();
    agent_conn_update(a);
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->mu);
    agent_conn_notify(a);
}

static int on_sse_ping(const char *event, int64_t hint, void *ctx)
{
    struct roost_agent *a = ctx;
    bool ping = strcmp(event, "inbox_updated") == 0;
    bool beat = strcmp(event, "heartbeat") == 0;
    if (!ping && !beat) {
        return 0;
    }
    pthread_mutex_lock(&a->mu);
    /* A ping always means "pull"; a heartbeat only when it shows a head we have not seen. A
     * pull now, that is: roostd has just committed something, so whatever backoff an earlier
     * failure (a database outage, say) left is over. */
    if (ping || (hint >= 0 && hint != a->sse_head)) {
        a->need_sync = true;
        a->wake_gen++;
        pthread_cond_broadcast(&a->cond);
    }
    if (hint >= 0) {
        a->sse_head = hint;
    }
    pthread_mutex_unlock(&a->mu);
    return 0;
}

/* Keeps the stream open, reconnecting with backoff, until the stop. Its own client: the read
 * blocks, and the stop flag aborts it. */
static void *sse_main(void *arg)
{
    struct roost_agent *a = arg;
    struct roost_client *c = NULL;
    if (agent_client_new(a, &c) != ROOST_OK) {
        agent_log(a, "cannot set up the SSE stream: polling only");
        return NULL;
    }
    c->abort_flag = &a->stop;
    struct sdk_sse_reader r;
    sdk_sse_reader_init(&r, on_sse_ping, on_sse_open, a);
    int64_t backoff = 1000;
    while (!agent_stopping(a)) {
        sdk_sse_reader_read(&r, c, a->agent_id);
        if (!r.sent) {
            agent_log(a, "cannot set up the SSE stream (%s): polling only", roost_client_errmsg(c));
            break;
        }
        pthread_mutex_lock(&a->mu);
        a->sse_up = false;
        if (!agent_stopping(a)) {
            agent_conn_update(a); /* (while stopping, the next state is "stopped") */
        }
        pthread_cond_broadcast(&a->cond);
        pthread_mutex_unlock(&a->mu);
        agent_conn_notify(a);
        if (agent_stopping(a)) {
            break;
        }
        if (r.opened) {
            backoff = 1000; /* it worked until now: reconnect soon */
            agent_log(a, "SSE stream ended (%s): reconnecting", roost_client_errmsg(c));
        } else {
            agent_log(a, "SSE connect failed (HTTP %d, %s): polling meanwhile",
                      roost_client_http_status(c), roost_client_errmsg(c));
        }
        /* The server's retry: is a floor (bounded, so a hostile value cannot stall us). */
        int64_t floor_ms =
            r.parser.retry_ms > 0 && r.parser.retry_ms < 60000 ? r.parser.retry_ms : 0;
        pthread_mutex_lock(&a->mu);
        int64_t wait = agent_jitter(a, backoff > floor_ms ? backoff : floor_ms);
        int64_t until = time_mono_ms() + wait;
        while (!agent_stopping(a) && time_mono_ms() < until) {
            agent_cond_wait_ms(a, until - time_mono_ms());
        }
        pthread_mutex_unlock(&a->mu);
        backoff = agent_backoff_next(backoff, AGENT_SSE_MAX_BACKOFF_MS);
    }
    sdk_sse_reader_cleanup(&r);
    roost_client_free(c);
    return NULL;
}

/* ---- stop watcher ----------------------------------------------------------------------- */

static void *watcher_main(void *arg)
{
    struct roost_agent *a = arg;
    /* The read end blocks (only the write end, used from signal handlers, is non-blocking). */
    while (!agent_stopping(a)) {
        char b[16];
        ssize_t r = read(a->stop_pipe[0], b, sizeof b);
        if (r == 0 || (r < 0 && errno != EINTR)) {
            break;
        }
    }
    pthread_mutex_lock(&a->mu);
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->mu);
    return NULL;
}

/* ---- the run thread --------------------------------------------------------------------- */

/* Follows the cursor up to the head (read-only inbox reads); on 410 fetches the state, hands it
 * to on_state and continues from its cursor. Returns the last rc. */
static int cursor_sync(struct roost_agent *a, struct roost_client *c)
{
    pthread_mutex_lock(&a->mu);
    int64_t cursor = a->cursor, head = a->sse_head;
    pthread_mutex_unlock(&a->mu);
    if (head >= 0 && cursor >= head) {
        return ROOST_OK; /* the stream told us there is nothing new to read */
    }
    int rc = ROOST_OK;
    for (int page = 0; page < 64 && !agent_stopping(a); page++) {
        struct roost_events *evs = NULL;
        /* The claims deliver the work; the read only checks that the cursor is still kept
         * (else 410) and learns the head, so one event per read is enough. */
        rc = roost_inbox_read(c, a->agent_id, cursor, 1, 0, &evs);
        agent_note_request(a, rc);
        if (rc == ROOST_EGONE) {
            char *state = NULL;
            int64_t scur = 0;
            int64_t oldest = roost_client_oldest_cursor(c);
            rc = roost_state_get(c, a->agent_id, &state, &scur);
            agent_note_request(a, rc);
            if (rc != ROOST_OK) {
                break;
            }
            agent_log(a,
                      "cursor %" PRId64 " expired (oldest kept %" PRId64
                      "): resynced from state, continuing at cursor %" PRId64,
                      cursor, oldest, scur);
            if (a->on_state != NULL) {
                pthread_mutex_lock(&a->cb_mu);
                a->on_state(state, scur, a->cb_ctx);
                pthread_mutex_unlock(&a->cb_mu);
            }
            roost_free(state);
            cursor = scur;
            continue;
        }
        if (rc == ROOST_ECURSOR) {
            /* Our cursor is beyond the head: roostd's store was restored from an older backup.
             * Read again from the start (a 410 then resyncs from the state). */
            agent_log(a, "cursor %" PRId64 " is beyond the server's head: reading from 0", cursor);
            cursor = 0;
            rc = ROOST_OK;
            continue;
        }
        if (rc != ROOST_OK) {
            roost_events_free(evs);
            break;
        }
        bool more = evs->has_more;
        if (evs->head >= 0) {
            cursor = evs->head > cursor ? evs->head : cursor;
            more = false;
        } else {
            cursor = evs->next_cursor; /* a server that does not tell its head: page along */
        }
        roost_events_free(evs);
        if (!more) {
            break;
        }
    }
    pthread_mutex_lock(&a->mu);
    if (cursor != a->cursor) {
        a->cursor = cursor;
        agent_persist_meta(a);
    }
    pthread_mutex_unlock(&a->mu);
    return rc;
}

/* The least lease a claim's answer must bring to be worth running: 10 % of it, at least 1 s, but
 * never more than a quarter (so that 1 s leases still work). */
static int64_t lease_min_left_ms(const struct roost_agent *a)
{
    int64_t lease_ms = (int64_t)a->lease_s * 1000;
    int64_t m = lease_ms / 10 > 1000 ? lease_ms / 10 : 1000;
    return m < lease_ms / 4 ? m : lease_ms / 4;
}

/* Claims up to `free_slots` events (long-polling wait_s) and queues them on slots.
 * *n_out gets the count queued.
 *
 * The lease runs from roostd's commit, somewhere between sending the request and its answer, so
 * what is left of it when the answer arrives is at least lease_s - (arrival - sent), measured on
 * our monotonic clock (a skewed wall clock cannot fool it, nor can claim_expires_at be compared
 * with our clock). An answer late enough that too little is left (roostd stalled after its commit,
 * a slow proxy) is given back unrun: the lease may already have expired and a sibling be running
 * the event. A long poll's wait counts against it too, which is why long polls wait at most half
 * a lease (main_loop). */
static int claim_into_slots(struct roost_agent *a, struct roost_client *c, int free_slots,
                            int wait_s, int *n_out)
{
    *n_out = 0;
    struct roost_events *evs = NULL;
    int64_t sent = time_mono_ms();
    int rc = roost_inbox_claim(c, a->agent_id, free_slots, a->lease_s, wait_s, a->consumer, &evs);
    int64_t left_ms = (int64_t)a->lease_s * 1000 - (time_mono_ms() - sent);
    agent_note_request(a, rc);
    if (rc != ROOST_OK || evs->count == 0) {
        roost_events_free(evs);
        return rc;
    }
    if (agent_state_leases_store(&a->st, evs) != 0) {
        /* Without a record we could not clean up after a crash: give them back at once. */
        agent_log(a, "cannot write the state file: releasing %zu claimed event(s)", evs->count);
        for (size_t i = 0; i < evs->count; i++) {
            roost_event_release(c, a->agent_id, evs->items[i]->event_id, evs->items[i]->lease_token,
                                0, ROOST_RELEASE_SHUTDOWN, NULL);
        }
        roost_events_free(evs);
        return ROOST_EIO;
    }
    bool stale = left_ms < lease_min_left_ms(a);
    if (stale) {
        agent_log(a,
                  "claim answer came %" PRId64 " ms after the request, %" PRId64
                  " ms of the %d s lease left at most: releasing %zu event(s) unrun",
                  (int64_t)a->lease_s * 1000 - left_ms, left_ms, a->lease_s, evs->count);
    }
    pthread_mutex_lock(&a->mu);
    int64_t now = time_mono_ms();
    size_t k = 0;
    for (int i = 0; !stale && i < a->concurrency && k < evs->count; i++) {
        struct slot *s = &a->slots[i];
        if (s->state != SLOT_FREE) {
            continue;
        }
        s->ev = evs->items[k];
        evs->items[k] = NULL;
        k++;
        s->state = SLOT_QUEUED;
        s->next_extend_ms = now + left_ms / 2;
        a->n_busy++;
        a->outstanding++;
    }
    /* The rest goes back: all of a late answer, and the surplus of a server that answers with
     * more than was asked (only the run thread fills slots and it asked for no more than were
     * free). */
    for (; k < evs->count; k++) {
        struct roost_event *ev = evs->items[k];
        agent_leases_push(a, AGENT_ACT_RELEASE, ev->event_id, ev->lease_token, 0,
                          ROOST_RELEASE_SHUTDOWN, NULL, 0);
        ev->event_id = NULL;
        ev->lease_token = NULL;
        a->outstanding++;
    }
    *n_out = stale ? 0 : (int)evs->count;
    if (evs->has_more) {
        a->need_sync = true; /* a byte budget may have cut the batch short: claim again */
    }
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->mu);
    roost_events_free(evs);
    return ROOST_OK;
}

static void main_loop(struct roost_agent *a, struct roost_client *c)
{
    int64_t poll_delay = 1000;
    int64_t next_poll_at = 0;
    int64_t retry_at = 0; /* after a failure nothing is sent before this (monotonic) */
    int64_t last_sync_at = time_mono_ms();
    unsigned seen_gen = 0;
    pthread_mutex_lock(&a->mu);
    a->need_sync = true;
    while (!agent_stopping(a) && a->fatal_rc == ROOST_OK) {
        int64_t now = time_mono_ms();
        int free_slots = a->concurrency - a->n_busy;
        bool sse = a->sse_up;
        if (a->wake_gen != seen_gen) {
            /* The stream (re)connected or pinged: the server is back, whatever our backoff
             * says. */
            seen_gen = a->wake_gen;
            retry_at = 0;
            poll_delay = 1000;
        }
        /* Safety re-sync while streaming, in case a ping was lost on the way. */
        if (sse && now - last_sync_at >= a->stream_resync_ms) {
            a->need_sync = true;
        }
        bool sync = a->need_sync;
        bool act = free_slots > 0 && now >= retry_at && (sync || (!sse && now >= next_poll_at));
        if (!act) {
            int64_t wait;
            if (free_slots <= 0) {
                wait = 1000; /* a finishing worker wakes us earlier */
            } else if (now < retry_at) {
                wait = retry_at - now;
            } else if (sse) {
                wait = a->stream_resync_ms - (now - last_sync_at);
            } else {
                wait = next_poll_at - now;
            }
            agent_cond_wait_ms(a, wait > 0 ? wait : 1);
            continue;
        }
        a->need_sync = false;
        pthread_mutex_unlock(&a->mu);

        int rc = ROOST_OK;
        if (sync) {
            rc = cursor_sync(a, c);
            last_sync_at = time_mono_ms();
        }
        int got = 0;
        /* A sync claims at once; otherwise (stream down) the claim is the long poll, for at most
         * half a lease (its wait counts against the lease, see claim_into_slots). */
        int wait_s = sync ? 0 : a->long_poll_s < a->lease_s / 2 ? a->long_poll_s : a->lease_s / 2;
        int64_t t0 = time_mono_ms();
        if (rc == ROOST_OK || rc == ROOST_EGONE || !agent_transient_rc(rc)) {
            rc = claim_into_slots(a, c, free_slots, wait_s, &got);
        }
        int64_t took = time_mono_ms() - t0;

        pthread_mutex_lock(&a->mu);
        now = time_mono_ms();
        if (agent_auth_rc(rc)) {
            a->fatal_rc = rc;
            pthread_mutex_unlock(&a->mu);
            agent_log(a, "the server refuses the token: %s", roost_client_errmsg(c));
            pthread_mutex_lock(&a->mu);
            break;
        }
        if (rc == ROOST_OK) {
            retry_at = 0;
        }
        if (rc == ROOST_EWAIT && wait_s > 0) {
            /* This roostd allows shorter long polls (claim.max_wait_s): ask for less. */
            a->long_poll_s = wait_s / 2;
            next_poll_at = now;
            continue;
        }
        if (rc == ROOST_OK && got > 0) {
            poll_delay = 1000;
            next_poll_at = now;
            if (got >= free_slots) {
                a->need_sync = true; /* there may be more: claim again once a slot frees */
            }
        } else if (rc == ROOST_OK) {
            /* Nothing there. After a sync, or a long poll that really waited, the next poll may
             * start at once; a quick empty long poll (a server that does not long-poll) backs
             * off. */
            if (sync || (wait_s > 0 && took >= (int64_t)wait_s * 500)) {
                next_poll_at = now; /* (while streaming, the next pull waits for a ping) */
            } else {
                next_poll_at = now + agent_jitter(a, poll_delay);
                poll_delay = agent_backoff_next(poll_delay, (int64_t)a->poll_ceiling_s * 1000);
            }
        } else {
            /* Unreachable or failing: adaptive backoff, reset by any success. */
            next_poll_at = retry_at = now + agent_jitter(a, poll_delay);
            int64_t ra = roost_client_retry_after_s(c);
            if ((rc == ROOST_ERATELIMIT || rc == ROOST_EUNAVAILABLE || rc == ROOST_ESHUTDOWN) &&
                ra > 0 && ra <= 3600 && now + ra * 1000 > retry_at) {
                next_poll_at = retry_at = now + ra * 1000; /* the server said when */
            }
            poll_delay = agent_backoff_next(poll_delay, (int64_t)a->poll_ceiling_s * 1000);
            if (sync) {
                a->need_sync = true; /* retry the sync when the poll timer fires */
            }
            if (rc == ROOST_EIO) {
                a->fatal_rc = ROOST_EIO;
            }
            /* One line per try: the backoff doubles, so an outage logs a handful of lines. */
            char why[256];
            snprintf(why, sizeof why, "%s (%s)", roost_client_errmsg(c), roost_err_code(rc));
            int64_t in_ms = retry_at - now;
            pthread_mutex_unlock(&a->mu);
            agent_log(a, "pull failed: %s; next try in %" PRId64 " ms, or at the next ping", why,
                      in_ms);
            pthread_mutex_lock(&a->mu);
        }
    }
    pthread_mutex_unlock(&a->mu);
}

int roost_agent_run(struct roost_agent *a)
{
    if (a == NULL) {
        return ROOST_EINVAL;
    }
    pthread_mutex_lock(&a->mu);
    if (a->run_called) {
        pthread_mutex_unlock(&a->mu);
        return ROOST_EINVAL;
    }
    a->run_called = true;
    pthread_mutex_unlock(&a->mu);

    struct roost_client *c = NULL;
    int rc = agent_client_new(a, &c);
    if (rc != ROOST_OK) {
        return rc;
    }
    roost_client_set_timeouts(c, 10000, 30000);
    c->abort_flag = &a->stop;

    pthread_t watcher, keeper, sse, *workers = calloc((size_t)a->concurrency, sizeof *workers);
    int n_workers = 0;
    bool have_watcher = false, have_keeper = false, have_sse = false;
    if (workers == NULL) {
        roost_client_free(c);
        return ROOST_ENOMEM;
    }
    have_watcher = pthread_create(&watcher, NULL, watcher_main, a) == 0;
    if (!have_watcher) {
        rc = ROOST_EINTERNAL;
        goto out;
    }
    rc = agent_leases_recover(a, c);
    if (rc != ROOST_OK || agent_stopping(a)) {
        goto out;
    }
    have_keeper = pthread_create(&keeper, NULL, agent_leases_keeper_main, a) == 0;
    for (; have_keeper && n_workers < a->concurrency; n_workers++) {
        if (pthread_create(&workers[n_workers], NULL, worker_main, a) != 0) {
            break;
        }
    }
    have_sse =
        have_keeper && n_workers == a->concurrency && pthread_create(&sse, NULL, sse_main, a) == 0;
    if (!have_sse) {
        rc = ROOST_EINTERNAL;
        goto out;
    }
    main_loop(a, c);
    pthread_mutex_lock(&a->mu);
    rc = a->fatal_rc;
    pthread_mutex_unlock(&a->mu);
out:
    /* Shutdown: give back what never started, let running handlers finish, flush the keeper. */
    roost_agent_stop(a);
    pthread_mutex_lock(&a->mu);
    for (int i = 0; i < a->concurrency; i++) {
        if (a->slots[i].state == SLOT_QUEUED) {
            slot_release_unstarted(a, &a->slots[i]);
        }
    }
    a->workers_exit = true;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->mu);
    for (int i = 0; i < n_workers; i++) {
        pthread_join(workers[i], NULL);
    }
    pthread_mutex_lock(&a->mu);
    a->keeper_exit = true;
    pthread_cond_broadcast(&a->cond);
    pthread_mutex_unlock(&a->mu);
    if (have_keeper) {
        pthread_join(keeper, NULL);
    }
    if (have_sse) {
        pthread_join(sse, NULL);
    }
    if (have_watcher) {
        pthread_join(watcher, NULL);
    }
    /* Last: whatever this consumer still holds (an ack the keeper gave up on, say). */
    c->abort_flag = NULL;
    roost_client_set_timeouts(c, 5000, 10000);
    int64_t released = 0;
    if (!agent_auth_rc(rc) &&
        roost_inbox_release_all(c, a->agent_id, a->consumer, &released) == ROOST_OK) {
        if (released > 0) {
            agent_log(a, "shutdown: released %" PRId64 " lease(s)", released);
        }
        agent_state_leases_clear(&a->st);
    }
    pthread_mutex_lock(&a->mu);
    a->conn = ROOST_AGENT_CONN_STOPPED;
    a->outstanding = 0;
    agent_persist_meta(a);
    pthread_mutex_unlock(&a->mu);
    agent_conn_notify(a);
    free(workers);
    roost_client_free(c);
    return rc;
}
