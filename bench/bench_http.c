/* SPDX-License-Identifier: MIT */
/* See bench_http.h. */
#include "bench_http.h"

#include <errno.h>
#include <jansson.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

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
    const char *p = url;
    if (strncmp(p, "http://", 7) != 0) {
        return -1;
    }
    p += 7;
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
