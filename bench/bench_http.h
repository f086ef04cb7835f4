/* SPDX-License-Identifier: MIT */
/* What the HTTP load tools share: the server URL from a ready file, its parts, and a bearer
 * token signed with roostd's own key. */
#ifndef ROOST_BENCH_HTTP_H
#define ROOST_BENCH_HTTP_H

#include <netinet/in.h>
#include <stddef.h>

/* The first line of a file without its line ending (caller frees), or NULL. */
char *bench_read_line(const char *path);
/* Splits "http://HOST:PORT[/…]"; when addr is not NULL also resolves it (IPv4). 0 or -1. */
int bench_parse_url(const char *url, char *host, size_t host_len, char *port, size_t port_len,
                    struct sockaddr_in *addr);
/* An EdDSA token of tenant "bench" valid for a day, signed with the Ed25519 PEM key_file, or with
 * a throw-away key when key_file is NULL (a same-sized token for servers that do not check).
 * Errors go to stderr prefixed with `tool`; NULL then. Caller frees. */
char *bench_mint_token(const char *tool, const char *key_file, const char *sub, const char *scope);

#endif
