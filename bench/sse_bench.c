/* SPDX-License-Identifier: MIT */
/* sse_bench: BENCHMARKS.md scenario 5 (SSE). One thread, one epoll set, non-blocking sockets.
 *
 *  1. Opens N idle subscribers (GET /api/v1/agents/{agent}/subscribe) to N / K distinct agents
 *     (K = --per-agent subscribers each), at most --concurrency connections in progress at a time,
 *     and waits until every one has its initial `inbox_updated`. Client sockets are bound to
 *     127.0.0.2, 127.0.0.3, … (--per-source connections each) so that more connections than one
 *     source address has ephemeral ports can reach one server port.
 *  2. roostd's VmRSS (/proc/PID/status, --pid) before and after: growth per subscriber.
 *  3. roostd's CPU (utime + stime from /proc/PID/stat) over --idle-seconds with all streams idle.
 *  4. Targeted publish → ping: --samples times, publish one event to one random subscribed agent
 *     (POST /api/v1/events on a keep-alive socket) and time until every subscriber of that agent
 *     got an inbox_updated whose cursor_hint is past the one it had; one publish at a time.
 *  5. Fan-out: one publish whose recipients are all the agents (in publishes of at most
 *     --fanout-max recipients, sent at once on parallel connections when there are more agents),
 *     timed from the send until the last subscriber got its ping; also until the first ping and
 *     until the publish reply. --fanouts times.
 *  6. Closes everything and reads VmRSS once more.
 *
 * Framing assumption (checked, counted in `errors`): roostd writes one SSE event per HTTP chunk,
 * so a line never spans two chunks.
 *
 * Output: one "RESULT key=value …" line on stdout; progress and diagnostics on stderr. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>

#include "bench_common.h"
#include "bench_http.h"
#include "common/limits.h"
#include "common/strutil.h"

#include "common/banned.h"

/* The status of a response that starts "HTTP/1.x NNN" (at least 12 bytes readable), else 0. */
static int status_code(const char *resp)
{
    int64_t v = 0;
    if (strncmp(resp, "HTTP/1.", 7) != 0 || strutil_parse_i64(resp + 9, 3, 100, 599, &v) != 0) {
        return 0;
    }
    return (int)v;
}

#ifndef IP_BIND_ADDRESS_NO_PORT
#define IP_BIND_ADDRESS_NO_PORT 24
#endif

#define MAX_ERROR_REPORTS 10
#define READ_CHUNK 65536
#define PUB_TAG (UINT64_C(1) << 63)

enum sub_state { ST_IDLE, ST_CONNECTING, ST_HEADERS, ST_STREAM, ST_CLOSED };
enum ev_type { EV_NONE, EV_INBOX, EV_HEARTBEAT, EV_OTHER };

struct sub {
    char *buf;         /* unparsed bytes carried to the next read (NULL when none) */
    int64_t ev_hint;   /* cursor_hint of the SSE event being parsed (-1: none yet) */
    int64_t last_hint; /* newest inbox_updated cursor_hint (-1: before the first one) */
    int64_t base;      /* while waiting: a ping counts when its hint is past this */
    int fd;
    uint32_t agent;
    uint32_t blen;
    uint16_t req_sent;
    uint8_t state;
    uint8_t ev_type;
    bool waiting;
};

struct pubconn {
    int fd;
    bool busy, done;
    char *out;
    size_t out_len, out_sent;
    char *in;
    size_t in_len, in_cap;
    size_t header_len, content_len;
    bool have_header;
    int status;
    int64_t t_send, t_reply;
};

struct opts {
    char host[256];
    char port[16];
    const char *url;
    const char *data_dir;
    const char *key_file;
    char prefix[96];
    long pid;
    int subscribers;
    int per_agent;
    int per_source;
    int concurrency;
    double idle_s;
    double settle_s;
    int samples;
    double sample_gap_ms;
    double sample_period_ms;
    int fanouts;
    int fanout_max;
    double timeout_s;
    uint64_t seed;
    const char *source_base;
};

static struct opts g;
static int g_ep = -1;
static struct sockaddr_in g_server;
static struct sockaddr_in g_pub_server; /* publishes go here: g_server or --publish-url */
static char *g_auth_header;             /* "Authorization: Bearer …\r\n" */
static char g_host_header[300];
static struct sub *g_subs; /* subscribers 0…N-1, then the warm-up one at N */
static int g_nsubs;        /* N + 1 */
static int g_agents;       /* N / K, plus the warm-up agent at index g_agents */
static struct pubconn *g_pubs;
static int g_npubs;
static char g_rbuf[READ_CHUNK];

/* counters */
static int g_in_progress; /* connections not yet at their initial ping */
static int g_ready;       /* subscribers that got their initial ping */
static int g_failed;      /* subscribers that never got there */
static int g_closed_open; /* subscribers closed after their initial ping (unexpected) */
static uint64_t g_pings, g_heartbeats, g_errors;
static int g_error_reports;
static bool g_shutting;
/* arrival tracking for the measurement in progress */
static int g_arrivals;
static int64_t g_first_arrival, g_last_arrival, g_last_arrival_hint;

