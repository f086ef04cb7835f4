/* SPDX-License-Identifier: MIT */
/* The raw SSE client of the integration tests (sse_client.h). */
#include "harness/sse_client.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/banned.h"

static void grow(char **buf, size_t *cap, size_t need)
{
    if (need + 1 <= *cap) {
        return;
    }
    size_t n = *cap ? *cap : 4096;
    while (n < need + 1) {
        n *= 2;
    }
    char *p = realloc(*buf, n);
    if (!p) {
        abort();
    }
    *buf = p;
    *cap = n;
}

void sse_close(struct sse *s)
{
    if (s->fd >= 0) {
        close(s->fd);
    }
    free(s->headers);
    free(s->raw);
    free(s->body);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

/* Connects and sends the request. rcvbuf > 0 shrinks the receive buffer first (a slow reader's
 * window fills quickly). extra: more header lines, each ending in \r\n, or NULL. */
int sse_connect(struct sse *s, const struct roostd *d, const char *path, const char *token,
                const char *extra, int rcvbuf)
{
    memset(s, 0, sizeof *s);
    s->fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s->fd < 0) {
        return -1;
    }
    if (rcvbuf > 0) {
        setsockopt(s->fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
    }
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d->port)};
    inet_pton(AF_INET, d->host, &sa.sin_addr);
    if (connect(s->fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        sse_close(s);
        return -1;
    }
    char *auth = token ? h_fmt("Authorization: Bearer %s\r\n", token) : h_fmt("%s", "");
    char *req = h_fmt("GET %s HTTP/1.1\r\nHost: %s:%d\r\nAccept: text/event-stream\r\n%s%s\r\n",
                      path, d->host, d->port, auth, extra ? extra : "");
    size_t len = strlen(req), off = 0;
    while (off < len) {
        ssize_t n = send(s->fd, req + off, len - off, MSG_NOSIGNAL);
        if (n <= 0) {
            break;
        }
        off += (size_t)n;
    }
    free(auth);
    free(req);
    fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) | O_NONBLOCK);
    return off == len ? 0 : -1;
}

/* A header's value (first match, case-insensitive name) into buf, or NULL. */
const char *sse_header(const struct sse *s, const char *name, char *buf, size_t len)
{
    size_t nlen = strlen(name);
    for (const char *p = s->headers ? strstr(s->headers, "\r\n") : NULL; p;
         p = strstr(p + 2, "\r\n")) {
        if (strncasecmp(p + 2, name, nlen) == 0 && p[2 + nlen] == ':') {
            const char *v = p + 2 + nlen + 1;
            v += strspn(v, " \t");
            size_t vlen = strcspn(v, "\r\n");
            snprintf(buf, len, "%.*s", (int)vlen, v);
            return buf;
        }
    }
    return NULL;
}

/* Decodes what can be decoded: the header block first, then chunks (or a plain body). */
static void sse_decode(struct sse *s)
{
    if (!s->headers) {
        const char *end = NULL;
        for (size_t i = 0; i + 4 <= s->raw_len; i++) {
            if (memcmp(s->raw + i, "\r\n\r\n", 4) == 0) {
                end = s->raw + i;
                break;
            }
        }
        if (!end) {
            return;
        }
        size_t hlen = (size_t)(end - s->raw);
        s->headers = malloc(hlen + 1);
        if (!s->headers) {
            abort();
        }
        memcpy(s->headers, s->raw, hlen);
        s->headers[hlen] = '\0';
        if (sscanf(s->headers, "HTTP/1.1 %d", &s->status) != 1) {
            s->status = -1;
        }
        char v[64];
        const char *te = sse_header(s, "Transfer-Encoding", v, sizeof v);
        s->chunked = te && strcasecmp(te, "chunked") == 0;
        const char *cl = sse_header(s, "Content-Length", v, sizeof v);
        s->content_length = cl ? (size_t)strtoul(cl, NULL, 10) : 0;
        memmove(s->raw, end + 4, s->raw_len - hlen - 4);
        s->raw_len -= hlen + 4;
    }
    if (!s->chunked) {
        grow(&s->body, &s->body_cap, s->body_len + s->raw_len);
        memcpy(s->body + s->body_len, s->raw, s->raw_len);
        s->body_len += s->raw_len;
        s->body[s->body_len] = '\0';
        s->raw_len = 0;
        return;
    }
    while (!s->ended && !s->bad_framing) {
        char *crlf = NULL;
        for (size_t i = 0; i + 1 < s->raw_len; i++) {
            if (s->raw[i] == '\r' && s->raw[i + 1] == '\n') {
                crlf = s->raw + i;
                break;
            }
        }
        if (!crlf) {
            if (s->raw_len > 64) {
                s->bad_framing = true;
            }
            return;
        }
        char *endp = NULL;
        unsigned long size = strtoul(s->raw, &endp, 16);
        if (endp == s->raw || (endp != crlf && *endp != ';')) {
            s->bad_framing = true;
            return;
        }
        size_t line = (size_t)(crlf - s->raw) + 2;
        if (size == 0) {
            /* Last chunk: no trailers, then the final CRLF. */
            if (s->raw_len < line + 2) {
                return;
            }
            if (memcmp(s->raw + line, "\r\n", 2) != 0) {
                s->bad_framing = true;
                return;
            }
            s->ended = true;
            memmove(s->raw, s->raw + line + 2, s->raw_len - line - 2);
            s->raw_len -= line + 2;
            return;
        }
        if (s->raw_len < line + size + 2) {
            return;
        }
        if (memcmp(s->raw + line + size, "\r\n", 2) != 0) {
            s->bad_framing = true;
            return;
        }
        grow(&s->body, &s->body_cap, s->body_len + size);
        memcpy(s->body + s->body_len, s->raw + line, size);
        s->body_len += size;
        s->body[s->body_len] = '\0';
        memmove(s->raw, s->raw + line + size + 2, s->raw_len - line - size - 2);
        s->raw_len -= line + size + 2;
    }
}

