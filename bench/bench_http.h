/* SPDX-License-Identifier: MIT */
/* What the HTTP load tools share: the server URL from a ready file, its parts, a bearer token
 * signed with roostd's own key, and a minimal keep-alive HTTP/1.1 client. */
#ifndef ROOST_BENCH_HTTP_H
#define ROOST_BENCH_HTTP_H

#include <netinet/in.h>
#include <stddef.h>

/* The first line of a file without its line ending (caller frees), or NULL. */
char *bench_read_line(const char *path);
/* Splits "SCHEME://HOST:PORT[/…]"; when addr is not NULL also resolves it (IPv4). 0 or -1. */
int bench_parse_url(const char *url, char *host, size_t host_len, char *port, size_t port_len,
                    struct sockaddr_in *addr);
/* An EdDSA token of tenant "bench" valid for a day, signed with the Ed25519 PEM key_file, or with
 * a throw-away key when key_file is NULL (a same-sized token for servers that do not check).
 * Errors go to stderr prefixed with `tool`; NULL then. Caller frees. */
char *bench_mint_token(const char *tool, const char *key_file, const char *sub, const char *scope);
/* bench_mint_token's token as a request header line, "Authorization: Bearer …\r\n" (NULL on
 * failure). Caller frees. */
char *bench_auth_header(const char *tool, const char *key_file, const char *sub, const char *scope);

/* A server: its host, port and Host header line ("Host: h:p\r\n"). */
struct bench_node {
    char host[256];
    char port[16];
    char host_header[300];
};

/* "http://HOST:PORT[/…]" into a node. 0 or -1. */
int bench_node_parse(const char *url, struct bench_node *n);

/* One keep-alive connection to a node; connects on first use and again after an error. */
struct bench_conn {
    const struct bench_node *node;
    const char *auth_header; /* a whole header line ("Authorization: …\r\n") or "" */
    int timeout_s;           /* receive timeout: beyond it the server counts as hung */
    int fd;
    char *buf; /* response bytes */
    size_t cap;
    size_t rpos, rlen; /* raw use: the unread bytes are buf[rpos, rlen) */
    char *req;         /* request bytes */
    size_t req_cap;
};

void bench_conn_init(struct bench_conn *c, const struct bench_node *node, const char *auth_header,
                     int timeout_s);
/* Sends one POST and reads the whole response. On success *status, *resp and *resp_len are set
 * (the body lives in the connection's buffer until the next call) and 0 is returned; -1 on an
 * I/O or framing error (the connection is closed and reopened by the next call). */
int bench_http_post(struct bench_conn *c, const char *path, const char *body, size_t body_len,
                    int *status, const char **resp, size_t *resp_len);
void bench_conn_close(struct bench_conn *c);
/* The connection used raw, for a line protocol (Redis, beanstalkd): send all of buf (connecting
 * first when closed); read the next CRLF-terminated line (NUL-terminated in place, without the
 * CRLF); read the next n bytes and the CRLF after them. What they hand out lives in the
 * connection's buffer until the next read. 0, or -1 on an I/O or framing error (the connection
 * is then closed; the next send reconnects). */
int bench_conn_send(struct bench_conn *c, const char *buf, size_t len);
int bench_conn_line(struct bench_conn *c, char **line, size_t *len);
int bench_conn_bytes(struct bench_conn *c, size_t n, char **out);
void bench_conn_free(struct bench_conn *c);

#endif