static void report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void report(const char *fmt, ...)
{
    g_errors++;
    if (g_error_reports++ >= MAX_ERROR_REPORTS) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    fputs("sse_bench: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

static uint64_t rnd(void)
{
    g.seed ^= g.seed << 13;
    g.seed ^= g.seed >> 7;
    g.seed ^= g.seed << 17;
    return g.seed;
}

static void agent_name(char *out, size_t cap, int agent)
{
    if (agent == g_agents) {
        snprintf(out, cap, "%swarmup", g.prefix);
    } else {
        snprintf(out, cap, "%s%d", g.prefix, agent);
    }
}

/* ---- /proc ---- */

static long proc_status_kib(const char *key)
{
    if (g.pid <= 0) {
        return -1;
    }
    char path[64], line[256];
    snprintf(path, sizeof path, "/proc/%ld/status", g.pid);
    FILE *fp = fopen(path, "r");
    if (!fp) {
        return -1;
    }
    long v = -1;
    size_t klen = strlen(key);
    while (fgets(line, sizeof line, fp)) {
        if (strncmp(line, key, klen) == 0 && line[klen] == ':') {
            v = strtol(line + klen + 1, NULL, 10);
            break;
        }
    }
    fclose(fp);
    return v;
}

/* utime + stime of the process, in clock ticks; -1 when unknown. */
static long long proc_cpu_ticks(void)
{
    if (g.pid <= 0) {
        return -1;
    }
    char path[64], text[2048];
    snprintf(path, sizeof path, "/proc/%ld/stat", g.pid);
    FILE *fp = fopen(path, "r");
    if (!fp) {
        return -1;
    }
    size_t n = fread(text, 1, sizeof text - 1, fp);
    fclose(fp);
    text[n] = '\0';
    char *p = strrchr(text, ')'); /* the command name may contain spaces */
    if (!p) {
        return -1;
    }
    /* After ") ": field 3 (state) is token 0; utime (14) is token 11, stime (15) token 12. */
    long long utime = -1, stime = -1;
    char *save = NULL;
    int i = 0;
    for (char *t = strtok_r(p + 2, " ", &save); t; t = strtok_r(NULL, " ", &save), i++) {
        if (i == 11) {
            utime = strtoll(t, NULL, 10);
        } else if (i == 12) {
            stime = strtoll(t, NULL, 10);
            break;
        }
    }
    return utime < 0 || stime < 0 ? -1 : utime + stime;
}

/* ---- subscribers ---- */

static void sub_close(struct sub *s, bool expected)
{
    if (s->fd >= 0) {
        if (g_shutting) {
            /* Abortive close (RST): no TIME_WAIT left on the client's ports, which would slow
             * down the next run's connects from the same source addresses. */
            struct linger lg = {.l_onoff = 1, .l_linger = 0};
            setsockopt(s->fd, SOL_SOCKET, SO_LINGER, &lg, sizeof lg);
        }
        close(s->fd); /* also leaves the epoll set */
        s->fd = -1;
    }
    free(s->buf);
    s->buf = NULL;
    s->blen = 0;
    if (s->state == ST_CLOSED) {
        return;
    }
    if (s->last_hint < 0) {
        g_in_progress--;
        g_failed++;
    } else if (!expected) {
        g_closed_open++;
    }
    s->state = ST_CLOSED;
    s->waiting = false;
}

static int build_subscribe(const struct sub *s, char *out, size_t cap)
{
    char agent[160];
    agent_name(agent, sizeof agent, (int)s->agent);
    return snprintf(out, cap,
                    "GET /api/v1/agents/%s/subscribe HTTP/1.1\r\n%s%sAccept: "
                    "text/event-stream\r\n\r\n",
                    agent, g_host_header, g_auth_header);
}

static void sub_start(int idx)
{
    struct sub *s = &g_subs[idx];
    s->last_hint = -1;
    s->ev_hint = -1;
    g_in_progress++;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        report("socket: %s", strerror(errno));
        sub_close(s, false);
        return;
    }
    s->fd = fd;
    s->state = ST_CONNECTING;
    if (g.source_base) {
        int one = 1;
        setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
        struct sockaddr_in src = {.sin_family = AF_INET};
        inet_pton(AF_INET, g.source_base, &src.sin_addr);
        src.sin_addr.s_addr = htonl(ntohl(src.sin_addr.s_addr) + (uint32_t)(idx / g.per_source));
        if (bind(fd, (struct sockaddr *)&src, sizeof src) != 0) {
            report("bind to source %s: %s", inet_ntoa(src.sin_addr), strerror(errno));
            sub_close(s, false);
            return;
        }
    }
    if (connect(fd, (struct sockaddr *)&g_server, sizeof g_server) != 0 && errno != EINPROGRESS) {
        report("connect: %s", strerror(errno));
        sub_close(s, false);
        return;
    }
    struct epoll_event ev = {.events = EPOLLOUT, .data.u64 = (uint64_t)idx};
    if (epoll_ctl(g_ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        report("epoll_ctl: %s", strerror(errno));
        sub_close(s, false);
    }
}

static void sub_writable(struct sub *s, int idx)
{
    int err = 0;
    socklen_t len = sizeof err;
    if (s->req_sent == 0 && (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err)) {
        report("connect: %s", strerror(err ? err : errno));
        sub_close(s, false);
        return;
    }
    char req[4096];
    int n = build_subscribe(s, req, sizeof req);
    if (n < 0 || (size_t)n >= sizeof req) {
        report("subscribe request too long");
        sub_close(s, false);
        return;
    }
    ssize_t w = send(s->fd, req + s->req_sent, (size_t)n - s->req_sent, MSG_NOSIGNAL);
    if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
        return;
    }
    if (w < 0) {
        report("send: %s", strerror(errno));
        sub_close(s, false);
        return;
    }
    s->req_sent = (uint16_t)(s->req_sent + w);
    if (s->req_sent < n) {
        return;
    }
    s->state = ST_HEADERS;
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = (uint64_t)idx};
    epoll_ctl(g_ep, EPOLL_CTL_MOD, s->fd, &ev);
}

static void on_ping(struct sub *s, int64_t hint, int64_t now)
{
    g_pings++;
    if (s->last_hint < 0) {
        g_in_progress--;
        g_ready++;
    }
    if (hint > s->last_hint) {
        s->last_hint = hint;
    }
    if (s->waiting && hint > s->base) {
        s->waiting = false;
        if (g_arrivals++ == 0) {
            g_first_arrival = now;
        }
        g_last_arrival = now;
        g_last_arrival_hint = hint;
    }
}

static int64_t parse_hint(const char *p, const char *end)
{
    static const char key[] = "\"cursor_hint\":";
    size_t klen = sizeof key - 1;
    for (; p + klen < end; p++) {
        if (memcmp(p, key, klen) == 0) {
            p += klen;
            while (p < end && *p == ' ') {
                p++;
            }
            int64_t v = 0;
            int digits = 0;
            while (p < end && *p >= '0' && *p <= '9' && digits < 18) {
                v = v * 10 + (*p++ - '0');
                digits++;
            }
            return digits ? v : -1;
        }
    }
    return -1;
}

/* The text of one chunk: SSE lines; a blank line dispatches the event. */
static void sse_text(struct sub *s, const char *p, size_t len, int64_t now)
{
    const char *end = p + len;
    if (len == 0 || end[-1] != '\n') {
        report("an SSE chunk does not end with a newline (%zu bytes)", len);
    }
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *le = nl ? nl : end;
        size_t ll = (size_t)(le - p);
        if (ll == 0) {
            if (s->ev_type == EV_INBOX) {
                if (s->ev_hint < 0) {
                    report("inbox_updated without cursor_hint");
                } else {
                    on_ping(s, s->ev_hint, now);
                }
            } else if (s->ev_type == EV_HEARTBEAT) {
                g_heartbeats++;
            }
            s->ev_type = EV_NONE;
            s->ev_hint = -1;
        } else if (ll > 6 && memcmp(p, "event:", 6) == 0) {
            const char *v = p + 6 + (p[6] == ' ');
            size_t vl = (size_t)(le - v);
            s->ev_type = vl == 13 && memcmp(v, "inbox_updated", 13) == 0 ? EV_INBOX
                         : vl == 9 && memcmp(v, "heartbeat", 9) == 0     ? EV_HEARTBEAT
                                                                         : EV_OTHER;
        } else if (ll > 5 && memcmp(p, "data:", 5) == 0) {
            s->ev_hint = parse_hint(p, le);
        } /* id:, retry:, comments: nothing to do */
        p = nl ? nl + 1 : end;
    }
}

