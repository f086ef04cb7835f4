/* SPDX-License-Identifier: MIT */
/* `roost mcp --agent A`: a Model Context Protocol server on stdio (newline-delimited JSON-RPC 2.0
 * on stdin/stdout, logs on stderr) that lets an MCP client work the agent's Roost inbox through
 * tools (src/common/mcp.c has the catalogue, mcp_tools.c the calls), with the inbox as a
 * subscribable resource woken by roostd's SSE pings. Three threads: this one reads stdin and
 * answers in order, the keeper extends leases, the listener follows the wake-up stream. The
 * session ends at end of input or on SIGTERM/SIGINT/SIGHUP: it releases every lease it holds. */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/mcp_session.h"
#include "common/mcp.h"

#include "common/banned.h"

static struct mcp_session g_s;

static void on_signal(int sig)
{
    (void)sig;
    char b = 1;
    ssize_t n = write(g_s.term_pipe[1], &b, 1); /* async-signal-safe */
    (void)n;
}

/* ---- output -----------------------------------------------------------------------------------
 */

static bool write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return false;
        }
        p += w;
        n -= (size_t)w;
    }
    return true;
}

void mcp_send(struct mcp_session *s, json_t *msg)
{
    if (msg == NULL) {
        return;
    }
    /* Compact jansson output escapes every control character: one message is one line. */
    char *text = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (text == NULL) {
        return;
    }
    pthread_mutex_lock(&s->out_mu);
    if (!s->out_broken) {
        size_t n = strlen(text);
        if (!write_all(STDOUT_FILENO, text, n) || !write_all(STDOUT_FILENO, "\n", 1)) {
            s->out_broken = true;
            on_signal(SIGPIPE); /* the client is gone: end the session */
        }
    }
    pthread_mutex_unlock(&s->out_mu);
    free(text);
}

static const char *const level_names[] = {"debug", "info",     "notice", "warning",
                                          "error", "critical", "alert",  "emergency"};

void mcp_log(struct mcp_session *s, int level, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(stderr, "roost mcp: %s\n", line);
    pthread_mutex_lock(&s->mu);
    bool send = s->initialized && level >= s->log_level;
    pthread_mutex_unlock(&s->mu);
    if (send) {
        mcp_send(s, mcp_notification("notifications/message",
                                     json_pack("{s:s, s:s, s:s}", "level", level_names[level],
                                               "logger", "roost", "data", line)));
    }
}

/* ---- the wake-up listener ---------------------------------------------------------------------
 */

static char inbox_uri[192];

/* The experimental notifications/claude/channel: new work may be waiting at `head`. */
static void send_channel(struct mcp_session *s, int64_t head)
{
    char text[256];
    snprintf(text, sizeof text,
             "New work may be waiting in the Roost inbox of agent %s (head %lld): call the "
             "claim tool.",
             s->agent, (long long)head);
    char head_s[32];
    snprintf(head_s, sizeof head_s, "%lld", (long long)head);
    mcp_send(s, mcp_notification("notifications/claude/channel",
                                 json_pack("{s:s, s:{s:s, s:s, s:s}}", "content", text, "meta",
                                           "source", "roost", "agent", s->agent, "head", head_s)));
}

static int on_ping(const char *event, int64_t hint, void *ctx)
{
    struct mcp_session *s = ctx;
    atomic_store(&s->sse_up, true);
    int64_t before = atomic_exchange(&s->head, hint);
    bool news = strcmp(event, "inbox_updated") == 0 || hint != before;
    pthread_mutex_lock(&s->mu);
    bool stop = s->stopping, subscribed = s->subscribed, ready = s->initialized;
    s->last_ping_ms = mcp_now_ms();
    if (news && s->channel && !ready) {
        s->channel_owed = true; /* the client may not take notifications yet */
    }
    pthread_mutex_unlock(&s->mu);
    if (stop) {
        return 1;
    }
    if (!news) {
        return 0;
    }
    char b = 1;
    ssize_t n = write(s->wake_pipe[1], &b, 1); /* full pipe: a wake-up is pending anyway */
    (void)n;
    /* roostd coalesces pings per subscriber (one pending at most), so each one that arrives
     * becomes one notification. */
    if (subscribed) {
        mcp_send(s, mcp_notification("notifications/resources/updated",
                                     json_pack("{s:s}", "uri", inbox_uri)));
    }
    if (s->channel && ready) {
        send_channel(s, hint);
    }
    return 0;
}

