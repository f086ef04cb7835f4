/* SPDX-License-Identifier: MIT */
/* Bounded JSON parsing: the depth pre-scan runs in O(len) without allocating, so a 100k-deep
 * document is refused before jansson's recursive parser sees it. */
#include "common/jsonutil.h"

#include <openssl/crypto.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"
#include "roost/roost_error.h"

#include "common/banned.h"

size_t jsonutil_depth(const char *buf, size_t len, size_t limit)
{
    size_t depth = 0, max = 0;
    int in_string = 0;
    for (size_t i = 0; i < len; i++) {
        char c = buf[i];
        if (in_string) {
            if (c == '\\') {
                i++;
            } else if (c == '"') {
                in_string = 0;
            }
        } else if (c == '"') {
            in_string = 1;
        } else if (c == '{' || c == '[') {
            if (++depth > max) {
                max = depth;
                if (max > limit) {
                    return max;
                }
            }
        } else if ((c == '}' || c == ']') && depth > 0) {
            depth--;
        }
    }
    return max;
}

/* ---- the plain-JSON reader ----
 *
 * jansson reads a byte at a time through a callback, with a UTF-8 check and a buffer append per
 * byte (~100 instructions per byte of a request body). Most bodies are plain: ASCII, integers,
 * short escapes. This reader builds the same values the same way (json_object in insertion
 * order, json_stringn_nocheck, json_integer, the true/false/null singletons) for such text, and
 * gives up (NULL) on anything else: reals, \u escapes, bytes >= 0x80, escaped keys, deep
 * nesting, and every error. jansson then reads the text from the start, so what is accepted,
 * refused, and why, stays jansson's alone. */

#define PLAIN_MAX_DEPTH 64

struct plain {
    const char *p, *end;
    char *scratch; /* unescaped string values */
    size_t scratch_cap;
    int depth;
    int max_depth; /* the deepest nesting seen */
};

static void plain_ws(struct plain *r)
{
    while (r->p < r->end && (*r->p == ' ' || *r->p == '\t' || *r->p == '\n' || *r->p == '\r')) {
        r->p++;
    }
}

/* After a member of an object or array: 0 past `close` (the container ends), 1 past ',' and the
 * whitespace after it (the next member follows), -1 for anything else. */
static int plain_after_member(struct plain *r, char close)
{
    plain_ws(r);
    if (r->p < r->end && *r->p == close) {
        r->p++;
        return 0;
    }
    if (r->p < r->end && *r->p == ',') {
        r->p++;
        plain_ws(r);
        return 1;
    }
    return -1;
}

