/* SPDX-License-Identifier: MIT */
/* The tools of `roost mcp` on libroost (the catalogue and argument check are src/common/mcp.c),
 * the lease keeper that extends every lease the session handed out at half-life until it is
 * acked or released, and the --state-dir record of processed event ids. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli/mcp_session.h"
#include "common/mcp.h"

#include "common/banned.h"

/* Processed ids kept (the oldest half is dropped when the file passes this). */
#define PROCESSED_MAX 100000

int64_t mcp_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* ---- results ----------------------------------------------------------------------------------
 */

/* The tool error of the client's last failed call: the API's code, its message and the details
 * of its error object (oldest_cursor, required_scope, param, ...). */
static json_t *api_error(struct mcp_session *s, int rc)
{
    const char *code = roost_client_errcode(s->c);
    if (code[0] == '\0') {
        code = roost_err_code(rc);
    }
    json_t *detail = NULL;
    size_t len = 0;
    const char *body = roost_client_last_body(s->c, &len);
    if (roost_client_http_status(s->c) >= 400 && len > 0) {
        json_t *doc = json_loadb(body, len, 0, NULL);
        json_t *err = json_object_get(doc, "error");
        if (json_is_object(err)) {
            detail = json_incref(err);
        }
        json_decref(doc);
    }
    const char *msg = roost_client_errmsg(s->c);
    return mcp_tool_error(code, msg[0] != '\0' ? msg : roost_strerror(rc), detail);
}

/* The events of a list as their JSON objects. */
static json_t *events_json(const struct roost_events *evs, bool (*skip)(void *, size_t), void *ctx)
{
    json_t *arr = json_array();
    for (size_t i = 0; arr != NULL && evs != NULL && i < evs->count; i++) {
        if (skip != NULL && skip(ctx, i)) {
            continue;
        }
        json_t *ev = evs->items[i]->json != NULL ? json_loads(evs->items[i]->json, 0, NULL) : NULL;
        if (ev == NULL || json_array_append_new(arr, ev) != 0) {
            json_decref(arr);
            return NULL;
        }
    }
    return arr;
}