/* Waits up to timeout_ms for bytes and decodes them. >0 bytes read, 0 timeout, -1 closed. */
int sse_fill(struct sse *s, int timeout_ms)
{
    if (s->closed) {
        return -1;
    }
    struct pollfd p = {.fd = s->fd, .events = POLLIN};
    int r = poll(&p, 1, timeout_ms < 0 ? 0 : timeout_ms);
    if (r <= 0) {
        return 0;
    }
    grow(&s->raw, &s->raw_cap, s->raw_len + 65536);
    ssize_t n = recv(s->fd, s->raw + s->raw_len, 65536, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        return 0;
    }
    if (n <= 0) {
        s->closed = true;
        return -1;
    }
    s->raw_len += (size_t)n;
    s->n_bytes += (size_t)n;
    sse_decode(s);
    return (int)n;
}

/* Connects and reads the status line and headers (and, for an error, the whole body). Returns
 * the status, or -1. */
int sse_open(struct sse *s, const struct roostd *d, const char *path, const char *token,
             const char *extra, int rcvbuf)
{
    if (sse_connect(s, d, path, token, extra, rcvbuf) != 0) {
        return -1;
    }
    int64_t deadline = h_now_ms() + h_patience(10000);
    while (!s->headers && h_now_ms() < deadline) {
        if (sse_fill(s, (int)(deadline - h_now_ms())) < 0) {
            break;
        }
    }
    if (!s->headers) {
        return -1;
    }
    while (!s->chunked && s->body_len < s->content_length && h_now_ms() < deadline) {
        if (sse_fill(s, (int)(deadline - h_now_ms())) < 0) {
            break;
        }
    }
    return s->status;
}

/* Parses one complete event block at body_off (lines end in \n, a blank line ends the block).
 * Returns true and advances when there was one. */
static bool sse_parse_block(struct sse *s, struct sse_ev *ev)
{
    const char *start = s->body ? s->body + s->body_off : NULL;
    const char *end = start ? strstr(start, "\n\n") : NULL;
    if (!end) {
        return false;
    }
    memset(ev, 0, sizeof *ev);
    for (const char *line = start; line <= end;) {
        const char *nl = strchr(line, '\n');
        size_t llen = (size_t)(nl - line);
        if (llen > 0 && line[0] != ':') {
            const char *colon = memchr(line, ':', llen);
            size_t flen = colon ? (size_t)(colon - line) : llen;
            const char *v = colon ? colon + 1 : line + llen;
            if (colon && *v == ' ') {
                v++;
            }
            size_t vlen = (size_t)(line + llen - v);
            char val[256];
            snprintf(val, sizeof val, "%.*s", (int)vlen, v);
            if (flen == 2 && strncmp(line, "id", 2) == 0) {
                ev->has_id = true;
                ev->id = strtoll(val, NULL, 10);
            } else if (flen == 5 && strncmp(line, "event", 5) == 0) {
                snprintf(ev->event, sizeof ev->event, "%.31s", val);
            } else if (flen == 4 && strncmp(line, "data", 4) == 0) {
                ev->has_data = true;
                snprintf(ev->data, sizeof ev->data, "%s", val);
            } else if (flen == 5 && strncmp(line, "retry", 5) == 0) {
                ev->has_retry = true;
                ev->retry = strtoll(val, NULL, 10);
            } else {
                ev->unknown_field = true;
            }
        }
        line = nl + 1;
    }
    s->body_off = (size_t)(end + 2 - s->body);
    return true;
}

/* The next event block: 1, 0 when none came within timeout_ms, -1 when the stream ended. */
int sse_next(struct sse *s, struct sse_ev *ev, int timeout_ms)
{
    int64_t deadline = h_now_ms() + timeout_ms;
    for (;;) {
        if (sse_parse_block(s, ev)) {
            return 1;
        }
        if (s->ended || s->closed || s->bad_framing) {
            return -1;
        }
        int64_t left = deadline - h_now_ms();
        if (left <= 0) {
            return 0;
        }
        sse_fill(s, (int)left);
    }
}