static bool plain_byte(unsigned char c)
{
    return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* An object key, after its opening quote: unescaped ASCII only, borrowed from the text. */
static bool plain_key(struct plain *r, const char **key, size_t *n)
{
    const char *q = r->p;
    while (q < r->end && plain_byte((unsigned char)*q)) {
        q++;
    }
    if (q >= r->end || *q != '"') {
        return false;
    }
    *key = r->p;
    *n = (size_t)(q - r->p);
    r->p = q + 1;
    return true;
}

/* A string value, after its opening quote. */
static json_t *plain_string(struct plain *r)
{
    const char *q = r->p;
    while (q < r->end && plain_byte((unsigned char)*q)) {
        q++;
    }
    if (q < r->end && *q == '"') {
        json_t *v = json_stringn_nocheck(r->p, (size_t)(q - r->p));
        r->p = q + 1;
        return v;
    }
    /* Escapes: the text is never shorter than what it stands for. */
    size_t cap = (size_t)(r->end - r->p);
    if (cap > r->scratch_cap) {
        char *grown = realloc(r->scratch, cap);
        if (grown == NULL) {
            return NULL;
        }
        r->scratch = grown;
        r->scratch_cap = cap;
    }
    size_t n = 0;
    for (q = r->p; q < r->end; q++) {
        unsigned char c = (unsigned char)*q;
        if (c == '"') {
            json_t *v = json_stringn_nocheck(r->scratch, n);
            r->p = q + 1;
            return v;
        }
        if (c != '\\') {
            if (!plain_byte(c)) {
                return NULL;
            }
            r->scratch[n++] = (char)c;
            continue;
        }
        if (++q >= r->end) {
            return NULL;
        }
        switch (*q) {
        case '"':
        case '\\':
        case '/':
            r->scratch[n++] = *q;
            break;
        case 'b':
            r->scratch[n++] = '\b';
            break;
        case 'f':
            r->scratch[n++] = '\f';
            break;
        case 'n':
            r->scratch[n++] = '\n';
            break;
        case 'r':
            r->scratch[n++] = '\r';
            break;
        case 't':
            r->scratch[n++] = '\t';
            break;
        default:
            return NULL; /* \u (surrogates, NUL) and invalid escapes: jansson's */
        }
    }
    return NULL;
}

/* An integer as strtoll reads it; reals and out-of-range values are jansson's. */
static json_t *plain_number(struct plain *r)
{
    const char *q = r->p;
    bool neg = q < r->end && *q == '-';
    q += neg;
    if (q >= r->end || *q < '0' || *q > '9') {
        return NULL;
    }
    uint64_t u = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    if (*q == '0') {
        q++;
    } else {
        for (; q < r->end && *q >= '0' && *q <= '9'; q++) {
            unsigned d = (unsigned)(*q - '0');
            if (u > (limit - d) / 10) {
                return NULL;
            }
            u = u * 10 + d;
        }
    }
    if (q < r->end && ((*q >= '0' && *q <= '9') || *q == '.' || *q == 'e' || *q == 'E')) {
        return NULL; /* a leading zero, or a real */
    }
    r->p = q;
    return json_integer(neg ? (json_int_t)(0 - u) : (json_int_t)u);
}

static json_t *plain_literal(struct plain *r, const char *word, size_t n, json_t *v)
{
    if ((size_t)(r->end - r->p) < n || memcmp(r->p, word, n) != 0) {
        return NULL;
    }
    r->p += n;
    return v;
}

static json_t *plain_value(struct plain *r);

static json_t *plain_object(struct plain *r)
{
    json_t *o = json_object();
    if (o == NULL) {
        return NULL;
    }
    r->p++; /* '{' */
    plain_ws(r);
    if (r->p < r->end && *r->p == '}') {
        r->p++;
        return o;
    }
    for (;;) {
        const char *key;
        size_t n;
        if (r->p >= r->end || *r->p != '"') {
            break;
        }
        r->p++;
        if (!plain_key(r, &key, &n) || json_object_getn(o, key, n) != NULL) {
            break; /* an escaped key, or a duplicate (refused by jansson) */
        }
        plain_ws(r);
        if (r->p >= r->end || *r->p != ':') {
            break;
        }
        r->p++;
        plain_ws(r);
        json_t *v = plain_value(r);
        if (v == NULL || json_object_setn_new_nocheck(o, key, n, v) != 0) {
            break;
        }
        int more = plain_after_member(r, '}');
        if (more == 0) {
            return o;
        }
        if (more < 0) {
            break;
        }
    }
    json_decref(o);
    return NULL;
}

static json_t *plain_array(struct plain *r)
{
    json_t *a = json_array();
    if (a == NULL) {
        return NULL;
    }
    r->p++; /* '[' */
    plain_ws(r);
    if (r->p < r->end && *r->p == ']') {
        r->p++;
        return a;
    }
    for (;;) {
        json_t *v = plain_value(r);
        if (v == NULL || json_array_append_new(a, v) != 0) {
            break;
        }
        int more = plain_after_member(r, ']');
        if (more == 0) {
            return a;
        }
        if (more < 0) {
            break;
        }
    }
    json_decref(a);
    return NULL;
}

static json_t *plain_value(struct plain *r)
{
    if (r->p >= r->end) {
        return NULL;
    }
    json_t *v = NULL;
    switch (*r->p) {
    case '{':
    case '[':
        if (++r->depth > PLAIN_MAX_DEPTH) {
            return NULL;
        }
        if (r->depth > r->max_depth) {
            r->max_depth = r->depth;
        }
        v = *r->p == '{' ? plain_object(r) : plain_array(r);
        r->depth--;
        return v;
    case '"':
        r->p++;
        return plain_string(r);
    case 't':
        v = plain_literal(r, "true", 4, json_true());
        break;
    case 'f':
        v = plain_literal(r, "false", 5, json_false());
        break;
    case 'n':
        v = plain_literal(r, "null", 4, json_null());
        break;
    default:
        return plain_number(r);
    }
    /* "truex" is one bad token to jansson. */
    if (v != NULL && r->p < r->end &&
        ((*r->p >= 'a' && *r->p <= 'z') || (*r->p >= 'A' && *r->p <= 'Z'))) {
        json_decref(v);
        return NULL;
    }
    return v;
}

/* *depth: the nesting of the value read (what jsonutil_depth counts in valid JSON). */
static json_t *parse_plain(const char *buf, size_t len, int *depth)
{
    struct plain r = {.p = buf, .end = buf + len};
    plain_ws(&r);
    json_t *v = plain_value(&r);
    plain_ws(&r);
    if (v != NULL && r.p != r.end) {
        json_decref(v);
        v = NULL;
    }
    free(r.scratch);
    *depth = r.max_depth;
    return v;
}

json_t *jsonutil_parse_plain(const char *buf, size_t len)
{
    int depth;
    return parse_plain(buf, len, &depth);
}

int jsonutil_parse_object(const char *buf, size_t len, size_t max_depth, json_t **out)
{
    *out = NULL;
    /* Plain text first: it is valid JSON when read, so its nesting is what the pre-scan below
     * would count, and the pre-scan is needed only for the rest. */
    int depth;
    json_t *v = parse_plain(buf, len, &depth);
    if (v != NULL && (size_t)depth > max_depth) {
        json_decref(v);
        return ROOST_EJSONDEPTH;
    }
    if (v == NULL && jsonutil_depth(buf, len, max_depth) > max_depth) {
        return ROOST_EJSONDEPTH;
    }
    json_error_t err;
    /* JSON_REJECT_DUPLICATES: {"a":1,"a":2} is ambiguous across parsers; refuse it.
     * Without JSON_ALLOW_NUL, "\u0000" inside strings is refused too. JSON_DECODE_ANY lets a
     * valid scalar through so it is reported as ROOST_EBODY (valid JSON, not an object), as the
     * header promises, rather than as ROOST_EJSON. */
    if (v == NULL) {
        v = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
    }
    if (v == NULL) {
        return json_error_code(&err) == json_error_out_of_memory ? ROOST_ENOMEM : ROOST_EJSON;
    }
    if (!json_is_object(v)) {
        json_decref(v);
        return ROOST_EBODY;
    }
    *out = v;
    return ROOST_OK;
}

/* The JSON escape of c (`"`, `\` or a control character) into esc, as jansson writes it: the
 * short form where there is one, else \u00XX. Returns its length. */
static size_t escape_char(unsigned char c, char esc[6])
{
    static const char hex[] = "0123456789ABCDEF";
    static const char short_of[] = {['"'] = '"',  ['\\'] = '\\', ['\b'] = 'b', ['\f'] = 'f',
                                    ['\n'] = 'n', ['\r'] = 'r',  ['\t'] = 't'};
    esc[0] = '\\';
    if (c < sizeof short_of && short_of[c] != 0) {
        esc[1] = short_of[c];
        return 2;
    }
    esc[1] = 'u';
    esc[2] = '0';
    esc[3] = '0';
    esc[4] = hex[c >> 4];
    esc[5] = hex[c & 0xf];
    return 6;
}

/* A string as jansson's compact dump writes it: `"`, `\` and control characters escaped (NUL
 * included, as \u0000), other bytes as they are. -1 for a byte >= 0x80: jansson checks the
 * UTF-8 of those (and fails the dump on a bad one), so they are left to it. */
static int dump_string(struct dynbuf *b, const char *s, size_t n)
{
    dynbuf_addc(b, '"');
    size_t run = 0; /* start of the bytes not yet appended */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x80) {
            return -1;
        }
        if (c >= 0x20 && c != '"' && c != '\\') {
            continue;
        }
        dynbuf_add(b, s + run, i - run);
        run = i + 1;
        char esc[6];
        dynbuf_add(b, esc, escape_char(c, esc));
    }
    dynbuf_add(b, s + run, n - run);
    dynbuf_addc(b, '"');
    return 0;
}