static int64_t arg_int(const json_t *args, const char *name, int64_t dflt)
{
    const json_t *v = json_object_get(args, name);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static const char *arg_str(const json_t *args, const char *name)
{
    return json_string_value(json_object_get(args, name));
}

/* ---- claim ------------------------------------------------------------------------------------
 */

static void drain(int fd)
{
    char buf[64];
    while (read(fd, buf, sizeof buf) > 0) {
    }
}

/* Waits until the stream pings, the session stops or timeout_ms passes. True when it may be
 * worth claiming again (a ping or the time is up), false when the session is stopping. */
static bool wait_ping(struct mcp_session *s, int64_t timeout_ms)
{
    struct pollfd p[2] = {{.fd = s->wake_pipe[0], .events = POLLIN},
                          {.fd = s->term_pipe[0], .events = POLLIN}};
    int n = poll(p, 2, (int)(timeout_ms > 0 ? timeout_ms : 0));
    return !(n > 0 && (p[1].revents & POLLIN));
}

struct claim_filter {
    struct mcp_session *s;
    const struct roost_events *evs;
    bool *done; /* done[i]: already processed, acked again instead of handed out */
};

static bool claim_skip(void *ctx, size_t i)
{
    struct claim_filter *f = ctx;
    return f->done[i];
}

static json_t *tool_claim(struct mcp_session *s, const json_t *args)
{
    int limit = (int)arg_int(args, "limit", 1);
    int lease_s = (int)arg_int(args, "lease_s", 60);
    int64_t wait_s = arg_int(args, "wait_s", 0);
    int64_t deadline = mcp_now_ms() + wait_s * 1000;
    for (;;) {
        drain(s->wake_pipe[0]);
        /* Without the wake-up stream, the server's long poll does the waiting. */
        int64_t left_ms = deadline - mcp_now_ms();
        int poll_s = 0;
        if (!atomic_load(&s->sse_up) && left_ms >= 1000) {
            poll_s = (int)(left_ms / 1000 > 25 ? 25 : left_ms / 1000);
        }
        struct roost_events *evs = NULL;
        int rc = roost_inbox_claim(s->c, s->agent, limit, lease_s, poll_s, s->consumer, &evs);
        if (rc != ROOST_OK) {
            return api_error(s, rc);
        }
        bool *done = calloc(evs->count + 1, sizeof *done);
        if (done == NULL) {
            roost_events_free(evs);
            return mcp_tool_error("out_of_memory", "out of memory", NULL);
        }
        size_t handed = 0;
        for (size_t i = 0; i < evs->count; i++) {
            const struct roost_event *ev = evs->items[i];
            if (s->state_dir != NULL && mcp_processed_contains(s, ev->event_id)) {
                /* Acked before (the ack's answer was lost): complete it, never hand it out. */
                int arc = roost_event_ack(s->c, s->agent, ev->event_id, ev->lease_token);
                mcp_log(s, MCP_LOG_NOTICE, "event %s was processed already: acked again (%s)",
                        ev->event_id, roost_err_code(arc));
                done[i] = true;
                continue;
            }
            mcp_leases_add(s, ev->event_id, ev->lease_token, lease_s);
            handed++;
        }
        struct claim_filter f = {s, evs, done};
        json_t *arr = events_json(evs, claim_skip, &f);
        bool has_more = evs->has_more;
        free(done);
        roost_events_free(evs);
        if (arr == NULL) {
            return mcp_tool_error("out_of_memory", "out of memory", NULL);
        }
        left_ms = deadline - mcp_now_ms();
        if (handed > 0 || has_more || left_ms <= 0) {
            return mcp_tool_ok(json_pack("{s:o, s:b}", "events", arr, "has_more", has_more));
        }
        json_decref(arr);
        /* The stream wakes us (or, while it is down and less than a second is left, the
         * listener's reconnect or the deadline): never a busy loop of claims. */
        if (poll_s == 0 && !wait_ping(s, left_ms)) {
            return mcp_tool_ok(json_pack("{s:[], s:b}", "events", "has_more", 0));
        }
    }
}

/* ---- ack, release, extend ---------------------------------------------------------------------
 */

/* A lease the server no longer knows as ours: stop keeping it. */
static bool lease_gone(int rc)
{
    return rc == ROOST_OK || rc == ROOST_ELEASEMISMATCH || rc == ROOST_EEVENTNOTFOUND ||
           rc == ROOST_ESTATE;
}

static json_t *tool_ack(struct mcp_session *s, const json_t *args)
{
    const char *id = arg_str(args, "event_id"), *token = arg_str(args, "lease_token");
    if (s->state_dir != NULL && mcp_processed_add(s, id) != 0) {
        return mcp_tool_error("io_error", "could not record the event in the state dir", NULL);
    }
    int rc = roost_event_ack(s->c, s->agent, id, token);
    if (lease_gone(rc)) {
        mcp_leases_remove(s, id);
    }
    if (rc != ROOST_OK) {
        return api_error(s, rc);
    }
    return mcp_tool_ok(json_pack("{s:s, s:s}", "event_id", id, "status", "completed"));
}

static json_t *tool_release(struct mcp_session *s, const json_t *args)
{
    const char *id = arg_str(args, "event_id"), *token = arg_str(args, "lease_token");
    enum roost_release_reason reason = ROOST_RELEASE_DEFAULT;
    const char *rname = arg_str(args, "reason");
    if (rname != NULL && roost_release_reason_parse(rname, &reason) != ROOST_OK) {
        return mcp_tool_error("invalid_reason", "reason must be transient, shutdown or poison",
                              NULL);
    }
    int rc = roost_event_release(s->c, s->agent, id, token, arg_int(args, "delay_s", 0), reason,
                                 arg_str(args, "error"));
    if (lease_gone(rc)) {
        mcp_leases_remove(s, id);
    }
    if (rc != ROOST_OK) {
        return api_error(s, rc);
    }
    size_t len = 0;
    const char *body = roost_client_last_body(s->c, &len);
    json_t *doc = json_loadb(body, len, 0, NULL);
    const char *status = json_string_value(json_object_get(doc, "status"));
    json_t *out =
        json_pack("{s:s, s:s}", "event_id", id, "status", status != NULL ? status : "released");
    json_decref(doc);
    return mcp_tool_ok(out);
}

static json_t *tool_extend(struct mcp_session *s, const json_t *args)
{
    const char *id = arg_str(args, "event_id"), *token = arg_str(args, "lease_token");
    int lease_s = (int)arg_int(args, "lease_s", 60);
    char *until = NULL;
    int rc = roost_event_extend(s->c, s->agent, id, token, lease_s, &until);
    if (rc == ROOST_ELEASEMISMATCH || rc == ROOST_EEVENTNOTFOUND || rc == ROOST_ESTATE) {
        mcp_leases_remove(s, id);
    }
    if (rc != ROOST_OK) {
        return api_error(s, rc);
    }
    /* The keeper now keeps it at this length. */
    mcp_leases_add(s, id, token, lease_s);
    json_t *out = json_pack("{s:s, s:s}", "event_id", id, "claim_expires_at", until);
    roost_free(until);
    return mcp_tool_ok(out);
}

/* ---- read_inbox, publish, get_state -----------------------------------------------------------
 */

static json_t *tool_read_inbox(struct mcp_session *s, const json_t *args)
{
    struct roost_events *evs = NULL;
    int rc = roost_inbox_read(s->c, s->agent, arg_int(args, "after_cursor", 0),
                              (int)arg_int(args, "limit", 10), 0, &evs);
    if (rc != ROOST_OK) {
        return api_error(s, rc);
    }
    json_t *arr = events_json(evs, NULL, NULL);
    json_t *out = arr != NULL ? json_pack("{s:o, s:I, s:b}", "events", arr, "next_cursor",
                                          (json_int_t)evs->next_cursor, "has_more", evs->has_more)
                              : NULL;
    if (out != NULL && evs->head >= 0) {
        json_object_set_new(out, "head", json_integer(evs->head));
    }
    roost_events_free(evs);
    return out != NULL ? mcp_tool_ok(out) : mcp_tool_error("out_of_memory", "out of memory", NULL);
}

static json_t *tool_publish(struct mcp_session *s, const json_t *args)
{
    const json_t *rcpt = json_object_get(args, "recipients");
    size_t n = json_array_size(rcpt);
    const char **names = calloc(n + 1, sizeof *names);
    char *payload = NULL;
    if (names == NULL) {
        return mcp_tool_error("out_of_memory", "out of memory", NULL);
    }
    for (size_t i = 0; i < n; i++) {
        names[i] = json_string_value(json_array_get(rcpt, i));
    }
    struct roost_message m;
    roost_message_init(&m);
    m.recipients = names;
    m.n_recipients = n;
    const json_t *p = json_object_get(args, "payload");
    if (json_is_object(p)) {
        payload = json_dumps(p, JSON_COMPACT);
        m.payload = payload;
    }
    m.priority = (int)arg_int(args, "priority", 0);
    m.correlation_id = arg_str(args, "correlation_id");
    m.idempotency_key = arg_str(args, "idempotency_key");
    m.delay_s = arg_int(args, "delay_s", 0);
    m.ttl_s = arg_int(args, "ttl_s", 0);
    struct roost_events *evs = NULL;
    int rc = roost_publish(s->c, &m, &evs);
    free(payload);
    free(names);
    if (rc != ROOST_OK) {
        roost_events_free(evs);
        return api_error(s, rc);
    }
    roost_events_free(evs);
    /* The answer as the server gave it ({"events":[...]} with "duplicate" on repeats). */
    size_t len = 0;
    const char *body = roost_client_last_body(s->c, &len);
    json_t *doc = json_loadb(body, len, 0, NULL);
    if (!json_is_array(json_object_get(doc, "events"))) {
        json_decref(doc);
        return mcp_tool_error("protocol_error", "the server's answer has no events", NULL);
    }
    return mcp_tool_ok(doc);
}

static json_t *tool_get_state(struct mcp_session *s)
{
    char *state = NULL;
    int64_t cursor = 0;
    int rc = roost_state_get(s->c, s->agent, &state, &cursor);
    if (rc != ROOST_OK) {
        return api_error(s, rc);
    }
    json_t *doc = json_loads(state, 0, NULL);
    roost_free(state);
    if (!json_is_object(doc)) {
        json_decref(doc);
        return mcp_tool_error("protocol_error", "the state is not a JSON object", NULL);
    }
    return mcp_tool_ok(json_pack("{s:o, s:I}", "state", doc, "cursor", (json_int_t)cursor));
}

json_t *mcp_tool_call(struct mcp_session *s, const char *tool, const json_t *args)
{
    json_t *empty = NULL;
    if (args == NULL) {
        args = empty = json_object();
    }
    json_t *out;
    if (strcmp(tool, "claim") == 0) {
        out = tool_claim(s, args);
    } else if (strcmp(tool, "ack") == 0) {
        out = tool_ack(s, args);
    } else if (strcmp(tool, "release") == 0) {
        out = tool_release(s, args);
    } else if (strcmp(tool, "extend") == 0) {
        out = tool_extend(s, args);
    } else if (strcmp(tool, "read_inbox") == 0) {
        out = tool_read_inbox(s, args);
    } else if (strcmp(tool, "publish") == 0) {
        out = tool_publish(s, args);
    } else {
        out = tool_get_state(s);
    }
    json_decref(empty);
    return out;
}

/* ---- the inbox resource -----------------------------------------------------------------------
 */

json_t *mcp_inbox_resource(struct mcp_session *s, const char *uri)
{
    /* A one-event read tells the head (GET .../state's cursor follows the state only). */
    struct roost_events *evs = NULL;
    int rc = roost_inbox_read(s->c, s->agent, 0, 1, 0, &evs);
    int64_t head = rc == ROOST_OK ? evs->head : -1;
    roost_events_free(evs);
    pthread_mutex_lock(&s->mu);
    int64_t last_ping = s->last_ping_ms;
    size_t held = s->n_leases;
    pthread_mutex_unlock(&s->mu);
    json_t *doc = json_pack(
        "{s:s, s:s, s:b, s:I, s:i}", "agent_id", s->agent, "consumer", s->consumer, "streaming",
        atomic_load(&s->sse_up), "held_by_this_session", (json_int_t)held, "last_ping_age_ms",
        (int)(last_ping > 0
                  ? (mcp_now_ms() - last_ping > 2000000000 ? 2000000000 : mcp_now_ms() - last_ping)
                  : -1));
    if (doc == NULL) {
        return NULL;
    }
    if (rc == ROOST_OK) {
        json_object_set_new(doc, "head", json_integer(head));
    } else {
        json_object_set_new(doc, "head", json_integer(atomic_load(&s->head)));
        json_object_set_new(doc, "error", json_string(roost_client_errcode(s->c)));
    }
    char *text = json_dumps(doc, JSON_COMPACT);
    json_decref(doc);
    json_t *out = json_pack("{s:[{s:s, s:s, s:s*}]}", "contents", "uri", uri, "mimeType",
                            "application/json", "text", text);
    free(text);
    return out;
}

/* ---- leases -----------------------------------------------------------------------------------
 */

static struct mcp_lease *lease_find(struct mcp_session *s, const char *event_id)
{
    for (size_t i = 0; i < s->n_leases; i++) {
        if (strcmp(s->leases[i].event_id, event_id) == 0) {
            return &s->leases[i];
        }
    }
    return NULL;
}

/* When to extend a lease next: at half its length, and for short leases early enough to leave
 * 2 s for the extension's round trip on a busy server (at least every 250 ms). */
static int64_t half_life_ms(int lease_s)
{
    int64_t half = (int64_t)lease_s * 500, slack = (int64_t)lease_s * 1000 - 2000;
    int64_t next = half < slack ? half : slack;
    return next > 250 ? next : 250;
}

void mcp_leases_add(struct mcp_session *s, const char *event_id, const char *token, int lease_s)
{
    if (event_id == NULL || token == NULL || strlen(event_id) >= sizeof s->leases[0].event_id ||
        strlen(token) >= sizeof s->leases[0].token) {
        return;
    }
    int64_t now = mcp_now_ms();
    pthread_mutex_lock(&s->mu);
    struct mcp_lease *l = lease_find(s, event_id);
    if (l == NULL && s->n_leases == s->cap_leases) {
        size_t cap = s->cap_leases ? s->cap_leases * 2 : 16;
        struct mcp_lease *grown = realloc(s->leases, cap * sizeof *grown);
        if (grown != NULL) {
            s->leases = grown;
            s->cap_leases = cap;
        }
    }
    if (l == NULL && s->n_leases < s->cap_leases) {
        l = &s->leases[s->n_leases++];
    }
    if (l != NULL) {
        snprintf(l->event_id, sizeof l->event_id, "%s", event_id);
        snprintf(l->token, sizeof l->token, "%s", token);
        l->lease_s = lease_s;
        l->next_ms = now + half_life_ms(lease_s);
        l->expires_ms = now + (int64_t)lease_s * 1000;
        pthread_cond_broadcast(&s->cv);
    }
    pthread_mutex_unlock(&s->mu);
}

static void lease_remove_locked(struct mcp_session *s, struct mcp_lease *l)
{
    *l = s->leases[--s->n_leases];
}

void mcp_leases_remove(struct mcp_session *s, const char *event_id)
{
    pthread_mutex_lock(&s->mu);
    struct mcp_lease *l = lease_find(s, event_id);
    if (l != NULL) {
        lease_remove_locked(s, l);
    }
    pthread_mutex_unlock(&s->mu);
}

size_t mcp_leases_count(struct mcp_session *s)
{
    pthread_mutex_lock(&s->mu);
    size_t n = s->n_leases;
    pthread_mutex_unlock(&s->mu);
    return n;
}

static void cv_wait_until(struct mcp_session *s, int64_t until_ms)
{
    struct timespec ts = {.tv_sec = until_ms / 1000, .tv_nsec = (until_ms % 1000) * 1000000};
    pthread_cond_timedwait(&s->cv, &s->mu, &ts);
}

/* Extends one lease (mutex not held) and records the outcome. */
static void keep_one(struct mcp_session *s, struct mcp_lease copy)
{
    int rc = roost_event_extend(s->keep_c, s->agent, copy.event_id, copy.token, copy.lease_s, NULL);
    int64_t now = mcp_now_ms();
    pthread_mutex_lock(&s->mu);
    struct mcp_lease *l = lease_find(s, copy.event_id);
    bool same = l != NULL && strcmp(l->token, copy.token) == 0;
    if (same && rc == ROOST_OK) {
        l->next_ms = now + half_life_ms(l->lease_s);
        l->expires_ms = now + (int64_t)l->lease_s * 1000;
    } else if (same && (lease_gone(rc) || rc == ROOST_ELEASECAP)) {
        lease_remove_locked(s, l);
    } else if (same) {
        /* Not reachable now (roostd restarting, a network fault): try again soon, while the
         * lease may still be alive. */
        l->next_ms = now + (l->lease_s >= 4 ? 1000 : 250);
    }
    pthread_mutex_unlock(&s->mu);
    if (rc != ROOST_OK && same) {
        mcp_log(s, lease_gone(rc) || rc == ROOST_ELEASECAP ? MCP_LOG_WARNING : MCP_LOG_INFO,
                "keeping the lease of %s alive failed: %s (%s)", copy.event_id,
                roost_client_errmsg(s->keep_c), roost_client_errcode(s->keep_c));
    }
}

void *mcp_keeper_main(void *arg)
{
    struct mcp_session *s = arg;
    pthread_mutex_lock(&s->mu);
    while (!s->stopping) {
        struct mcp_lease *due = NULL;
        for (size_t i = 0; i < s->n_leases; i++) {
            if (due == NULL || s->leases[i].next_ms < due->next_ms) {
                due = &s->leases[i];
            }
        }
        int64_t now = mcp_now_ms();
        if (due == NULL) {
            cv_wait_until(s, now + 60000);
            continue;
        }
        if (due->next_ms > now) {
            cv_wait_until(s, due->next_ms);
            continue;
        }
        struct mcp_lease copy = *due;
        pthread_mutex_unlock(&s->mu);
        keep_one(s, copy);
        pthread_mutex_lock(&s->mu);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* ---- --state-dir ------------------------------------------------------------------------------
 */

static int processed_push(struct mcp_session *s, const char *id)
{
    if (s->n_processed == s->cap_processed) {
        size_t cap = s->cap_processed ? s->cap_processed * 2 : 256;
        char **grown = realloc(s->processed, cap * sizeof *grown);
        if (grown == NULL) {
            return -1;
        }
        s->processed = grown;
        s->cap_processed = cap;
    }
    char *copy = strdup(id);
    if (copy == NULL) {
        return -1;
    }
    s->processed[s->n_processed++] = copy;
    return 0;
}

/* Rewrites the processed file with the newer half of the ids (atomic rename). */
static int processed_compact(struct mcp_session *s)
{
    size_t keep_from = s->n_processed / 2;
    char tmp[4096], path[4096];
    snprintf(tmp, sizeof tmp, "%s/processed.tmp", s->state_dir);
    snprintf(path, sizeof path, "%s/processed", s->state_dir);
    FILE *f = fopen(tmp, "w");
    if (f == NULL) {
        return -1;
    }
    for (size_t i = keep_from; i < s->n_processed; i++) {
        fprintf(f, "%s\n", s->processed[i]);
    }
    if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        return -1;
    }
    for (size_t i = 0; i < keep_from; i++) {
        free(s->processed[i]);
    }
    memmove(s->processed, s->processed + keep_from,
            (s->n_processed - keep_from) * sizeof *s->processed);
    s->n_processed -= keep_from;
    close(s->processed_fd);
    s->processed_fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    return s->processed_fd >= 0 ? 0 : -1;
}

bool mcp_processed_contains(struct mcp_session *s, const char *event_id)
{
    for (size_t i = s->n_processed; i-- > 0;) {
        if (strcmp(s->processed[i], event_id) == 0) {
            return true;
        }
    }
    return false;
}

int mcp_processed_add(struct mcp_session *s, const char *event_id)
{
    if (mcp_processed_contains(s, event_id)) {
        return 0;
    }
    char line[80];
    int n = snprintf(line, sizeof line, "%s\n", event_id);
    if (n <= 0 || (size_t)n >= sizeof line || write(s->processed_fd, line, (size_t)n) != n ||
        fdatasync(s->processed_fd) != 0 || processed_push(s, event_id) != 0) {
        return -1;
    }
    if (s->n_processed > PROCESSED_MAX && processed_compact(s) != 0) {
        return -1;
    }
    return 0;
}

/* Reads DIR/consumer, or makes one ("mcp-" + 16 random hex digits) and writes it. */
static int consumer_settle(struct mcp_session *s)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/consumer", s->state_dir);
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        char buf[160] = "";
        bool ok = fgets(buf, sizeof buf, f) != NULL;
        fclose(f);
        buf[strcspn(buf, "\r\n")] = '\0';
        size_t len = strlen(buf);
        if (ok && len > 0 && len < sizeof s->consumer) {
            memcpy(s->consumer, buf, len + 1);
            return 0;
        }
    }
    unsigned char rnd[8];
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    if (fd < 0 || read(fd, rnd, sizeof rnd) != (ssize_t)sizeof rnd) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    close(fd);
    snprintf(s->consumer, sizeof s->consumer, "mcp-%02x%02x%02x%02x%02x%02x%02x%02x", rnd[0],
             rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s/consumer.tmp", s->state_dir);
    f = fopen(tmp, "w");
    if (f == NULL) {
        return -1;
    }
    fprintf(f, "%s\n", s->consumer);
    if (fflush(f) != 0 || fsync(fileno(f)) != 0 || fclose(f) != 0 || rename(tmp, path) != 0) {
        return -1;
    }
    return 0;
}

int mcp_state_open(struct mcp_session *s)
{
    char path[4096];
    if (mkdir(s->state_dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "roost mcp: cannot create the state dir %s: %s\n", s->state_dir,
                strerror(errno));
        return -1;
    }
    snprintf(path, sizeof path, "%s/mcp.lock", s->state_dir);
    s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (s->lock_fd < 0 || flock(s->lock_fd, LOCK_EX | LOCK_NB) != 0) {
        fprintf(stderr,
                "roost mcp: the state dir %s is in use by another roost mcp session (or cannot be "
                "opened): give each session its own --state-dir (invalid_state)\n",
                s->state_dir);
        return -1;
    }
    if (consumer_settle(s) != 0) {
        fprintf(stderr, "roost mcp: cannot write %s/consumer\n", s->state_dir);
        return -1;
    }
    snprintf(path, sizeof path, "%s/processed", s->state_dir);
    FILE *f = fopen(path, "r");
    if (f != NULL) {
        char line[160];
        while (fgets(line, sizeof line, f) != NULL) {
            line[strcspn(line, "\r\n")] = '\0';
            if (line[0] != '\0' && processed_push(s, line) != 0) {
                fclose(f);
                return -1;
            }
        }
        fclose(f);
    }
    s->processed_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (s->processed_fd < 0) {
        fprintf(stderr, "roost mcp: cannot open %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

void mcp_state_close(struct mcp_session *s)
{
    for (size_t i = 0; i < s->n_processed; i++) {
        free(s->processed[i]);
    }
    free(s->processed);
    s->processed = NULL;
    s->n_processed = s->cap_processed = 0;
    if (s->processed_fd >= 0) {
        close(s->processed_fd);
    }
    if (s->lock_fd >= 0) {
        close(s->lock_fd);
    }
    s->processed_fd = s->lock_fd = -1;
}
