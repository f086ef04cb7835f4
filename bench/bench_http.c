/* SPDX-License-Identifier: MIT */
/* See bench_http.h. */
#include "bench_http.h"

#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "proto/jwt.h"

#include "common/banned.h"

char *bench_read_line(const char *path)
{
    FILE *fp = fopen(path, "r");
    if (!fp) {
        return NULL;
    }
    char line[512];
    char *r = fgets(line, sizeof line, fp);
    fclose(fp);
    if (!r) {
        return NULL;
    }
    line[strcspn(line, "\r\n")] = '\0';
    return strdup(line);
}

int bench_parse_url(const char *url, char *host, size_t host_len, char *port, size_t port_len,
                    struct sockaddr_in *addr)
{
    /* Any scheme: the tools pick the protocol by it (roost_load: http, redis, beanstalk). */
    const char *p = strstr(url, "://");
    if (!p || p == url) {
        return -1;
    }
    p += 3;
    const char *colon = strrchr(p, ':');
    if (!colon || colon == p || (size_t)(colon - p) >= host_len) {
        return -1;
    }
    memcpy(host, p, (size_t)(colon - p));
    host[colon - p] = '\0';
    size_t plen = strcspn(colon + 1, "/");
    if (plen == 0 || plen >= port_len) {
        return -1;
    }
    memcpy(port, colon + 1, plen);
    port[plen] = '\0';
    if (!addr) {
        return 0;
    }
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(host, port, &hints, &res) != 0 || !res) {
        return -1;
    }
    memcpy(addr, res->ai_addr, sizeof *addr);
    freeaddrinfo(res);
    return 0;
}

char *bench_mint_token(const char *tool, const char *key_file, const char *sub, const char *scope)
{
    EVP_PKEY *key = NULL;
    if (key_file) {
        FILE *fp = fopen(key_file, "r");
        if (!fp) {
            fprintf(stderr, "%s: %s: %s\n", tool, key_file, strerror(errno));
            return NULL;
        }
        key = PEM_read_PrivateKey(fp, NULL, NULL, NULL);
        fclose(fp);
    } else {
        key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    }
    if (!key) {
        ERR_print_errors_fp(stderr);
        fprintf(stderr, "%s: no Ed25519 key\n", tool);
        return NULL;
    }
    json_int_t now = (json_int_t)time(NULL);
    json_t *claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "tenant", "bench", "sub", sub, "scope",
                               scope, "iat", now, "exp", now + 86400);
    char *token = NULL;
    if (!claims || jwt_sign_eddsa(claims, key, NULL, &token) != 0) {
        token = NULL;
        fprintf(stderr, "%s: cannot sign the token\n", tool);
    }
    json_decref(claims);
    EVP_PKEY_free(key);
    return token;
}

char *bench_auth_header(const char *tool, const char *key_file, const char *sub, const char *scope)
{
    char *token = bench_mint_token(tool, key_file, sub, scope);
    if (!token) {
        return NULL;
    }
    size_t len = strlen(token) + 40;
    char *header = malloc(len);
    if (header) {
        snprintf(header, len, "Authorization: Bearer %s\r\n", token);
    }
    free(token);
    return header;
}

/* ---- a minimal keep-alive HTTP/1.1 client ---- */

static int grow(char **buf, size_t *cap, size_t need)
{
    if (need <= *cap) {
        return 0;
    }
    size_t n = *cap ? *cap : 4096;
    while (n < need) {
        n *= 2;
    }
    char *p = realloc(*buf, n);
    if (!p) {
        return -1;
    }
    *buf = p;
    *cap = n;
    return 0;
}

void bench_conn_close(struct bench_conn *c)
{
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
}

static int conn_connect(struct bench_conn *c)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    if (getaddrinfo(c->node->host, c->node->port, &hints, &res) != 0) {
        errno = EHOSTUNREACH;
        return -1;
    }
    int fd = -1;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            continue;
        }
        if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
            break;
        }
        close(fd);
        fd = -1;
    }
    freeaddrinfo(res);
    if (fd < 0) {
        return -1; /* errno tells why; the caller reports it */
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct timeval tv = {.tv_sec = c->timeout_s, .tv_usec = 0};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    c->fd = fd;
    return 0;
}

static const char *find_crlfcrlf(const char *p, size_t len)
{
    for (size_t i = 0; i + 3 < len; i++) {
        if (p[i] == '\r' && p[i + 1] == '\n' && p[i + 2] == '\r' && p[i + 3] == '\n') {
            return p + i;
        }
    }
    return NULL;
}

