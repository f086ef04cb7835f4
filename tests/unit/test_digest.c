/* SPDX-License-Identifier: MIT */
/* Unit tests of src/proto/digest.c: every RFC 9530 / RFC 9421 example of
 * tests/data/rfc9530/content-digest-vectors.tsv is recomputed and verified, then the verification
 * rules (unknown algorithms ignored, all supported ones must match, malformed values). */
#include <stdlib.h>
#include <string.h>

#include "harness/check.h"
#include "proto/digest.h"

#include "common/banned.h"

#define VECTORS "data/rfc9530/content-digest-vectors.tsv"

/* The tsv's content column is a printf(1) format using only "\n"; "<empty>" is zero bytes. */
static size_t unescape(const char *in, char *out)
{
    if (strcmp(in, "<empty>") == 0) {
        return 0;
    }
    size_t o = 0;
    for (size_t i = 0; in[i] != '\0'; i++) {
        if (in[i] == '\\' && in[i + 1] == 'n') {
            out[o++] = '\n';
            i++;
        } else {
            out[o++] = in[i];
        }
    }
    return o;
}

static void test_digest_rfc_vectors(void)
{
    FILE *f = fopen(VECTORS, "r");
    CHECK(f != NULL);
    if (f == NULL) {
        return;
    }
    char line[1024];
    int rows = 0;
    while (fgets(line, sizeof line, f) != NULL) {
        if (line[0] == '#' || line[0] == '\n') {
            continue;
        }
        char *content = line, *alg = strchr(content, '\t');
        if (alg == NULL) {
            continue;
        }
        *alg++ = '\0';
        char *field = strchr(alg, '\t');
        CHECK(field != NULL);
        if (field == NULL) {
            break;
        }
        *field++ = '\0';
        char *where = strchr(field, '\t');
        if (where != NULL) {
            *where = '\0';
        }
        char body[512];
        size_t blen = unescape(content, body);
        enum digest_alg a = strcmp(alg, "sha-512") == 0 ? DIGEST_SHA512 : DIGEST_SHA256;
        char *out = NULL;
        CHECK_EQ(digest_content_field(body, blen, a, &out), DIGEST_OK);
        CHECK_STREQ(out, field);
        free(out);
        CHECK_EQ(digest_content_verify(field, strlen(field), body, blen), DIGEST_OK);
        /* Negative control: one changed body byte (or one added byte for the empty body). */
        if (blen > 0) {
            body[0] ^= 1;
        } else {
            body[blen++] = 'x';
        }
        CHECK_EQ(digest_content_verify(field, strlen(field), body, blen), DIGEST_EMISMATCH);
        rows++;
    }
    fclose(f);
    printf("rfc9530 vectors: %d rows\n", rows);
    CHECK_EQ(rows, 12);
}

static void test_digest_rules(void)
{
    const char *body = "{\"hello\": \"world\"}";
    size_t n = strlen(body);
    const char *s256 = "sha-256=:X48E9qOokqqrvdts8nOJRJN3OWDUoyWxBf7kbu9DBPE=:";
    const char *s512 =
        "sha-512=:WZDPaVn/"
        "7XgHaAy8pmojAkGWoRx2UFChF41A2svX+TaPm+AbwAgBWnrIiYllu7BNNyealdVLvRwEmTHWXvJwew==:";
    char buf[512];
    /* Both supported and matching. */
    snprintf(buf, sizeof buf, "%s, %s", s256, s512);
    CHECK_EQ(digest_content_verify(buf, strlen(buf), body, n), DIGEST_OK);
    /* Unknown algorithms are ignored, whatever their value. */
    snprintf(buf, sizeof buf, "md5=:AAAA:, unixsum=12, %s", s256);
    CHECK_EQ(digest_content_verify(buf, strlen(buf), body, n), DIGEST_OK);
    /* None supported. */
    CHECK_EQ(digest_content_verify("md5=:AAAA:", 10, body, n), DIGEST_EUNSUPPORTED);
    CHECK_EQ(digest_content_verify("", 0, body, n), DIGEST_EUNSUPPORTED);
    /* A good sha-256 cannot hide a bad sha-512. */
    snprintf(
        buf, sizeof buf, "%s, sha-512=:%s:", s256,
        "YMAam51Jz/jOATT6/zvHrLVgOYTGFy1d6GJiOHTohq4yP+pgk4vf2aCsyRZOtw8MjkM7iw7yZ/WkppmM44T3qg==");
    CHECK_EQ(digest_content_verify(buf, strlen(buf), body, n), DIGEST_EMISMATCH);
    /* Malformed: not a dictionary, wrong type, wrong length, RFC 9530's over-padded example. */
    CHECK_EQ(digest_content_verify("sha-256=:", 9, body, n), DIGEST_EMALFORMED);
    CHECK_EQ(digest_content_verify("sha-256=\"abc\"", 13, body, n), DIGEST_EMALFORMED);
    CHECK_EQ(digest_content_verify("sha-256=:AAEC:", 14, body, n), DIGEST_EMALFORMED);
    const char *overpad = "sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg==:";
    CHECK_EQ(digest_content_verify(overpad, strlen(overpad), "{\"hello\": \"world\"}\n", n + 1),
             DIGEST_EMALFORMED);
    const char *ok = "sha-256=:RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=:";
    CHECK_EQ(digest_content_verify(ok, strlen(ok), "{\"hello\": \"world\"}\n", n + 1), DIGEST_OK);
    /* The RFC 9421 B.2 test-response erratum: the printed value is not the body's digest. */
    const char *printed = "sha-512=:JlEy2bfUz7WrWIjc1qV6KVLpdr/7L5/"
                          "L4h7Sxvh6sNHpDQWDCL+GauFQWcZBvVDhiyOnAQsxzZFYwi0wDH+1pw==:";
    const char *good = "{\"message\": \"good dog\"}";
    CHECK_EQ(digest_content_verify(printed, strlen(printed), good, strlen(good)), DIGEST_EMISMATCH);
    CHECK_STREQ(digest_strerror(DIGEST_EMISMATCH), "mismatch");
}

int main(void)
{
    RUN(test_digest_rfc_vectors);
    RUN(test_digest_rules);
    return check_summary();
}