static void *listener_main(void *arg)
{
    struct mcp_session *s = arg;
    int64_t backoff_ms = 250;
    for (;;) {
        int64_t started = mcp_now_ms();
        int rc = roost_subscribe(s->sub_c, s->agent, on_ping, s);
        atomic_store(&s->sse_up, false);
        pthread_mutex_lock(&s->mu);
        if (s->stopping) {
            pthread_mutex_unlock(&s->mu);
            break;
        }
        /* Wake a claim that waits on the stream: it falls back to the server's long poll. */
        char b = 1;
        ssize_t n = write(s->wake_pipe[1], &b, 1);
        (void)n;
        if (mcp_now_ms() - started > 10000) {
            backoff_ms = 250;
        }
        pthread_mutex_unlock(&s->mu);
        mcp_log(s, MCP_LOG_INFO, "wake-up stream ended: %s (%s); reconnecting in %lld ms",
                roost_client_errmsg(s->sub_c), roost_err_code(rc), (long long)backoff_ms);
        pthread_mutex_lock(&s->mu);
        int64_t until = mcp_now_ms() + backoff_ms;
        while (!s->stopping && mcp_now_ms() < until) {
            struct timespec ts = {.tv_sec = until / 1000, .tv_nsec = (until % 1000) * 1000000};
            pthread_cond_timedwait(&s->cv, &s->mu, &ts);
        }
        bool stop = s->stopping;
        pthread_mutex_unlock(&s->mu);
        if (stop) {
            break;
        }
        backoff_ms = backoff_ms * 2 > 5000 ? 5000 : backoff_ms * 2;
    }
    return NULL;
}

/* ---- requests ---------------------------------------------------------------------------------
 */

static json_t *do_initialize(struct mcp_session *s, const json_t *params)
{
    const char *asked = json_string_value(json_object_get(params, "protocolVersion"));
    json_t *caps = json_pack("{s:{s:b}, s:{s:b, s:b}, s:{}}", "tools", "listChanged", 0,
                             "resources", "subscribe", 1, "listChanged", 0, "logging");
    if (caps != NULL && s->channel) {
        json_object_set_new(caps, "experimental", json_pack("{s:{}}", "claude/channel"));
    }
    char instructions[512];
    snprintf(instructions, sizeof instructions,
             "This server is the durable Roost inbox of agent %s. Call claim to take work (each "
             "event under a lease this server keeps alive), do what its payload asks, then ack it "
             "(or release it if you cannot). publish hands work to other agents. Subscribe to %s "
             "to be told when work arrives.",
             s->agent, inbox_uri);
    return json_pack("{s:s, s:o, s:{s:s, s:s, s:s}, s:s}", "protocolVersion",
                     mcp_negotiate_version(asked), "capabilities", caps, "serverInfo", "name",
                     "roost", "title", "Roost inbox", "version", ROOST_VERSION, "instructions",
                     instructions);
}

static json_t *resource_list(struct mcp_session *s)
{
    char desc[256];
    snprintf(desc, sizeof desc,
             "The Roost inbox of agent %s: its head (newest sequence number), whether the "
             "wake-up stream is up, and how many leases this session holds. Subscribe to be "
             "notified when work arrives.",
             s->agent);
    return json_pack("{s:[{s:s, s:s, s:s, s:s, s:s}]}", "resources", "uri", inbox_uri, "name",
                     "inbox", "title", "Roost inbox", "description", desc, "mimeType",
                     "application/json");
}