int bench_http_post(struct bench_conn *c, const char *path, const char *body, size_t body_len,
                    int *status, const char **resp, size_t *resp_len)
{
    if (c->fd < 0 && conn_connect(c) != 0) {
        return -1;
    }
    const char *host_header = c->node->host_header;
    size_t need = strlen(path) + strlen(host_header) + strlen(c->auth_header) + body_len + 200;
    if (grow(&c->req, &c->req_cap, need) != 0) {
        return -1;
    }
    int n = snprintf(c->req, c->req_cap,
                     "POST %s HTTP/1.1\r\n%s%sContent-Type: application/json\r\n"
                     "Content-Length: %zu\r\n\r\n",
                     path, host_header, c->auth_header, body_len);
    if (n < 0 || (size_t)n + body_len > c->req_cap) {
        return -1;
    }
    memcpy(c->req + n, body, body_len);
    size_t total = (size_t)n + body_len, sent = 0;
    while (sent < total) {
        ssize_t w = send(c->fd, c->req + sent, total - sent, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            bench_conn_close(c);
            return -1;
        }
        sent += (size_t)w;
    }

    size_t len = 0, header_len = 0, content_len = 0;
    bool have_header = false, close_after = false;
    for (;;) {
        if (have_header && len >= header_len + content_len) {
            break;
        }
        if (grow(&c->buf, &c->cap, len + 4096 + (have_header ? header_len + content_len : 0)) !=
            0) {
            bench_conn_close(c);
            return -1;
        }
        ssize_t r = recv(c->fd, c->buf + len, c->cap - len - 1, 0);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            if (r == 0) {
                errno = ECONNRESET; /* closed by the server */
            }
            bench_conn_close(c);
            return -1;
        }
        len += (size_t)r;
        if (have_header) {
            continue;
        }
        const char *end = find_crlfcrlf(c->buf, len);
        if (!end) {
            continue;
        }
        have_header = true;
        header_len = (size_t)(end - c->buf) + 4;
        c->buf[header_len - 2] = '\0'; /* header block as a string, for parsing */
        if (strncmp(c->buf, "HTTP/1.", 7) != 0 || strlen(c->buf) < 12) {
            bench_conn_close(c);
            return -1;
        }
        *status = (int)strtol(c->buf + 9, NULL, 10);
        bool have_length = false;
        for (char *line = strstr(c->buf, "\r\n"); line && line[2];
             line = strstr(line + 2, "\r\n")) {
            char *h = line + 2;
            if (strncasecmp(h, "Content-Length:", 15) == 0) {
                content_len = (size_t)strtoull(h + 15, NULL, 10);
                have_length = true;
            } else if (strncasecmp(h, "Connection:", 11) == 0) {
                const char *v = h + 11;
                while (*v == ' ') {
                    v++;
                }
                close_after = strncasecmp(v, "close", 5) == 0;
            } else if (strncasecmp(h, "Transfer-Encoding:", 18) == 0) {
                fprintf(stderr, "bench: chunked responses are not supported\n");
                bench_conn_close(c);
                return -1;
            }
        }
        if (!have_length) {
            fprintf(stderr, "bench: response without Content-Length\n");
            bench_conn_close(c);
            return -1;
        }
    }
    c->buf[header_len + content_len] = '\0';
    *resp = c->buf + header_len;
    *resp_len = content_len;
    if (close_after) {
        bench_conn_close(c);
    }
    return 0;
}

/* ---- the same connection used raw, for the line protocols of Redis and beanstalkd ---- */

int bench_conn_send(struct bench_conn *c, const char *buf, size_t len)
{
    if (c->fd < 0) {
        c->rpos = c->rlen = 0;
        if (conn_connect(c) != 0) {
            return -1;
        }
    }
    for (size_t sent = 0; sent < len;) {
        ssize_t w = send(c->fd, buf + sent, len - sent, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            bench_conn_close(c);
            return -1;
        }
        sent += (size_t)w;
    }
    return 0;
}

/* Reads until at least `need` unread bytes are buffered (one byte more for a NUL). */
static int fill(struct bench_conn *c, size_t need)
{
    if (c->rpos > 0 && c->rpos == c->rlen) {
        c->rpos = c->rlen = 0;
    }
    while (c->rlen - c->rpos < need) {
        if (c->rpos > 0) { /* keep the unread bytes at the start */
            memmove(c->buf, c->buf + c->rpos, c->rlen - c->rpos);
            c->rlen -= c->rpos;
            c->rpos = 0;
        }
        if (grow(&c->buf, &c->cap, need + 4096) != 0) {
            bench_conn_close(c);
            return -1;
        }
        ssize_t r = recv(c->fd, c->buf + c->rlen, c->cap - c->rlen - 1, 0);
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            if (r == 0) {
                errno = ECONNRESET;
            }
            bench_conn_close(c);
            return -1;
        }
        c->rlen += (size_t)r;
    }
    return 0;
}

int bench_conn_line(struct bench_conn *c, char **line, size_t *len)
{
    if (c->fd < 0) {
        return -1;
    }
    size_t scanned = 0;
    for (;;) {
        char *p = c->buf + c->rpos;
        size_t have = c->rlen - c->rpos;
        for (size_t i = scanned; i + 1 < have; i++) {
            if (p[i] == '\r' && p[i + 1] == '\n') {
                p[i] = '\0';
                *line = p;
                *len = i;
                c->rpos += i + 2;
                return 0;
            }
        }
        scanned = have > 0 ? have - 1 : 0;
        if (fill(c, have + 1) != 0) {
            return -1;
        }
    }
}

int bench_conn_bytes(struct bench_conn *c, size_t n, char **out)
{
    if (c->fd < 0 || fill(c, n + 2) != 0) {
        return -1;
    }
    char *p = c->buf + c->rpos;
    if (p[n] != '\r' || p[n + 1] != '\n') {
        bench_conn_close(c);
        return -1;
    }
    p[n] = '\0';
    *out = p;
    c->rpos += n + 2;
    return 0;
}

void bench_conn_init(struct bench_conn *c, const struct bench_node *node, const char *auth_header,
                     int timeout_s)
{
    memset(c, 0, sizeof *c);
    c->node = node;
    c->auth_header = auth_header ? auth_header : "";
    c->timeout_s = timeout_s;
    c->fd = -1;
}

void bench_conn_free(struct bench_conn *c)
{
    bench_conn_close(c);
    free(c->buf);
    free(c->req);
    c->buf = c->req = NULL;
    c->cap = c->req_cap = 0;
}

int bench_node_parse(const char *url, struct bench_node *n)
{
    if (bench_parse_url(url, n->host, sizeof n->host, n->port, sizeof n->port, NULL) != 0) {
        return -1;
    }
    int len = snprintf(n->host_header, sizeof n->host_header, "Host: %s:%s\r\n", n->host, n->port);
    return len > 0 && (size_t)len < sizeof n->host_header ? 0 : -1;
}
