/* SPDX-License-Identifier: MIT */
/* libFuzzer target for src/proto/httpsig.c. Input, LF-separated:
 *
 *   line 1: Signature-Input value      line 3: METHOD /path?query
 *   line 2: Signature value            lines 4…: Name: value   (at most 32 header lines)
 *
 * The selected signature's base is built over the request and over a response answering it
 * (for ;req), then checked with an HMAC key. Invariant: a base never holds a CR, and has exactly
 * one line per covered component plus the @signature-params line, or the target aborts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/httpsig.h"

#include "common/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_HEADERS 32

static void check_base(const struct httpsig_message *m, const struct httpsig_signature *s)
{
    char *base = NULL;
    size_t n = 0;
    if (httpsig_base_build(m, &s->input, &base, &n) != HTTPSIG_OK) {
        return;
    }
    size_t lines = 1;
    for (size_t i = 0; i < n; i++) {
        if (base[i] == '\r') {
            abort();
        }
        lines += base[i] == '\n';
    }
    if (lines != s->params.n_components + 1 || strlen(base) != n) {
        abort();
    }
    static const unsigned char secret[32] = {42};
    struct httpsig_key k = {.alg = HTTPSIG_ALG_HMAC_SHA256, .secret = secret, .secret_len = 32};
    (void)httpsig_verify(m, s, &k);
    free(base);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 65536) {
        return 0;
    }
    char *buf = malloc(size + 1);
    if (buf == NULL) {
        return 0;
    }
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *lines[3 + MAX_HEADERS];
    size_t nl = 0;
    for (char *p = buf; p != NULL && nl < 3 + MAX_HEADERS;) {
        lines[nl++] = p;
        p = strchr(p, '\n');
        if (p != NULL) {
            *p++ = '\0';
        }
    }
    struct httpsig_header h[MAX_HEADERS];
    struct httpsig_message req = {.scheme = "https", .authority = "Example.com:443", .path = "/"};
    if (nl >= 3) {
        char *sp = strchr(lines[2], ' ');
        req.method = lines[2];
        if (sp != NULL) {
            *sp = '\0';
            req.path = sp + 1;
            char *q = strchr(req.path, '?');
            if (q != NULL) {
                *q = '\0';
                req.query = q + 1;
            }
        }
    }
    size_t nh = 0;
    for (size_t i = 3; i < nl; i++) {
        char *colon = strchr(lines[i], ':');
        if (colon == NULL) {
            continue;
        }
        *colon = '\0';
        h[nh].name = lines[i];
        h[nh].value = colon + 1;
        nh++;
    }
    req.headers = h;
    req.n_headers = nh;
    struct httpsig_message res = {.status = 200, .headers = h, .n_headers = nh, .request = &req};
    struct httpsig_signature s;
    if (nl >= 2 && httpsig_parse(lines[0], strlen(lines[0]), lines[1], strlen(lines[1]), NULL,
                                 &s) == HTTPSIG_OK) {
        check_base(&req, &s);
        check_base(&res, &s);
        httpsig_signature_cleanup(&s);
    }
    /* The Signature-Input line alone, as an Inner List member value. */
    struct sf_item in;
    if (nl >= 1 && httpsig_params_parse(lines[0], strlen(lines[0]), &in) == HTTPSIG_OK) {
        char *base = NULL;
        if (httpsig_base_build(&req, &in, &base, NULL) == HTTPSIG_OK) {
            free(base);
        }
        sf_item_cleanup(&in);
    }
    free(buf);
    return 0;
}