/* Answers one request (the reply is sent here). */
static void handle_request(struct mcp_session *s, struct mcp_msg *m)
{
    const char *method = m->method;
    const json_t *params = m->params;
    json_t *reply = NULL;
    if (strcmp(method, "initialize") == 0) {
        reply = mcp_result(m->id, do_initialize(s, params));
    } else if (strcmp(method, "ping") == 0) {
        reply = mcp_result(m->id, json_object());
    } else if (strcmp(method, "tools/list") == 0) {
        reply = mcp_result(m->id, mcp_tools_list(false));
    } else if (strcmp(method, "tools/call") == 0) {
        const char *name = json_string_value(json_object_get(params, "name"));
        const json_t *args = json_object_get(params, "arguments");
        const char *code = NULL;
        char why[256];
        if (name == NULL || !mcp_tool_known(name)) {
            reply = mcp_error(m->id, MCP_INVALID_PARAMS, "unknown tool: see tools/list");
        } else if (!mcp_check_args(name, args, false, &code, why, sizeof why)) {
            reply = mcp_result(m->id, mcp_tool_error(code, why, NULL));
        } else {
            json_t *res = mcp_tool_call(s, name, args);
            reply = res != NULL ? mcp_result(m->id, res)
                                : mcp_error(m->id, MCP_INTERNAL_ERROR, "out of memory");
        }
    } else if (strcmp(method, "resources/list") == 0) {
        reply = mcp_result(m->id, resource_list(s));
    } else if (strcmp(method, "resources/templates/list") == 0) {
        reply = mcp_result(m->id, json_pack("{s:[]}", "resourceTemplates"));
    } else if (strcmp(method, "resources/read") == 0 ||
               strcmp(method, "resources/subscribe") == 0 ||
               strcmp(method, "resources/unsubscribe") == 0) {
        const char *uri = json_string_value(json_object_get(params, "uri"));
        if (uri == NULL) {
            reply = mcp_error(m->id, MCP_INVALID_PARAMS, "uri must be a string");
        } else if (strcmp(uri, inbox_uri) != 0) {
            /* -32002: the MCP code for a resource that does not exist. */
            reply = mcp_error(m->id, -32002, "resource not found");
        } else if (strcmp(method, "resources/read") == 0) {
            json_t *res = mcp_inbox_resource(s, uri);
            reply = res != NULL ? mcp_result(m->id, res)
                                : mcp_error(m->id, MCP_INTERNAL_ERROR, "out of memory");
        } else {
            pthread_mutex_lock(&s->mu);
            s->subscribed = strcmp(method, "resources/subscribe") == 0;
            pthread_mutex_unlock(&s->mu);
            reply = mcp_result(m->id, json_object());
        }
    } else if (strcmp(method, "logging/setLevel") == 0) {
        const char *level = json_string_value(json_object_get(params, "level"));
        int found = -1;
        for (int i = 0; level != NULL && i <= MCP_LOG_EMERGENCY; i++) {
            if (strcmp(level, level_names[i]) == 0) {
                found = i;
            }
        }
        if (found < 0) {
            reply = mcp_error(m->id, MCP_INVALID_PARAMS,
                              "level must be debug, info, notice, warning, error, critical, alert "
                              "or emergency");
        } else {
            pthread_mutex_lock(&s->mu);
            s->log_level = found;
            pthread_mutex_unlock(&s->mu);
            reply = mcp_result(m->id, json_object());
        }
    } else {
        reply = mcp_error(m->id, MCP_METHOD_NOT_FOUND, "method not found");
    }
    mcp_send(s, reply != NULL ? reply : mcp_error(m->id, MCP_INTERNAL_ERROR, "out of memory"));
}

