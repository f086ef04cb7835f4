/* SPDX-License-Identifier: MIT */
/* The listening socket, the accept pause, built-in TLS, and each connection's guard: the
 * request-head deadline, the per-address connection cap and the raw check of every request head
 * (see listener.h). */
#include "server/listener.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/hash.h"
#include "common/ids.h"

#include "common/log.h"
#include "common/timeutil.h"
#include "server/config.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

struct conn;
struct addr_count;

struct listener {
    struct event_base *base;
    const struct config *cfg; /* the daemon's: reloadable limits are read at each use */
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    struct event *accept_resume; /* re-enables accepting after EMFILE */
    SSL_CTX *tls_ctx;            /* built-in HTTPS (tls.cert_file), or NULL */
    void (*on_request)(struct evhttp_request *req, const char *head_error, void *arg);
    void *arg;
    struct conn **conns; /* by socket descriptor: unique among open connections */
    size_t n_conns_cap;
    struct addr_count **addrs;   /* ADDR_BUCKETS chains: open connections per client address */
    uint64_t addr_salt;          /* keys the address hash */
    int64_t auto_conns_per_addr; /* http.max_conns_per_addr = -1: from the descriptor limit */
};

/* ---- connections ----
 *
 * evhttp 2.1 has no hook between accept and its parser, so every connection's bufferevent is
 * made here (evhttp_set_bevcb), with a callback on its input buffer: it runs when bytes are
 * appended, before evhttp's read callback parses them, so the raw request head is seen as it
 * arrives. It starts the head deadline at the head's first byte (at accept for the first
 * request), stops it at the empty line that ends the head, and notes a NUL byte or a malformed
 * HTTP-version, which evhttp would truncate or accept (it keeps C strings, and reads the version
 * with sscanf). The router then refuses that request (400). Bytes after a head (the body and any
 * pipelined request) are looked at when the request is dispatched: evhttp has consumed exactly
 * that request by then, so what is left in the input buffer begins the next head.
 *
 * A connection's state is freed by evhttp's close callback, which this file owns: others set
 * theirs through listener_set_closecb() and it is called first. */

enum scan_state { SCAN_IDLE, SCAN_HEAD, SCAN_DONE };

struct conn {
    struct listener *l;
    struct bufferevent *bev;
    struct evhttp_connection *evcon; /* NULL until attached */
    struct event *timer;             /* attach (once, at accept), then the head deadline */
    struct evbuffer_cb_entry *input_cb;
    struct addr_count *addr; /* counted against http.max_conns_per_addr, or NULL */
    evutil_socket_t fd;
    void (*user_closecb)(struct evhttp_connection *evcon, void *arg);
    void *user_closecb_arg;
    enum scan_state state;
    bool in_request_line;
    bool line_has_bytes; /* the current line has a byte other than CR */
    char tail[10];       /* the request line's last bytes (its HTTP-version) */
    size_t tail_len;
    const char *bad; /* why the current head is refused, or NULL */
};

#define ADDR_BUCKETS 4096

struct addr_count {
    struct addr_count *next;
    unsigned char key[16]; /* IPv6, or IPv4-mapped */
    size_t n;
};

/* The only listener of the process (listener_set_closecb finds connections through it). */
static struct listener *conn_owner;

/* accept(2) failing with EMFILE/ENFILE leaves the connection in the backlog, so the listener would
 * fire again at once and spin the loop: pause accepting for a moment instead, and say so (at most
 * once a second). Connections already open are unaffected; new ones wait in the backlog. */
#define ACCEPT_PAUSE_MS 100

static void accept_resume(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct listener *l = arg;
    if (l->bound != NULL) {
        evconnlistener_enable(evhttp_bound_socket_get_listener(l->bound));
    }
}

/* The listener's callback argument is evhttp's own, so the error callback finds its owner here;
 * roostd runs one listener per process. */
static struct listener *accept_owner;

static void accept_failed(struct evconnlistener *listener, void *arg)
{
    (void)arg;
    int err = EVUTIL_SOCKET_ERROR();
    struct listener *l = accept_owner;
    static int64_t last_warn_ms;
    int64_t now = time_mono_ms();
    if (now - last_warn_ms >= 1000) {
        last_warn_ms = now;
        log_warn("accept failed, pausing new connections", "error=\"%s\" pause_ms=%d",
                 evutil_socket_error_to_string(err), ACCEPT_PAUSE_MS);
    }
    if (l != NULL && l->accept_resume != NULL) {
        evconnlistener_disable(listener);
        struct timeval tv = {0, ACCEPT_PAUSE_MS * 1000};
        evtimer_add(l->accept_resume, &tv);
    }
}