/* Parses what arrived; returns the bytes consumed, or -1 when the stream is over or broken
 * (the subscriber is closed then). */
static long sub_parse(struct sub *s, const char *data, size_t len, int64_t now)
{
    const char *p = data, *end = data + len;
    if (s->state == ST_HEADERS) {
        const char *h = NULL;
        for (const char *q = p; q + 3 < end; q++) {
            if (q[0] == '\r' && q[1] == '\n' && q[2] == '\r' && q[3] == '\n') {
                h = q;
                break;
            }
        }
        if (!h) {
            if (len > 16384) {
                report("subscribe: response headers too long");
                sub_close(s, false);
                return -1;
            }
            return 0;
        }
        int status = len > 12 ? status_code(p) : 0;
        if (status != 200) {
            size_t show = (size_t)(end - p) > 300 ? 300 : (size_t)(end - p);
            report("subscribe: HTTP %d: %.*s", status, (int)show, p);
            sub_close(s, false);
            return -1;
        }
        bool chunked = false;
        for (const char *q = p; q + 26 < h; q++) {
            if (strncasecmp(q, "\r\nTransfer-Encoding: chunked", 28) == 0) {
                chunked = true;
                break;
            }
        }
        if (!chunked) {
            report("subscribe: the stream is not chunked");
            sub_close(s, false);
            return -1;
        }
        s->state = ST_STREAM;
        p = h + 4;
    }
    while (p < end) {
        const char *crlf = NULL;
        for (const char *q = p; q + 1 < end; q++) {
            if (q[0] == '\r' && q[1] == '\n') {
                crlf = q;
                break;
            }
        }
        if (!crlf) {
            if (end - p > 32) {
                report("subscribe: bad chunk header");
                sub_close(s, false);
                return -1;
            }
            break;
        }
        char *hex_end = NULL;
        unsigned long size = strtoul(p, &hex_end, 16);
        if (hex_end == p || size > 1 << 20) {
            report("subscribe: bad chunk size");
            sub_close(s, false);
            return -1;
        }
        if (size == 0) {
            sub_close(s, g_shutting); /* the server ended the stream */
            return -1;
        }
        const char *data_start = crlf + 2;
        if ((size_t)(end - data_start) < size + 2) {
            break;
        }
        sse_text(s, data_start, size, now);
        p = data_start + size + 2;
    }
    return p - data;
}

static void sub_readable(struct sub *s)
{
    for (;;) {
        ssize_t r = recv(s->fd, g_rbuf, sizeof g_rbuf, 0);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0 && errno == EAGAIN) {
            return;
        }
        if (r <= 0) {
            if (!g_shutting) {
                if (s->last_hint < 0) {
                    report("subscribe: connection %s before the initial ping",
                           r == 0 ? "closed" : strerror(errno));
                } else {
                    report("subscribe: stream of agent %u %s", s->agent,
                           r == 0 ? "closed by the server" : strerror(errno));
                }
            }
            sub_close(s, g_shutting);
            return;
        }
        int64_t now = bench_now_ns();
        const char *data = g_rbuf;
        size_t len = (size_t)r;
        if (s->blen) {
            char *nb = realloc(s->buf, s->blen + len);
            if (!nb) {
                report("out of memory");
                sub_close(s, false);
                return;
            }
            memcpy(nb + s->blen, g_rbuf, len);
            s->buf = nb;
            data = nb;
            len += s->blen;
        }
        long used = sub_parse(s, data, len, now);
        if (used < 0) {
            return;
        }
        size_t left = len - (size_t)used;
        if (left == 0) {
            free(s->buf);
            s->buf = NULL;
            s->blen = 0;
        } else if (data == s->buf) {
            memmove(s->buf, s->buf + used, left);
            s->blen = (uint32_t)left;
        } else {
            char *nb = malloc(left);
            if (!nb) {
                report("out of memory");
                sub_close(s, false);
                return;
            }
            memcpy(nb, data + used, left);
            s->buf = nb;
            s->blen = (uint32_t)left;
        }
        if ((size_t)r < sizeof g_rbuf) {
            return;
        }
    }
}

/* ---- publisher connections (keep-alive, Content-Length replies) ---- */

static int pub_open(struct pubconn *c, int idx)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, (struct sockaddr *)&g_pub_server, sizeof g_pub_server) != 0) {
        report("publisher connect: %s", strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) {
        report("fcntl: %s", strerror(errno));
        close(fd);
        return -1;
    }
    struct epoll_event ev = {.events = EPOLLIN, .data.u64 = PUB_TAG | (uint64_t)idx};
    if (epoll_ctl(g_ep, EPOLL_CTL_ADD, fd, &ev) != 0) {
        report("epoll_ctl: %s", strerror(errno));
        close(fd);
        return -1;
    }
    c->fd = fd;
    return 0;
}

static void pub_want_write(struct pubconn *c, int idx, bool on)
{
    struct epoll_event ev = {.events = EPOLLIN | (on ? EPOLLOUT : 0),
                             .data.u64 = PUB_TAG | (uint64_t)idx};
    epoll_ctl(g_ep, EPOLL_CTL_MOD, c->fd, &ev);
}

static void pub_reset(struct pubconn *c)
{
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
    c->busy = false;
}

static void pub_writable(struct pubconn *c, int idx)
{
    while (c->out_sent < c->out_len) {
        ssize_t w = send(c->fd, c->out + c->out_sent, c->out_len - c->out_sent, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w < 0 && errno == EAGAIN) {
            pub_want_write(c, idx, true);
            return;
        }
        if (w <= 0) {
            report("publish: send: %s", strerror(errno));
            pub_reset(c);
            return;
        }
        c->out_sent += (size_t)w;
    }
    pub_want_write(c, idx, false);
}