static void handle_line(struct mcp_session *s, const char *line, size_t len)
{
    while (len > 0 && (line[len - 1] == '\r' || line[len - 1] == ' ' || line[len - 1] == '\t')) {
        len--;
    }
    if (len == 0) {
        return;
    }
    struct mcp_msg m;
    mcp_msg_parse(line, len, &m);
    switch (m.kind) {
    case MCP_MSG_INVALID:
        mcp_send(s, mcp_error(m.id, m.err_code, m.err_msg));
        break;
    case MCP_MSG_REQUEST:
        handle_request(s, &m);
        break;
    case MCP_MSG_NOTIFICATION:
        if (strcmp(m.method, "notifications/initialized") == 0) {
            pthread_mutex_lock(&s->mu);
            s->initialized = true;
            bool owed = s->channel_owed;
            s->channel_owed = false;
            pthread_mutex_unlock(&s->mu);
            if (owed) { /* a wake-up came while the client was starting: not lost */
                send_channel(s, atomic_load(&s->head));
            }
        }
        /* Others (cancelled, roots/list_changed, ...) need nothing from us. */
        break;
    case MCP_MSG_RESPONSE:
        break;
    }
    mcp_msg_cleanup(&m);
}

/* Reads stdin line by line until end of input or a signal. A line longer than
 * MCP_MAX_MESSAGE_BYTES is skipped to its end and answered with -32600. */
static void read_loop(struct mcp_session *s)
{
    size_t cap = 65536, len = 0;
    char *buf = malloc(cap);
    bool skipping = false;
    if (buf == NULL) {
        return;
    }
    for (;;) {
        struct pollfd p[2] = {{.fd = STDIN_FILENO, .events = POLLIN},
                              {.fd = s->term_pipe[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR) {
                continue;
            }
            break;
        }
        if (p[1].revents & POLLIN) {
            break;
        }
        if (len == cap) {
            size_t ncap = cap * 2 > MCP_MAX_MESSAGE_BYTES + 2 ? MCP_MAX_MESSAGE_BYTES + 2 : cap * 2;
            char *grown = ncap > cap ? realloc(buf, ncap) : NULL;
            if (grown == NULL) {
                /* Full: this line is over the limit. Drop what we have and skip to its end. */
                skipping = true;
                len = 0;
            } else {
                buf = grown;
                cap = ncap;
            }
        }
        ssize_t n = read(STDIN_FILENO, buf + len, cap - len);
        if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
            continue;
        }
        if (n <= 0) {
            /* End of input: a last line without its newline still counts. */
            if (len > 0 && !skipping) {
                handle_line(s, buf, len);
            }
            break;
        }
        size_t start = 0, end = len + (size_t)n;
        for (size_t i = len; i < end; i++) {
            if (buf[i] != '\n') {
                continue;
            }
            if (skipping) {
                mcp_send(s, mcp_error(NULL, MCP_INVALID_REQUEST, "message too large"));
                skipping = false;
            } else {
                handle_line(s, buf + start, i - start);
            }
            start = i + 1;
        }
        memmove(buf, buf + start, end - start);
        len = end - start;
        if (len > MCP_MAX_MESSAGE_BYTES) {
            skipping = true;
            len = 0;
        }
        if (s->out_broken) {
            break;
        }
    }
    free(buf);
}

/* ---- the session's life -----------------------------------------------------------------------
 */

static int make_pipe(int fds[2])
{
    if (pipe(fds) != 0) {
        return -1;
    }
    for (int i = 0; i < 2; i++) {
        fcntl(fds[i], F_SETFL, O_NONBLOCK);
        fcntl(fds[i], F_SETFD, FD_CLOEXEC);
    }
    return 0;
}

static int connect_all(struct cli_args *a, struct mcp_session *s, struct cli_token_source *ts,
                       bool follow)
{
    struct roost_client **clients[3] = {&s->c, &s->keep_c, &s->sub_c};
    for (int i = 0; i < 3; i++) {
        int r = cli_connect(a, clients[i]);
        if (r != CLI_EXIT_OK) {
            return r;
        }
        if (follow) {
            roost_client_set_token_callback(*clients[i], cli_token_source_cb, ts);
        }
    }
    /* Releases and extends must not hang the session for the default 30 s on a dead server. */
    roost_client_set_timeouts(s->keep_c, 5000, 10000);
    return CLI_EXIT_OK;
}