static int open_listener(const char *listen_spec, evutil_socket_t *fd_out, char *host_out,
                         size_t host_len, int *port_out, char *err, size_t errlen)
{
    char host[256];
    const char *colon = strrchr(listen_spec, ':');
    if (!colon || colon == listen_spec || (size_t)(colon - listen_spec) >= sizeof host) {
        snprintf(err, errlen, "listen: expected HOST:PORT, got '%s'", listen_spec);
        return -1;
    }
    memcpy(host, listen_spec, (size_t)(colon - listen_spec));
    host[colon - listen_spec] = '\0';
    if (host[0] == '[' && host[strlen(host) - 1] == ']') {
        memmove(host, host + 1, strlen(host) - 2);
        host[strlen(host) - 2] = '\0';
    }
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_PASSIVE | AI_NUMERICSERV};
    struct addrinfo *res = NULL;
    int gai = getaddrinfo(host, colon + 1, &hints, &res);
    if (gai != 0) {
        snprintf(err, errlen, "listen: cannot resolve '%s': %s", listen_spec, gai_strerror(gai));
        return -1;
    }
    evutil_socket_t fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
        bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, 4096) != 0 ||
        evutil_make_socket_nonblocking(fd) != 0) {
        snprintf(err, errlen, "listen on %s: %s", listen_spec, strerror(errno));
        if (fd >= 0) {
            close(fd);
        }
        freeaddrinfo(res);
        return -1;
    }
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    int port = 0;
    if (ss.ss_family == AF_INET) {
        port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
    } else if (ss.ss_family == AF_INET6) {
        port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
    }
    /* A wildcard address is reached through loopback in the printed URL. */
    if (strcmp(host, "0.0.0.0") == 0 || host[0] == '\0') {
        snprintf(host_out, host_len, "127.0.0.1");
    } else if (strcmp(host, "::") == 0) {
        snprintf(host_out, host_len, "[::1]");
    } else if (strchr(host, ':')) {
        snprintf(host_out, host_len, "[%s]", host);
    } else {
        snprintf(host_out, host_len, "%.*s", (int)(host_len - 1), host);
    }
    *fd_out = fd;
    *port_out = port;
    return 0;
}

static bool addr_key(evutil_socket_t fd, unsigned char key[16])
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    if (getpeername(fd, (struct sockaddr *)&ss, &sl) != 0) {
        return false;
    }
    memset(key, 0, 16);
    if (ss.ss_family == AF_INET) {
        key[10] = key[11] = 0xff;
        memcpy(key + 12, &((struct sockaddr_in *)&ss)->sin_addr, 4);
        return true;
    }
    if (ss.ss_family == AF_INET6) {
        memcpy(key, &((struct sockaddr_in6 *)&ss)->sin6_addr, 16);
        return true;
    }
    return false;
}

/* Client addresses are chosen by anyone who connects: the salt keeps them from aiming at one
 * chain. */
static uint32_t addr_hash(const struct listener *l, const unsigned char key[16])
{
    return (uint32_t)(hash_fnv1a(HASH_FNV1A_INIT ^ l->addr_salt, key, 16) % ADDR_BUCKETS);
}

static struct addr_count *addr_get(struct listener *l, const unsigned char key[16])
{
    uint32_t b = addr_hash(l, key);
    for (struct addr_count *a = l->addrs[b]; a; a = a->next) {
        if (memcmp(a->key, key, 16) == 0) {
            return a;
        }
    }
    struct addr_count *a = calloc(1, sizeof *a);
    if (a) {
        memcpy(a->key, key, 16);
        a->next = l->addrs[b];
        l->addrs[b] = a;
    }
    return a;
}

static void addr_release(struct listener *l, struct addr_count *a)
{
    if (--a->n > 0) {
        return;
    }
    for (struct addr_count **p = &l->addrs[addr_hash(l, a->key)]; *p; p = &(*p)->next) {
        if (*p == a) {
            *p = a->next;
            free(a);
            return;
        }
    }
}

