/* SPDX-License-Identifier: MIT */
/* The listening socket, the accept pause and built-in TLS (see listener.h). */
#include "server/listener.h"

#include <arpa/inet.h>
#include <errno.h>
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
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/timeutil.h"
#include "server/config.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

struct listener {
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    struct event *accept_resume; /* re-enables accepting after EMFILE */
    SSL_CTX *tls_ctx;            /* built-in HTTPS (tls.cert_file), or NULL */
};

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
    int64_t now = time_now_ms();
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

/* ---- built-in TLS ---- */

/* evhttp asks for each accepted connection's bufferevent here: an OpenSSL one in the accepting
 * state (evhttp sets the socket on it afterwards). Everything above it, SSE included, is
 * unchanged. */
static struct bufferevent *tls_bevcb(struct event_base *base, void *arg)
{
    SSL_CTX *ctx = arg;
    SSL *ssl = SSL_new(ctx);
    if (ssl == NULL) {
        return NULL;
    }
    struct bufferevent *bev = bufferevent_openssl_socket_new(
        base, -1, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
    if (bev == NULL) {
        SSL_free(ssl);
        return NULL;
    }
    /* Clients that close without close_notify (most of them) are not errors. */
    bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
    return bev;
}

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
    evhttp_set_bevcb(l->http, tls_bevcb, ctx);
    return 0;
fail:
    SSL_CTX_free(ctx);
    return -1;
}

int listener_start(struct event_base *base, const struct config *cfg,
                   void (*on_request)(struct evhttp_request *req, void *arg), void *arg,
                   struct listener **out, char *base_url, size_t url_len, char *err, size_t errlen)
{
    *out = NULL;
    struct listener *l = calloc(1, sizeof *l);
    if (!l || !(l->http = evhttp_new(base))) {
        snprintf(err, errlen, "evhttp_new failed");
        free(l);
        return -1;
    }
    evhttp_set_max_body_size(l->http, (ev_ssize_t)cfg->limits_max_body_bytes);
    evhttp_set_max_headers_size(l->http, (ev_ssize_t)cfg->limits_max_header_bytes);
    evhttp_set_timeout(l->http, (int)cfg->http_timeout_s);
    evhttp_set_allowed_methods(l->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD |
                                            EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
                                            EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
    evhttp_set_default_content_type(l->http, "application/json");
    evhttp_set_gencb(l->http, on_request, arg);
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
        evhttp_free(l->http);
    }
    /* After the connections: each SSL holds a reference to the context anyway. */
    if (l->tls_ctx) {
        SSL_CTX_free(l->tls_ctx);
    }
    free(l);
}