/* Sends one POST /api/v1/events; the reply is read by the loop (c->done). Returns 0 or -1. */
static int pub_send(int idx, const char *body, size_t body_len)
{
    struct pubconn *c = &g_pubs[idx];
    if (c->fd < 0 && pub_open(c, idx) != 0) {
        return -1;
    }
    size_t cap = body_len + strlen(g_auth_header) + strlen(g_host_header) + 200;
    char *out = realloc(c->out, cap);
    if (!out) {
        report("out of memory");
        return -1;
    }
    c->out = out;
    int n = snprintf(out, cap,
                     "POST /api/v1/events HTTP/1.1\r\n%s%sContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     g_host_header, g_auth_header, body_len);
    memcpy(out + n, body, body_len);
    c->out_len = (size_t)n + body_len;
    c->out_sent = 0;
    c->in_len = 0;
    c->have_header = false;
    c->header_len = c->content_len = 0;
    c->status = 0;
    c->busy = true;
    c->done = false;
    c->t_send = bench_now_ns();
    pub_writable(c, idx);
    return c->fd >= 0 ? 0 : -1;
}

static void pub_readable(struct pubconn *c)
{
    for (;;) {
        if (c->in_cap - c->in_len < 65536) {
            size_t ncap = c->in_cap ? c->in_cap * 2 : 131072;
            char *nb = realloc(c->in, ncap);
            if (!nb) {
                report("out of memory");
                pub_reset(c);
                return;
            }
            c->in = nb;
            c->in_cap = ncap;
        }
        ssize_t r = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len - 1, 0);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r < 0 && errno == EAGAIN) {
            return;
        }
        if (r <= 0) {
            if (c->busy) {
                report("publish: connection %s", r == 0 ? "closed" : strerror(errno));
            }
            pub_reset(c);
            return;
        }
        int64_t now = bench_now_ns();
        c->in_len += (size_t)r;
        c->in[c->in_len] = '\0';
        if (!c->have_header) {
            char *h = strstr(c->in, "\r\n\r\n");
            if (!h) {
                continue;
            }
            c->have_header = true;
            c->header_len = (size_t)(h - c->in) + 4;
            c->status = status_code(c->in);
            bool have_length = false;
            for (char *l = strstr(c->in, "\r\n"); l && l < h; l = strstr(l + 2, "\r\n")) {
                if (strncasecmp(l + 2, "Content-Length:", 15) == 0) {
                    c->content_len = (size_t)strtoull(l + 17, NULL, 10);
                    have_length = true;
                }
            }
            if (!have_length) {
                report("publish: reply without Content-Length");
                pub_reset(c);
                return;
            }
        }
        if (c->in_len >= c->header_len + c->content_len) {
            c->busy = false;
            c->done = true;
            c->t_reply = now;
            if (c->status != 201) {
                report("publish: HTTP %d: %.300s", c->status, c->in + c->header_len);
            }
            return;
        }
    }
}

/* ---- the loop ---- */

static void loop_once(int timeout_ms)
{
    struct epoll_event evs[1024];
    int n = epoll_wait(g_ep, evs, (int)(sizeof evs / sizeof evs[0]), timeout_ms);
    if (n < 0 && errno != EINTR) {
        fprintf(stderr, "sse_bench: epoll_wait: %s\n", strerror(errno));
        exit(1);
    }
    for (int i = 0; i < n; i++) {
        uint64_t tag = evs[i].data.u64;
        if (tag & PUB_TAG) {
            int idx = (int)(tag & ~PUB_TAG);
            struct pubconn *c = &g_pubs[idx];
            if (c->fd >= 0 && (evs[i].events & EPOLLOUT)) {
                pub_writable(c, idx);
            }
            if (c->fd >= 0 && (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
                pub_readable(c);
            }
            continue;
        }
        struct sub *s = &g_subs[tag];
        if (s->state == ST_CONNECTING) {
            sub_writable(s, (int)tag);
        } else if (s->state == ST_HEADERS || s->state == ST_STREAM) {
            sub_readable(s);
        }
    }
}

typedef bool (*pred_fn)(void);

/* Runs the loop until pred() holds or the deadline passes; returns pred(). */
static bool run_until(pred_fn pred, int64_t deadline_ns)
{
    for (;;) {
        if (pred && pred()) {
            return true;
        }
        int64_t left = deadline_ns - bench_now_ns();
        if (left <= 0) {
            return pred ? pred() : true;
        }
        loop_once(left > 100000000 ? 100 : (int)(left / 1000000) + 1);
    }
}

static int g_expect;
static int g_wait_pub_from, g_wait_pub_to;

static bool all_arrived(void)
{
    if (g_arrivals < g_expect) {
        return false;
    }
    for (int i = g_wait_pub_from; i < g_wait_pub_to; i++) {
        if (g_pubs[i].busy) {
            return false;
        }
    }
    return true;
}

static bool pubs_idle(void)
{
    for (int i = 0; i < g_npubs; i++) {
        if (g_pubs[i].busy) {
            return false;
        }
    }
    return true;
}

/* Marks the subscribers of agents [from, to) as waiting for a ping past their current hint;
 * returns how many are waited for. */
static int arm_agents(int from, int to)
{
    int n = 0;
    for (int a = from; a < to; a++) {
        for (int j = 0; j < g.per_agent; j++) {
            struct sub *s = &g_subs[a * g.per_agent + j];
            if (s->state == ST_STREAM && s->last_hint >= 0) {
                s->base = s->last_hint;
                s->waiting = true;
                n++;
            }
        }
    }
    return n;
}

static int disarm_all(void)
{
    int left = 0;
    for (int i = 0; i < g_nsubs; i++) {
        left += g_subs[i].waiting;
        g_subs[i].waiting = false;
    }
    return left;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double ms(int64_t ns)
{
    return (double)ns / 1e6;
}

/* Milliseconds with one decimal, or "-" for a negative (= not measured) value. */
static const char *fmt_ms1(char *buf, size_t cap, int64_t ns)
{
    if (ns < 0) {
        snprintf(buf, cap, "-");
    } else {
        snprintf(buf, cap, "%.1f", ms(ns));
    }
    return buf;
}

/* ---- setup ---- */

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: sse_bench [options]\n"
        "  --url http://HOST:PORT   server (default: read DATA_DIR/ready)\n"
        "  --data-dir DIR           roostd data dir: ready file and " ROOST_TOKEN_KEY_FILE "\n"
        "  --publish-url URL        publish on this server instead (another node on the same\n"
        "                           database: cross-node ping latency, scenario 6)\n"
        "  --key-file PEM           Ed25519 key to sign the token (default "
        "DATA_DIR/" ROOST_TOKEN_KEY_FILE ")\n"
        "  --pid PID                roostd's pid, for VmRSS and CPU (without it: not "
        "measured)\n"
        "  --subscribers N          idle subscribers (default 10000)\n"
        "  --per-agent K            subscribers per agent (default 1; N/K agents)\n"
        "  --concurrency C          connections in progress at a time (default 256)\n"
        "  --source-base IP         first client source address (default 127.0.0.2; "
        "'none': the kernel's)\n"
        "  --per-source M           connections per source address (default 20000)\n"
        "  --settle S               wait before reading VmRSS (default 2)\n"
        "  --idle-seconds S         idle CPU window (default 10)\n"
        "  --samples S              targeted publish->ping samples (default 1000)\n"
        "  --sample-gap-ms G        pause between samples (default 1)\n"
        "  --sample-period-ms P     start a sample every P ms instead (spread the samples over\n"
        "                           a heartbeat period: they see its rounds as often as real\n"
        "                           traffic would)\n"
        "  --fanouts F              publishes to all agents (default 3)\n"
        "  --fanout-max R           recipients per publish (roostd limits.max_recipients, "
        "default 10000)\n"
        "  --timeout S              connect phase and fan-out timeout (default 120)\n"
        "  --agent-prefix STR       agent names are STR<n> (default sse-<pid>-)\n"
        "  --seed X                 random agent choice (default 1)\n");
}