static struct conn *conn_of(struct listener *l, struct evhttp_connection *evcon)
{
    struct bufferevent *bev = evcon ? evhttp_connection_get_bufferevent(evcon) : NULL;
    evutil_socket_t fd = bev ? bufferevent_getfd(bev) : -1;
    if (l == NULL || fd < 0 || (size_t)fd >= l->n_conns_cap) {
        return NULL;
    }
    struct conn *c = l->conns[fd];
    return c != NULL && c->evcon == evcon ? c : NULL;
}

static void conn_free(struct conn *c)
{
    struct listener *l = c->l;
    if (c->fd >= 0 && (size_t)c->fd < l->n_conns_cap && l->conns[c->fd] == c) {
        l->conns[c->fd] = NULL;
    }
    if (c->addr) {
        addr_release(l, c->addr);
    }
    if (c->timer) {
        event_free(c->timer);
    }
    if (c->input_cb) {
        evbuffer_remove_cb_entry(bufferevent_get_input(c->bev), c->input_cb);
    }
    free(c);
}

/* evhttp's close callback of every connection: the owner's callback, if any, then ours. */
static void conn_closed(struct evhttp_connection *evcon, void *arg)
{
    struct conn *c = arg;
    if (c->user_closecb) {
        c->user_closecb(evcon, c->user_closecb_arg);
    }
    conn_free(c);
}

void listener_set_closecb(struct evhttp_connection *evcon,
                          void (*cb)(struct evhttp_connection *evcon, void *arg), void *arg)
{
    struct conn *c = conn_of(conn_owner, evcon);
    if (c == NULL) {
        evhttp_connection_set_closecb(evcon, cb, arg);
        return;
    }
    c->user_closecb = cb;
    c->user_closecb_arg = arg;
}

/* Ends a connection without touching evhttp's objects: a request of it may be in a handler's
 * hands, and only evhttp's own failure path (EOF on the socket) lets go of it safely. */
static void conn_shutdown(struct conn *c)
{
    shutdown(c->fd, SHUT_RDWR);
}

static void head_timeout(struct conn *c)
{
    static int64_t last_log_ms;
    int64_t now = time_mono_ms();
    if (now - last_log_ms >= 1000) {
        last_log_ms = now;
        log_info("connection closed: request head too slow", "header_timeout_s=%lld",
                 (long long)c->l->cfg->http_header_timeout_s);
    }
    conn_shutdown(c);
}

static void head_start(struct conn *c)
{
    c->state = SCAN_HEAD;
    c->in_request_line = true;
    c->line_has_bytes = false;
    c->tail_len = 0;
    c->bad = NULL;
    struct timeval tv = {(time_t)c->l->cfg->http_header_timeout_s, 0};
    evtimer_add(c->timer, &tv);
}

/* RFC 9112 2.3: HTTP-version = "HTTP/" DIGIT "." DIGIT, after one space. */
static bool version_ok(const char *tail, size_t n)
{
    if (n > 0 && tail[n - 1] == '\r') {
        n--;
    }
    if (n < 9) {
        return false;
    }
    const char *v = tail + n - 9;
    return memcmp(v, " HTTP/", 6) == 0 && v[6] >= '0' && v[6] <= '9' && v[7] == '.' &&
           v[8] >= '0' && v[8] <= '9';
}

/* Keeps the last bytes of the request line: `seg` (n bytes, no LF) follows what `tail` holds. */
static void tail_append(struct conn *c, const unsigned char *seg, size_t n)
{
    if (n >= sizeof c->tail) {
        memcpy(c->tail, seg + n - sizeof c->tail, sizeof c->tail);
        c->tail_len = sizeof c->tail;
        return;
    }
    size_t keep = c->tail_len < sizeof c->tail - n ? c->tail_len : sizeof c->tail - n;
    memmove(c->tail, c->tail + c->tail_len - keep, keep);
    memcpy(c->tail + keep, seg, n);
    c->tail_len = keep + n;
}

/* Line by line rather than byte by byte (memchr finds the LF and any NUL): the head is scanned
 * for every request, and this is the same verdict for a tenth of the instructions. */