/* The next event named `name`, skipping others (heartbeats); counts what was skipped. */
int sse_next_named(struct sse *s, const char *name, struct sse_ev *ev, int timeout_ms, int *skipped)
{
    int64_t deadline = h_now_ms() + timeout_ms;
    for (;;) {
        int64_t left = deadline - h_now_ms();
        int r = sse_next(s, ev, left > 0 ? (int)left : 0);
        if (r != 1 || strcmp(ev->event, name) == 0) {
            return r;
        }
        if (skipped) {
            (*skipped)++;
        }
    }
}

/* data is exactly {"cursor_hint":head}: a data-less ping, nothing else. */
bool data_is_hint(const struct sse_ev *ev, int64_t head)
{
    char want[64];
    snprintf(want, sizeof want, "{\"cursor_hint\":%lld}", (long long)head);
    json_t *j = json_loads(ev->data, 0, NULL);
    bool ok = ev->has_data && strcmp(ev->data, want) == 0 && json_is_object(j) &&
              json_object_size(j) == 1 &&
              json_integer_value(json_object_get(j, "cursor_hint")) == head;
    json_decref(j);
    return ok;
}

/* The next inbox_updated (heartbeats skipped) is the ping for `head`. */
bool expect_ping(struct sse *s, int64_t head, int timeout_ms)
{
    struct sse_ev ev;
    int r = sse_next_named(s, "inbox_updated", &ev, timeout_ms, NULL);
    if (r != 1) {
        fprintf(stderr, "  no inbox_updated for head %lld (r=%d)\n", (long long)head, r);
        return false;
    }
    bool ok = ev.has_id && ev.id == head && data_is_hint(&ev, head) && !ev.unknown_field;
    if (!ok) {
        fprintf(stderr, "  expected ping %lld, got id=%lld data=%s\n", (long long)head,
                (long long)ev.id, ev.data);
    }
    return ok;
}

/* Reads pings until the one for `head` (earlier heads skipped). */
bool wait_ping(struct sse *s, int64_t head, int timeout_ms)
{
    int64_t deadline = h_now_ms() + timeout_ms;
    struct sse_ev ev;
    while (h_now_ms() < deadline) {
        if (sse_next_named(s, "inbox_updated", &ev, (int)(deadline - h_now_ms()), NULL) != 1) {
            return false;
        }
        if (ev.id == head && data_is_hint(&ev, head)) {
            return true;
        }
    }
    return false;
}

/* Opens a stream and consumes retry: and the connect-time event (inbox_updated for head). */
bool subscribe(struct sse *s, const struct roostd *d, const char *tok, const char *agent,
               int64_t head)
{
    char *path = h_fmt("/api/v1/agents/%s/subscribe", agent);
    int st = sse_open(s, d, path, tok, NULL, 0);
    free(path);
    if (st != 200) {
        fprintf(stderr, "  subscribe %s: status %d\n", agent, st);
        return false;
    }
    struct sse_ev ev;
    return sse_next(s, &ev, 5000) == 1 && ev.has_retry && expect_ping(s, head, 5000);
}

void app_transaction_pings(struct sse *s, const struct roostd *n, const char *tok, int64_t head,
                           int (*exec)(void *db, const char *sql), void *db,
                           const struct app_tx_sql *q, int ping_ms, int quiet_ms)
{
    CHECK_EQ(exec(db, q->create), 0);
    CHECK_EQ(exec(db, q->begin), 0);
    CHECK_EQ(exec(db, q->insert1), 0);
    CHECK_EQ(exec(db, q->publish1), 0);
    CHECK_EQ(exec(db, q->commit), 0);
    CHECK(expect_ping(s, head + 1, ping_ms));
    long st = 0;
    json_t *page = h_inbox(n->http, tok, "x.a", head, 10, &st);
    CHECK_EQ(st, 200);
    json_t *ev = h_at(json_object_get(page, "events"), 0);
    CHECK(ev != NULL && h_int(json_object_get(ev, "payload"), "order") == 1);
    json_decref(page);

    CHECK_EQ(exec(db, q->begin), 0);
    CHECK_EQ(exec(db, q->insert2), 0);
    CHECK_EQ(exec(db, q->publish2), 0);
    CHECK_EQ(exec(db, q->rollback), 0);
    struct sse_ev e;
    int skipped = 0;
    CHECK_EQ(sse_next_named(s, "inbox_updated", &e, quiet_ms, &skipped), 0);
    page = h_inbox(n->http, tok, "x.a", head + 1, 10, &st);
    CHECK_EQ(json_array_size(json_object_get(page, "events")), 0);
    CHECK_EQ(h_int(page, "head"), head + 1);
    json_decref(page);
}