/* Deeper values are left to jansson (parsed bodies are far shallower: limits.max_json_depth). */
#define DUMP_MAX_DEPTH 64

/* v as json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) writes it, or -1 where that is not sure
 * to hold (a real: jansson's own %.17g rules; a non-ASCII string; depth). */
static int dump_value(struct dynbuf *b, const json_t *v, int depth)
{
    if (depth > DUMP_MAX_DEPTH) {
        return -1;
    }
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *key;
        size_t key_len;
        json_t *member;
        char sep = '{';
        json_object_keylen_foreach((json_t *)v, key, key_len, member)
        {
            dynbuf_addc(b, sep);
            sep = ',';
            if (dump_string(b, key, key_len) != 0) {
                return -1;
            }
            dynbuf_addc(b, ':');
            if (dump_value(b, member, depth + 1) != 0) {
                return -1;
            }
        }
        dynbuf_add(b, sep == '{' ? "{}" : "}", sep == '{' ? 2 : 1);
        return 0;
    }
    case JSON_ARRAY: {
        size_t n = json_array_size(v);
        dynbuf_addc(b, '[');
        for (size_t i = 0; i < n; i++) {
            if (i > 0) {
                dynbuf_addc(b, ',');
            }
            if (dump_value(b, json_array_get(v, i), depth + 1) != 0) {
                return -1;
            }
        }
        dynbuf_addc(b, ']');
        return 0;
    }
    case JSON_STRING:
        return dump_string(b, json_string_value(v), json_string_length(v));
    case JSON_INTEGER:
        jsonutil_add_int(b, json_integer_value(v));
        return 0;
    case JSON_TRUE:
        dynbuf_add(b, "true", 4);
        return 0;
    case JSON_FALSE:
        dynbuf_add(b, "false", 5);
        return 0;
    case JSON_NULL:
        dynbuf_add(b, "null", 4);
        return 0;
    default:
        return -1;
    }
}