static void scan_bytes(struct conn *c, const unsigned char *p, size_t n)
{
    size_t i = 0;
    while (i < n && c->state != SCAN_DONE) {
        if (c->state == SCAN_IDLE) {
            head_start(c);
        }
        const unsigned char *lf = memchr(p + i, '\n', n - i);
        size_t end = lf ? (size_t)(lf - p) : n; /* [i, end) is the rest of a line, no LF */
        if (end > i) {
            if (c->bad == NULL && memchr(p + i, '\0', end - i) != NULL) {
                c->bad = "NUL byte in the request head";
            }
            for (size_t j = i; j < end && !c->line_has_bytes; j++) {
                c->line_has_bytes = p[j] != '\r';
            }
            if (c->in_request_line) {
                tail_append(c, p + i, end - i);
            }
        }
        if (lf == NULL) {
            return;
        }
        i = end + 1;
        if (c->in_request_line) {
            if (c->line_has_bytes) { /* empty lines before the request line are ignored */
                c->in_request_line = false;
                if (!version_ok(c->tail, c->tail_len) && c->bad == NULL) {
                    c->bad = "malformed HTTP-version in the request line";
                }
            }
            c->tail_len = 0;
        } else if (!c->line_has_bytes) {
            c->state = SCAN_DONE; /* the empty line: the head is complete */
            evtimer_del(c->timer);
        }
        c->line_has_bytes = false;
    }
}

/* Scans the bytes of `buf` from offset `from` on. */
static void scan_buffer(struct conn *c, struct evbuffer *buf, size_t from)
{
    struct evbuffer_ptr pos;
    if (c->state == SCAN_DONE || evbuffer_ptr_set(buf, &pos, from, EVBUFFER_PTR_SET) != 0) {
        return;
    }
    size_t left = evbuffer_get_length(buf) - from;
    while (left > 0 && c->state != SCAN_DONE) {
        struct evbuffer_iovec v[4];
        int n = evbuffer_peek(buf, (ev_ssize_t)left, &pos, v, 4);
        if (n <= 0) {
            return;
        }
        for (int i = 0; i < n && i < 4 && left > 0; i++) {
            size_t len = v[i].iov_len < left ? v[i].iov_len : left;
            scan_bytes(c, v[i].iov_base, len);
            left -= len;
            if (evbuffer_ptr_set(buf, &pos, len, EVBUFFER_PTR_ADD) != 0) {
                return;
            }
        }
    }
}

static void on_input(struct evbuffer *buf, const struct evbuffer_cb_info *info, void *arg)
{
    struct conn *c = arg;
    size_t len = evbuffer_get_length(buf);
    if (info->n_added > 0 && info->n_added <= len) {
        scan_buffer(c, buf, len - info->n_added);
    }
}

/* Runs once, right after evhttp made the connection (activated from the bufferevent callback,
 * so before the loop can see any I/O of it): installs the close callback and applies the
 * per-address cap. The extra reference taken at creation kept the bufferevent alive until now. */