static int parse_url(const char *url)
{
    if (bench_parse_url(url, g.host, sizeof g.host, g.port, sizeof g.port, &g_server) != 0) {
        return -1;
    }
    snprintf(g_host_header, sizeof g_host_header, "Host: %s:%s\r\n", g.host, g.port);
    return 0;
}

static int raise_nofile(rlim_t need)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) {
        return -1;
    }
    if (rl.rlim_max < need) {
        rl.rlim_max = need; /* works with CAP_SYS_RESOURCE */
    }
    rl.rlim_cur = rl.rlim_max;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
        getrlimit(RLIMIT_NOFILE, &rl);
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    getrlimit(RLIMIT_NOFILE, &rl);
    if (rl.rlim_cur < need) {
        fprintf(
            stderr,
            "sse_bench: RLIMIT_NOFILE is %llu, %llu needed (raise the hard limit: ulimit -Hn)\n",
            (unsigned long long)rl.rlim_cur, (unsigned long long)need);
        return -1;
    }
    return 0;
}

/* Appends "name" entries for agents [from, to) to a publish body. */
static char *fanout_body(int from, int to, size_t *len)
{
    size_t cap = (size_t)(to - from) * (strlen(g.prefix) + 16) + 64;
    char *b = malloc(cap);
    if (!b) {
        return NULL;
    }
    size_t off = (size_t)snprintf(b, cap, "{\"recipients\":[");
    for (int a = from; a < to; a++) {
        char name[160];
        agent_name(name, sizeof name, a);
        off += (size_t)snprintf(b + off, cap - off, "%s\"%s\"", a > from ? "," : "", name);
    }
    off += (size_t)snprintf(b + off, cap - off, "],\"payload\":{}}");
    *len = off;
    return b;
}

static int64_t reply_sequence(const struct pubconn *c)
{
    const char *p = c->in ? strstr(c->in + c->header_len, "\"sequence_number\":") : NULL;
    return p ? strtoll(p + 18, NULL, 10) : -1;
}