static void default_consumer(struct mcp_session *s)
{
    char host[64] = "host";
    gethostname(host, sizeof host - 1);
    host[sizeof host - 1] = '\0';
    for (char *p = host; *p; p++) {
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '.' || *p == '-' || *p == '_')) {
            *p = '-';
        }
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    snprintf(s->consumer, sizeof s->consumer, "mcp-%.40s-%ld-%lx", host, (long)getpid(),
             (unsigned long)(ts.tv_nsec & 0xffffff));
}

static void release_held(struct mcp_session *s, const char *why)
{
    int64_t released = 0;
    int rc = roost_inbox_release_all(s->keep_c, s->agent, s->consumer, &released);
    if (rc == ROOST_OK) {
        if (released > 0) {
            fprintf(stderr, "roost mcp: %s: released %lld lease(s) of consumer %s\n", why,
                    (long long)released, s->consumer);
        }
    } else {
        fprintf(stderr, "roost mcp: %s: release-all failed: %s (%s)\n", why,
                roost_client_errmsg(s->keep_c), roost_client_errcode(s->keep_c));
    }
}

int cmd_mcp(struct cli_args *a)
{
    struct mcp_session *s = &g_s;
    memset(s, 0, sizeof *s);
    s->agent = cli_str(a, "agent");
    s->channel = cli_flag(a, "channel");
    s->state_dir = cli_str(a, "state-dir");
    s->log_level = MCP_LOG_WARNING;
    s->lock_fd = s->processed_fd = -1;
    atomic_store(&s->head, -1);
    s->wake_pipe[0] = s->wake_pipe[1] = s->term_pipe[0] = s->term_pipe[1] = -1;
    snprintf(inbox_uri, sizeof inbox_uri, "roost://agents/%s/inbox", s->agent);
    pthread_mutex_init(&s->out_mu, NULL);
    pthread_mutex_init(&s->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&s->cv, &ca);
    pthread_condattr_destroy(&ca);

    struct cli_token_source ts;
    bool follow;
    int r = cli_token_source_follow(a, "mcp", &ts, &follow);
    if (r != CLI_EXIT_OK) {
        return r;
    }
    r = connect_all(a, s, &ts, follow);
    if (r != CLI_EXIT_OK) {
        goto out;
    }
    if (make_pipe(s->wake_pipe) != 0 || make_pipe(s->term_pipe) != 0) {
        r = CLI_EXIT_ERROR;
        goto out;
    }
    if (s->state_dir != NULL) {
        if (mcp_state_open(s) != 0) {
            r = CLI_EXIT_ERROR;
            goto out;
        }
        /* A crashed earlier session of this state dir left leases: give them back now. */
        release_held(s, "start");
    } else {
        default_consumer(s);
    }

    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    pthread_t keeper, listener;
    if (pthread_create(&keeper, NULL, mcp_keeper_main, s) != 0) {
        r = CLI_EXIT_ERROR;
        goto out;
    }
    bool listening = pthread_create(&listener, NULL, listener_main, s) == 0;
    if (listening) {
        pthread_detach(listener);
    }
    fprintf(stderr, "roost mcp: serving agent %s on stdio (consumer %s)\n", s->agent, s->consumer);
    read_loop(s);

    pthread_mutex_lock(&s->mu);
    s->stopping = true;
    size_t held = s->n_leases;
    pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
    pthread_join(keeper, NULL);
    fprintf(stderr, "roost mcp: session ends (%zu lease(s) held)\n", held);
    release_held(s, "end");
    r = CLI_EXIT_OK;
    /* The listener may sit in a stream read for up to a heartbeat: the process ends without
     * waiting for it (it touches only the session, which stays allocated). */
    fflush(stderr);
    _exit(r);
out:
    if (follow) {
        cli_token_source_cleanup(&ts);
    }
    mcp_state_close(s);
    roost_client_free(s->c);
    roost_client_free(s->keep_c);
    roost_client_free(s->sub_c);
    return r;
}