static void conn_attach(struct conn *c)
{
    struct listener *l = c->l;
    bufferevent_event_cb eventcb = NULL;
    void *cbarg = NULL;
    bufferevent_getcb(c->bev, NULL, NULL, &eventcb, &cbarg);
    c->fd = bufferevent_getfd(c->bev);
    bool alive = eventcb != NULL && cbarg != NULL && c->fd >= 0 &&
                 evhttp_connection_get_bufferevent(cbarg) == c->bev;
    struct bufferevent *bev = c->bev;
    if (!alive) {
        c->fd = -1;
        conn_free(c);
        bufferevent_decref(bev);
        return;
    }
    c->evcon = cbarg;
    if ((size_t)c->fd >= l->n_conns_cap) {
        size_t cap = l->n_conns_cap ? l->n_conns_cap : 1024;
        while (cap <= (size_t)c->fd) {
            cap *= 2;
        }
        struct conn **grown = realloc(l->conns, cap * sizeof *grown);
        if (grown == NULL) {
            c->evcon = NULL;
            conn_free(c);
            bufferevent_decref(bev);
            return; /* evhttp serves it unguarded; out of memory is logged elsewhere */
        }
        memset(grown + l->n_conns_cap, 0, (cap - l->n_conns_cap) * sizeof *grown);
        l->conns = grown;
        l->n_conns_cap = cap;
    }
    struct conn *stale = l->conns[c->fd];
    if (stale != NULL) {
        /* Its connection ended without a close callback (evhttp skips it for a connection it
         * considers disconnected): forget it, so its deadline can never hit this descriptor.
         * Its bufferevent is gone, and with it the input callback. */
        stale->input_cb = NULL;
        stale->fd = -1;
        conn_free(stale);
    }
    l->conns[c->fd] = c;
    evhttp_connection_set_closecb(c->evcon, conn_closed, c);
    unsigned char key[16];
    int64_t cap = l->cfg->http_max_conns_per_addr;
    cap = cap < 0 ? l->auto_conns_per_addr : cap;
    struct addr_count *a = addr_key(c->fd, key) ? addr_get(l, key) : NULL;
    if (a != NULL && cap > 0 && (int64_t)a->n >= cap) {
        static int64_t last_log_ms;
        int64_t now = time_mono_ms();
        if (now - last_log_ms >= 1000) {
            last_log_ms = now;
            log_warn("connection refused: too many from one address",
                     "http_max_conns_per_addr=%lld", (long long)cap);
        }
        if (l->tls_ctx == NULL) {
            static const char busy[] = "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n"
                                       "Retry-After: 1\r\nContent-Length: 0\r\n\r\n";
            (void)send(c->fd, busy, sizeof busy - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        }
        conn_shutdown(c);
    } else {
        if (a != NULL) {
            a->n++;
            c->addr = a;
        }
        head_start(c); /* the first head's deadline runs from accept */
    }
    bufferevent_decref(bev);
}

/* The connection's one timer: first the attach step (activated at creation), then the head
 * deadline. */
static void conn_timer(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct conn *c = arg;
    if (c->evcon == NULL) {
        conn_attach(c);
    } else {
        head_timeout(c);
    }
}

/* evhttp asks for each accepted connection's bufferevent here (the socket is set on it
 * afterwards). */
static struct bufferevent *conn_bevcb(struct event_base *base, void *arg)
{
    struct listener *l = arg;
    struct bufferevent *bev = NULL;
    if (l->tls_ctx != NULL) {
        SSL *ssl = SSL_new(l->tls_ctx);
        if (ssl == NULL) {
            return NULL;
        }
        bev = bufferevent_openssl_socket_new(base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING,
                                             BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
        if (bev == NULL) {
            SSL_free(ssl);
            return NULL;
        }
        /* Clients that close without close_notify (most of them) are not errors. */
        bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    } else {
        bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE); /* as evhttp makes it */
        if (bev == NULL) {
            return NULL;
        }
    }
    struct conn *c = calloc(1, sizeof *c);
    if (c == NULL || (c->timer = event_new(base, -1, 0, conn_timer, c)) == NULL ||
        (c->input_cb = evbuffer_add_cb(bufferevent_get_input(bev), on_input, c)) == NULL) {
        if (c != NULL && c->timer != NULL) {
            event_free(c->timer);
        }
        free(c);
        return bev; /* served unguarded rather than refused */
    }
    c->l = l;
    c->bev = bev;
    c->fd = -1;
    c->state = SCAN_IDLE;
    bufferevent_incref(bev);
    event_active(c->timer, EV_TIMEOUT, 0);
    return bev;
}

/* Every request evhttp parsed: the verdict on its raw head goes with it to the router; then the
 * scan starts over on what follows it. */
static void conn_request(struct evhttp_request *req, void *arg)
{
    struct listener *l = arg;
    struct evhttp_connection *evcon = evhttp_request_get_connection(req);
    struct conn *c = conn_of(l, evcon);
    const char *bad = NULL;
    if (c != NULL) {
        bad = c->bad;
        if (bad == NULL && c->state != SCAN_DONE) {
            bad = "incomplete request head"; /* evhttp parsed a head we did not see end */
        }
        c->state = SCAN_IDLE;
        c->bad = NULL;
        evtimer_del(c->timer);
        scan_buffer(c, bufferevent_get_input(evhttp_connection_get_bufferevent(evcon)), 0);
    }
    l->on_request(req, bad, l->arg);
}

/* ---- built-in TLS ---- */

static void tls_error(char *err, size_t errlen, const char *what, const char *file)
{
    unsigned long e = ERR_get_error();
    char detail[256];
    ERR_error_string_n(e, detail, sizeof detail);
    ERR_clear_error();
    snprintf(err, errlen, "%s %s: %s", what, file, e ? detail : "failed");
}

/* TLS 1.2+ with the library's default ciphers; the certificate chain and key come from PEM files
 * read once at start (a renewed certificate needs a restart). */
static int tls_setup(struct listener *l, const struct config *cfg, char *err, size_t errlen)
{
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        snprintf(err, errlen, "tls: cannot create the TLS context");
        return -1;
    }
    SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
    SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_use_certificate_chain_file(ctx, cfg->tls_cert_file) != 1) {
        tls_error(err, errlen, "tls.cert_file", cfg->tls_cert_file);
        goto fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, cfg->tls_key_file, SSL_FILETYPE_PEM) != 1) {
        tls_error(err, errlen, "tls.key_file", cfg->tls_key_file);
        goto fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        snprintf(err, errlen, "tls.key_file %s does not match tls.cert_file %s", cfg->tls_key_file,
                 cfg->tls_cert_file);
        goto fail;
    }
    l->tls_ctx = ctx;
    return 0;