char *jsonutil_dump(const json_t *v)
{
    /* Written here when possible: jansson's dump costs ~100 instructions per byte (a callback
     * per token and a cycle check that formats each container's address), and every publish
     * dumps its payload. */
    struct dynbuf b = {.max = SIZE_MAX};
    if (v != NULL && dump_value(&b, v, 0) == 0 && b.err == DYNBUF_OK) {
        return b.s;
    }
    dynbuf_cleanup(&b);
    return json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
}

void jsonutil_wipe(json_t *v)
{
    const char *key;
    json_t *item;
    size_t i;
    if (json_is_string(v)) {
        /* jansson's own copy, writable; its length is kept apart from the bytes */
        OPENSSL_cleanse((char *)json_string_value(v), json_string_length(v));
    } else if (json_is_object(v)) {
        json_object_foreach(v, key, item)
        {
            jsonutil_wipe(item);
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, item)
        {
            jsonutil_wipe(item);
        }
    }
}

void jsonutil_add_string(struct dynbuf *b, const char *s)
{
    if (s == NULL) {
        dynbuf_add(b, "null", 4);
        return;
    }
    dynbuf_addc(b, '"');
    const char *run = s; /* start of the bytes not yet appended */
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\') {
            continue;
        }
        dynbuf_add(b, run, (size_t)(s - run));
        run = s + 1;
        char esc[6];
        dynbuf_add(b, esc, escape_char(c, esc));
    }
    dynbuf_add(b, run, (size_t)(s - run));
    dynbuf_addc(b, '"');
}

void jsonutil_add_int(struct dynbuf *b, int64_t v)
{
    char buf[24];
    char *p = buf + sizeof buf;
    uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;
    do {
        *--p = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (v < 0) {
        *--p = '-';
    }
    dynbuf_add(b, p, (size_t)(buf + sizeof buf - p));
}