int main(int argc, char **argv)
{
    enum {
        O_URL = 256,
        O_PUBURL,
        O_DATA,
        O_KEY,
        O_PID,
        O_N,
        O_K,
        O_CONC,
        O_SRC,
        O_PERSRC,
        O_SETTLE,
        O_IDLE,
        O_SAMPLES,
        O_GAP,
        O_PERIOD,
        O_FANOUTS,
        O_FANMAX,
        O_TIMEOUT,
        O_PREFIX,
        O_SEED
    };
    static const struct option opts[] = {
        {"url", required_argument, NULL, O_URL},
        {"publish-url", required_argument, NULL, O_PUBURL},
        {"data-dir", required_argument, NULL, O_DATA},
        {"key-file", required_argument, NULL, O_KEY},
        {"pid", required_argument, NULL, O_PID},
        {"subscribers", required_argument, NULL, O_N},
        {"per-agent", required_argument, NULL, O_K},
        {"concurrency", required_argument, NULL, O_CONC},
        {"source-base", required_argument, NULL, O_SRC},
        {"per-source", required_argument, NULL, O_PERSRC},
        {"settle", required_argument, NULL, O_SETTLE},
        {"idle-seconds", required_argument, NULL, O_IDLE},
        {"samples", required_argument, NULL, O_SAMPLES},
        {"sample-gap-ms", required_argument, NULL, O_GAP},
        {"sample-period-ms", required_argument, NULL, O_PERIOD},
        {"fanouts", required_argument, NULL, O_FANOUTS},
        {"fanout-max", required_argument, NULL, O_FANMAX},
        {"timeout", required_argument, NULL, O_TIMEOUT},
        {"agent-prefix", required_argument, NULL, O_PREFIX},
        {"seed", required_argument, NULL, O_SEED},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    g.subscribers = 10000;
    g.per_agent = 1;
    g.concurrency = 256;
    g.source_base = "127.0.0.2";
    g.per_source = 20000;
    g.settle_s = 2;
    g.idle_s = 10;
    g.samples = 1000;
    g.sample_gap_ms = 1;
    g.fanouts = 3;
    g.fanout_max = 10000;
    g.timeout_s = 120;
    g.seed = 1;
    snprintf(g.prefix, sizeof g.prefix, "sse-%ld-", (long)getpid());
    const char *pub_url = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case O_PUBURL:
            pub_url = optarg;
            break;
        case O_URL:
            g.url = optarg;
            break;
        case O_DATA:
            g.data_dir = optarg;
            break;
        case O_KEY:
            g.key_file = optarg;
            break;
        case O_PID:
            g.pid = (long)bench_parse_num("--pid", optarg, 1, 1e9);
            break;
        case O_N:
            g.subscribers = (int)bench_parse_num("--subscribers", optarg, 1, 1e7);
            break;
        case O_K:
            g.per_agent = (int)bench_parse_num("--per-agent", optarg, 1, 1e6);
            break;
        case O_CONC:
            g.concurrency = (int)bench_parse_num("--concurrency", optarg, 1, 1e6);
            break;
        case O_SRC:
            g.source_base = strcmp(optarg, "none") == 0 ? NULL : optarg;
            break;
        case O_PERSRC:
            g.per_source = (int)bench_parse_num("--per-source", optarg, 1, 28000);
            break;
        case O_SETTLE:
            g.settle_s = bench_parse_num("--settle", optarg, 0, 3600);
            break;
        case O_IDLE:
            g.idle_s = bench_parse_num("--idle-seconds", optarg, 0, 3600);
            break;
        case O_SAMPLES:
            g.samples = (int)bench_parse_num("--samples", optarg, 0, 1e7);
            break;
        case O_GAP:
            g.sample_gap_ms = bench_parse_num("--sample-gap-ms", optarg, 0, 60000);
            break;
        case O_PERIOD:
            g.sample_period_ms = bench_parse_num("--sample-period-ms", optarg, 0, 60000);
            break;
        case O_FANOUTS:
            g.fanouts = (int)bench_parse_num("--fanouts", optarg, 0, 1000);
            break;
        case O_FANMAX:
            g.fanout_max = (int)bench_parse_num("--fanout-max", optarg, 1, 1e7);
            break;
        case O_TIMEOUT:
            g.timeout_s = bench_parse_num("--timeout", optarg, 1, 86400);
            break;
        case O_PREFIX:
            snprintf(g.prefix, sizeof g.prefix, "%s", optarg);
            break;
        case O_SEED:
            g.seed = (uint64_t)bench_parse_num("--seed", optarg, 1, 1e15);
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    if (g.subscribers % g.per_agent != 0) {
        fprintf(stderr, "sse_bench: --subscribers must be a multiple of --per-agent\n");
        return 2;
    }
    g_agents = g.subscribers / g.per_agent;

    char path[4096];
    char *url = g.url ? strdup(g.url) : NULL;
    if (!url && g.data_dir) {
        snprintf(path, sizeof path, "%s/ready", g.data_dir);
        url = bench_read_line(path);
    }
    if (!url || parse_url(url) != 0) {
        fprintf(stderr, "sse_bench: need --url http://HOST:PORT (IPv4) or --data-dir (got '%s')\n",
                url ? url : "");
        return 2;
    }
    g_pub_server = g_server;
    if (pub_url) {
        char h[256], pt[16];
        if (bench_parse_url(pub_url, h, sizeof h, pt, sizeof pt, &g_pub_server) != 0) {
            fprintf(stderr, "sse_bench: bad --publish-url '%s' (http://HOST:PORT, IPv4)\n",
                    pub_url);
            return 2;
        }
    }
    if (g.source_base &&
        (ntohl(g_server.sin_addr.s_addr) >> 24) != 127) { /* sources are loopback addresses */
        g.source_base = NULL;
    }
    const char *key_file = g.key_file;
    if (!key_file && g.data_dir) {
        snprintf(path, sizeof path, "%s/" ROOST_TOKEN_KEY_FILE, g.data_dir);
        key_file = path;
    }
    if (!key_file) {
        fprintf(stderr, "sse_bench: need --data-dir or --key-file\n");
        return 2;
    }
    g_auth_header =
        bench_auth_header("sse_bench", key_file, "sse-bench", "agent:*:read agent:*:publish");
    if (!g_auth_header) {
        return 1;
    }

    int n_fan_pubs = (g_agents + g.fanout_max - 1) / g.fanout_max;
    g_npubs = n_fan_pubs > 0 ? n_fan_pubs : 1;
    g_nsubs = g.subscribers + 1;
    if (raise_nofile((rlim_t)g_nsubs + (rlim_t)g_npubs + 64) != 0) {
        return 1;
    }
    g_subs = calloc((size_t)g_nsubs, sizeof *g_subs);
    g_pubs = calloc((size_t)g_npubs, sizeof *g_pubs);
    g_ep = epoll_create1(EPOLL_CLOEXEC);
    if (!g_subs || !g_pubs || g_ep < 0) {
        fprintf(stderr, "sse_bench: out of memory\n");
        return 1;
    }
    for (int i = 0; i < g_nsubs; i++) {
        g_subs[i].fd = -1;
        g_subs[i].agent = (uint32_t)(i < g.subscribers ? i / g.per_agent : g_agents);
        g_subs[i].last_hint = -1;
    }
    for (int i = 0; i < g_npubs; i++) {
        g_pubs[i].fd = -1;
    }
    int sources = g.source_base ? (g.subscribers + g.per_source) / g.per_source : 0;

    /* Warm-up, so one-time allocations (token cache, statements, pages) are not counted: one
     * publish and one subscriber (kept open, not counted). */
    char body[512];
    char name[160];
    agent_name(name, sizeof name, g_agents);
    int blen = snprintf(body, sizeof body, "{\"recipients\":[\"%s\"],\"payload\":{}}", name);
    if (pub_send(0, body, (size_t)blen) != 0 ||
        !run_until(pubs_idle, bench_now_ns() + (int64_t)10e9) || g_pubs[0].status != 201) {
        fprintf(stderr, "sse_bench: the warm-up publish failed\n");
        return 1;
    }
    sub_start(g.subscribers);
    {
        int64_t dl = bench_now_ns() + (int64_t)10e9;
        while (g_subs[g.subscribers].last_hint < 0 && g_subs[g.subscribers].state != ST_CLOSED &&
               bench_now_ns() < dl) {
            loop_once(100);
        }
        if (g_subs[g.subscribers].last_hint < 0) {
            fprintf(stderr, "sse_bench: the warm-up subscriber got no initial ping\n");
            return 1;
        }
    }
    g_ready = 0;
    run_until(NULL, bench_now_ns() + (int64_t)(0.5e9));
    long rss_before = proc_status_kib("VmRSS"), anon_before = proc_status_kib("RssAnon");

    /* 1. Open the subscribers. */
    fprintf(stderr, "sse_bench: opening %d subscribers to %d agents (%d source addresses)\n",
            g.subscribers, g_agents, sources);
    int64_t t_open = bench_now_ns();
    int64_t deadline = t_open + (int64_t)(g.timeout_s * 1e9);
    int next = 0;
    while ((next < g.subscribers || g_in_progress > 0) && bench_now_ns() < deadline) {
        while (next < g.subscribers && g_in_progress < g.concurrency) {
            sub_start(next++);
        }
        loop_once(100);
    }
    int64_t t_opened = bench_now_ns();
    double connect_s = (double)(t_opened - t_open) / 1e9;
    fprintf(stderr, "sse_bench: %d subscribers ready, %d failed, in %.1f s\n", g_ready, g_failed,
            connect_s);
    run_until(NULL, bench_now_ns() + (int64_t)(g.settle_s * 1e9));
    long rss_after = proc_status_kib("VmRSS"), anon_after = proc_status_kib("RssAnon");

    /* 2. Idle CPU. */
    uint64_t hb0 = g_heartbeats;
    long long cpu0 = proc_cpu_ticks();
    int64_t t_idle = bench_now_ns();
    run_until(NULL, t_idle + (int64_t)(g.idle_s * 1e9));
    long long cpu1 = proc_cpu_ticks();
    long rss_idle = proc_status_kib("VmRSS"); /* after the heartbeat rounds of the idle window */
    double idle_wall = (double)(bench_now_ns() - t_idle) / 1e9;
    double idle_cpu_pct =
        cpu0 >= 0 && cpu1 >= 0 && idle_wall > 0
            ? 100.0 * (double)(cpu1 - cpu0) / (double)sysconf(_SC_CLK_TCK) / idle_wall
            : -1;
    uint64_t idle_heartbeats = g_heartbeats - hb0;
    fprintf(stderr, "sse_bench: idle %.1f s: roostd CPU %.2f %%, %" PRIu64 " heartbeats\n",
            idle_wall, idle_cpu_pct, idle_heartbeats);

    /* 3. Targeted publish -> ping. */
    struct hist *lat = calloc(1, sizeof *lat), *rtt = calloc(1, sizeof *rtt);
    if (!lat || !rtt) {
        return 1;
    }
    /* ping time minus reply time, per sample: negative when the ping came first */
    int64_t *vs_reply = calloc((size_t)g.samples + 1, sizeof *vs_reply);
    if (!vs_reply) {
        return 1;
    }
    int ping_lost = 0, hint_mismatch = 0, samples_done = 0;
    int64_t gap_ns = (int64_t)(g.sample_gap_ms * 1e6);
    int64_t period_ns = (int64_t)(g.sample_period_ms * 1e6);
    int64_t t_samples = bench_now_ns();
    for (int i = 0; i < g.samples && g_ready > 0; i++) {
        int64_t due = t_samples + i * period_ns;
        bool late = period_ns > 0 && bench_now_ns() > due; /* held up by the sample before */
        if (period_ns > 0) {
            run_until(NULL, due);
        }
        int a = (int)(rnd() % (uint64_t)g_agents);
        g_arrivals = 0;
        g_expect = arm_agents(a, a + 1);
        if (g_expect == 0) {
            continue;
        }
        agent_name(name, sizeof name, a);
        blen = snprintf(body, sizeof body, "{\"recipients\":[\"%s\"],\"payload\":{}}", name);
        g_wait_pub_from = 0;
        g_wait_pub_to = 1;
        if (pub_send(0, body, (size_t)blen) != 0) {
            disarm_all();
            continue;
        }
        /* Paced: a sample held up by the one before it is timed from its scheduled start, as an
         * independent client's would be (no coordinated omission); one sent on time (give or
         * take the timer's slack) from its send. */
        int64_t t0 = late ? due : g_pubs[0].t_send;
        if (!run_until(all_arrived, g_pubs[0].t_send + (int64_t)2e9)) {
            int lost = disarm_all();
            ping_lost += lost;
            report("targeted sample %d: agent %d: %d of %d pings missing after 2 s%s", i, a, lost,
                   g_expect, g_pubs[0].busy ? " (no publish reply either)" : "");
            run_until(pubs_idle, bench_now_ns() + (int64_t)10e9);
            continue;
        }
        if (g_pubs[0].status != 201) {
            continue;
        }
        vs_reply[samples_done++] = g_last_arrival - g_pubs[0].t_reply;
        hist_add(lat, g_last_arrival - t0);
        hist_add(rtt, g_pubs[0].t_reply - g_pubs[0].t_send);
        int64_t seq = reply_sequence(&g_pubs[0]);
        if (seq != g_last_arrival_hint) {
            hint_mismatch++;
        }
        if (gap_ns > 0 && period_ns == 0) {
            run_until(NULL, bench_now_ns() + gap_ns);
        }
    }
    qsort(vs_reply, (size_t)samples_done, sizeof *vs_reply, cmp_i64);
    int64_t vs_p50 = samples_done ? vs_reply[samples_done / 2] : 0;
    int64_t vs_p99 = samples_done ? vs_reply[(size_t)((samples_done - 1) * 0.99)] : 0;
    fprintf(stderr,
            "sse_bench: targeted: %d samples, p50 %.3f ms, p99 %.3f ms, max %.3f ms, %d lost\n",
            samples_done, ms(hist_quantile(lat, 0.5)), ms(hist_quantile(lat, 0.99)), ms(lat->max),
            ping_lost);

    /* 4. Fan-out to every agent. */
    int64_t *fan = calloc((size_t)g.fanouts + 1, sizeof *fan);
    int64_t *fan_first = calloc((size_t)g.fanouts + 1, sizeof *fan_first);
    int64_t *fan_reply = calloc((size_t)g.fanouts + 1, sizeof *fan_reply);
    int64_t *fan_spread = calloc((size_t)g.fanouts + 1, sizeof *fan_spread);
    if (!fan || !fan_first || !fan_reply || !fan_spread) {
        return 1;
    }
    int fan_done = 0, fan_lost = 0;
    for (int f = 0; f < g.fanouts && g_ready > 0; f++) {
        run_until(NULL, bench_now_ns() + (int64_t)(0.5e9));
        g_arrivals = 0;
        g_expect = arm_agents(0, g_agents);
        g_wait_pub_from = 0;
        g_wait_pub_to = n_fan_pubs;
        int sent = 0;
        int64_t t0 = bench_now_ns();
        for (int p = 0; p < n_fan_pubs; p++) {
            int from = p * g.fanout_max;
            int to = from + g.fanout_max < g_agents ? from + g.fanout_max : g_agents;
            size_t len = 0;
            char *b = fanout_body(from, to, &len);
            if (b && pub_send(p, b, len) == 0) {
                sent++;
            }
            free(b);
        }
        if (sent != n_fan_pubs) {
            report("fan-out %d: only %d of %d publishes sent", f, sent, n_fan_pubs);
        }
        bool ok = run_until(all_arrived, t0 + (int64_t)(g.timeout_s * 1e9));
        int64_t reply = 0;
        bool replies_ok = true;
        for (int p = 0; p < n_fan_pubs; p++) {
            if (g_pubs[p].done && g_pubs[p].t_reply - t0 > reply) {
                reply = g_pubs[p].t_reply - t0;
            }
            replies_ok = replies_ok && g_pubs[p].done && g_pubs[p].status == 201;
        }
        if (!ok) {
            int lost = disarm_all();
            fan_lost += lost;
            report("fan-out %d: %d of %d pings missing after %.0f s", f, lost, g_expect,
                   g.timeout_s);
            run_until(pubs_idle, bench_now_ns() + (int64_t)10e9);
            continue;
        }
        if (!replies_ok) {
            continue;
        }
        fan[fan_done] = g_last_arrival - t0;
        fan_first[fan_done] = g_first_arrival - t0;
        fan_reply[fan_done] = reply;
        fan_spread[fan_done] = g_last_arrival - g_first_arrival;
        fprintf(stderr,
                "sse_bench: fan-out %d to %d agents (%d subscribers): last ping %.1f ms, first "
                "%.1f ms, reply %.1f ms\n",
                f, g_agents, g_expect, ms(fan[fan_done]), ms(fan_first[fan_done]),
                ms(fan_reply[fan_done]));
        fan_done++;
    }
    qsort(fan, (size_t)fan_done, sizeof *fan, cmp_i64);
    qsort(fan_first, (size_t)fan_done, sizeof *fan_first, cmp_i64);
    qsort(fan_reply, (size_t)fan_done, sizeof *fan_reply, cmp_i64);
    qsort(fan_spread, (size_t)fan_done, sizeof *fan_spread, cmp_i64);
    int64_t fan_med = fan_done ? fan[fan_done / 2] : -1;
    int64_t fan_max = fan_done ? fan[fan_done - 1] : -1;
    int64_t fan_first_med = fan_done ? fan_first[fan_done / 2] : -1;
    int64_t fan_reply_med = fan_done ? fan_reply[fan_done / 2] : -1;
    int64_t fan_spread_med = fan_done ? fan_spread[fan_done / 2] : -1;

    /* 5. Everything still connected? Then close and look at roostd's memory again. */
    run_until(NULL, bench_now_ns() + (int64_t)(0.2e9));
    int still_open = 0;
    for (int i = 0; i < g.subscribers; i++) {
        still_open += g_subs[i].state == ST_STREAM;
    }
    bool held = g_ready == g.subscribers && still_open == g.subscribers && g_closed_open == 0 &&
                ping_lost == 0 && fan_lost == 0;
    g_shutting = true;
    for (int i = 0; i < g_nsubs; i++) {
        sub_close(&g_subs[i], true);
    }
    for (int i = 0; i < g_npubs; i++) {
        pub_reset(&g_pubs[i]);
    }
    bench_sleep_until(bench_now_ns() + (int64_t)(g.settle_s * 1e9));
    long rss_closed = proc_status_kib("VmRSS");

    char rss_per[64], anon_per[64], idle_per[64], cpu[32], f1[32], f2[32], f3[32], f4[32], f5[32];
    if (rss_before >= 0 && rss_after >= 0 && g_ready > 0) {
        snprintf(rss_per, sizeof rss_per, "%.0f",
                 (double)(rss_after - rss_before) * 1024.0 / (double)g_ready);
        snprintf(anon_per, sizeof anon_per, "%.0f",
                 (double)(anon_after - anon_before) * 1024.0 / (double)g_ready);
        snprintf(idle_per, sizeof idle_per, "%.0f",
                 (double)(rss_idle - rss_before) * 1024.0 / (double)g_ready);
    } else {
        snprintf(rss_per, sizeof rss_per, "-");
        snprintf(anon_per, sizeof anon_per, "-");
        snprintf(idle_per, sizeof idle_per, "-");
    }
    if (idle_cpu_pct >= 0) {
        snprintf(cpu, sizeof cpu, "%.3f", idle_cpu_pct);
    } else {
        snprintf(cpu, sizeof cpu, "-");
    }
    printf(
        "RESULT tool=sse_bench target=roostd subscribers=%d agents=%d per_agent=%d sources=%d "
        "ready=%d failed=%d connect_s=%.2f subscribes_per_s=%.0f rss_before_kib=%ld "
        "rss_after_kib=%ld rss_idle_kib=%ld rss_closed_kib=%ld rss_per_sub_b=%s anon_per_sub_b=%s "
        "rss_idle_per_sub_b=%s "
        "idle_s=%.1f idle_cpu_pct=%s idle_heartbeats=%" PRIu64 " samples=%d ping_lost=%d "
        "ping_p50_ms=%.3f ping_p99_ms=%.3f ping_max_ms=%.3f publish_p50_ms=%.3f "
        "publish_p99_ms=%.3f ping_vs_reply_p50_ms=%.3f ping_vs_reply_p99_ms=%.3f "
        "hint_mismatch=%d fanouts=%d fanout_recipients=%d "
        "fanout_publishes=%d fanout_ms=%s fanout_max_ms=%s fanout_first_ms=%s "
        "fanout_reply_ms=%s fanout_spread_ms=%s fanout_lost=%d closed_unexpected=%d held=%d "
        "pings=%" PRIu64 " heartbeats=%" PRIu64 " errors=%" PRIu64 "\n",
        g.subscribers, g_agents, g.per_agent, sources, g_ready, g_failed, connect_s,
        connect_s > 0 ? g_ready / connect_s : 0, rss_before, rss_after, rss_idle, rss_closed,
        rss_per, anon_per, idle_per, idle_wall, cpu, idle_heartbeats, samples_done, ping_lost,
        ms(hist_quantile(lat, 0.5)), ms(hist_quantile(lat, 0.99)), ms(lat->max),
        ms(hist_quantile(rtt, 0.5)), ms(hist_quantile(rtt, 0.99)), ms(vs_p50), ms(vs_p99),
        hint_mismatch, fan_done, g_agents, n_fan_pubs, fmt_ms1(f1, sizeof f1, fan_med),
        fmt_ms1(f2, sizeof f2, fan_max), fmt_ms1(f3, sizeof f3, fan_first_med),
        fmt_ms1(f4, sizeof f4, fan_reply_med), fmt_ms1(f5, sizeof f5, fan_spread_med), fan_lost,
        g_closed_open, held ? 1 : 0, g_pings, g_heartbeats, g_errors);
    fflush(stdout);
    for (int i = 0; i < g_npubs; i++) {
        free(g_pubs[i].in);
        free(g_pubs[i].out);
    }
    free(g_pubs);
    free(g_subs);
    free(lat);
    free(rtt);
    free(vs_reply);
    free(fan);
    free(fan_first);
    free(fan_reply);
    free(fan_spread);
    free(g_auth_header);
    free(url);
    close(g_ep);
    return 0;
}