fail:
    SSL_CTX_free(ctx);
    return -1;
}

int64_t listener_auto_conns_per_addr(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) {
        return 1024;
    }
    int64_t cap = (int64_t)(rl.rlim_cur / 4);
    return cap > 0 ? cap : 1;
}

int listener_start(struct event_base *base, const struct config *cfg,
                   void (*on_request)(struct evhttp_request *req, const char *head_error,
                                      void *arg),
                   void *arg, struct listener **out, char *base_url, size_t url_len, char *err,
                   size_t errlen)
{
    *out = NULL;
    struct listener *l = calloc(1, sizeof *l);
    if (!l || !(l->http = evhttp_new(base)) ||
        !(l->addrs = calloc(ADDR_BUCKETS, sizeof *l->addrs))) {
        snprintf(err, errlen, "evhttp_new failed");
        if (l && l->http) {
            evhttp_free(l->http);
        }
        free(l);
        return -1;
    }
    l->base = base;
    l->cfg = cfg;
    l->auto_conns_per_addr = listener_auto_conns_per_addr();
    l->on_request = on_request;
    l->arg = arg;
    if (ids_random(&l->addr_salt, sizeof l->addr_salt) != 0) {
        l->addr_salt = (uint64_t)time_now_ms();
    }
    evhttp_set_max_body_size(l->http, (ev_ssize_t)cfg->limits_max_body_bytes);
    evhttp_set_max_headers_size(l->http, (ev_ssize_t)cfg->limits_max_header_bytes);
    evhttp_set_timeout(l->http, (int)cfg->http_timeout_s);
    evhttp_set_allowed_methods(l->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
    evhttp_set_default_content_type(l->http, "application/json");
    evhttp_set_gencb(l->http, conn_request, l);
    evhttp_set_bevcb(l->http, conn_bevcb, l);
    bool tls = cfg->tls_cert_file[0] != '\0';
    if (tls && tls_setup(l, cfg, err, errlen) != 0) {
        goto fail;
    }
    evutil_socket_t fd;
    char host[48];
    int port;
    if (open_listener(cfg->listen, &fd, host, sizeof host, &port, err, errlen) != 0) {
        goto fail;
    }
    l->bound = evhttp_accept_socket_with_handle(l->http, fd);
    if (!l->bound) {
        close(fd);
        snprintf(err, errlen, "evhttp_accept_socket failed");
        goto fail;
    }
    l->accept_resume = evtimer_new(base, accept_resume, l);
    if (l->accept_resume == NULL) {
        snprintf(err, errlen, "evtimer_new failed");
        goto fail;
    }
    accept_owner = l;
    conn_owner = l;
    evconnlistener_set_error_cb(evhttp_bound_socket_get_listener(l->bound), accept_failed);
    snprintf(base_url, url_len, "%s://%s:%d", tls ? "https" : "http", host, port);
    *out = l;
    return 0;
fail:
    listener_free(l);
    return -1;
}

void listener_stop_accepting(struct listener *l)
{
    if (l == NULL) {
        return;
    }
    if (l->accept_resume) {
        event_free(l->accept_resume);
        l->accept_resume = NULL;
    }
    if (accept_owner == l) {
        accept_owner = NULL;
    }
    if (l->bound) {
        evhttp_del_accept_socket(l->http, l->bound);
        l->bound = NULL;
    }
}

void listener_free(struct listener *l)
{
    if (l == NULL) {
        return;
    }
    listener_stop_accepting(l);
    if (l->http) {
        evhttp_free(l->http); /* runs every connection's close callback: frees their states */
    }
    if (conn_owner == l) {
        conn_owner = NULL;
    }
    for (size_t b = 0; l->addrs && b < ADDR_BUCKETS; b++) {
        while (l->addrs[b]) {
            struct addr_count *a = l->addrs[b];
            l->addrs[b] = a->next;
            free(a);
        }
    }
    free(l->addrs);
    free(l->conns);
    /* After the connections: each SSL holds a reference to the context anyway. */
    if (l->tls_ctx) {
        SSL_CTX_free(l->tls_ctx);
    }
    free(l);
}
