/* SPDX-License-Identifier: MIT */
/* Bounded JSON parsing: the depth pre-scan runs in O(len) without allocating, so a 100k-deep
 * document is refused before jansson's recursive parser sees it. */
#include "common/jsonutil.h"

#include <stdint.h>
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

int jsonutil_parse_object(const char *buf, size_t len, size_t max_depth, json_t **out)
{
    *out = NULL;
    if (jsonutil_depth(buf, len, max_depth) > max_depth) {
        return ROOST_EJSONDEPTH;
    }
    json_error_t err;
    /* JSON_REJECT_DUPLICATES: {"a":1,"a":2} is ambiguous across parsers; refuse it.
     * Without JSON_ALLOW_NUL, "\u0000" inside strings is refused too. JSON_DECODE_ANY lets a
     * valid scalar through so it is reported as ROOST_EBODY (valid JSON, not an object), as the
     * header promises, rather than as ROOST_EJSON. */
    json_t *v = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
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

/* A string as jansson's compact dump writes it: `"`, `\` and control characters escaped (NUL
 * included, as \u0000), other bytes as they are. -1 for a byte >= 0x80: jansson checks the
 * UTF-8 of those (and fails the dump on a bad one), so they are left to it. */
static int dump_string(struct dynbuf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
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
        char esc[6] = {'\\', 0};
        size_t k = 2;
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 0xf];
            k = 6;
        }
        dynbuf_add(b, esc, k);
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

void jsonutil_add_string(struct dynbuf *b, const char *s)
{
    if (s == NULL) {
        dynbuf_add(b, "null", 4);
        return;
    }
    static const char hex[] = "0123456789ABCDEF";
    dynbuf_addc(b, '"');
    const char *run = s; /* start of the bytes not yet appended */
    for (; *s != '\0'; s++) {
        unsigned char c = (unsigned char)*s;
        if (c >= 0x20 && c != '"' && c != '\\') {
            continue;
        }
        dynbuf_add(b, run, (size_t)(s - run));
        run = s + 1;
        char esc[6] = {'\\', 0};
        size_t n = 2;
        switch (c) {
        case '"':
            esc[1] = '"';
            break;
        case '\\':
            esc[1] = '\\';
            break;
        case '\b':
            esc[1] = 'b';
            break;
        case '\f':
            esc[1] = 'f';
            break;
        case '\n':
            esc[1] = 'n';
            break;
        case '\r':
            esc[1] = 'r';
            break;
        case '\t':
            esc[1] = 't';
            break;
        default:
            esc[1] = 'u';
            esc[2] = '0';
            esc[3] = '0';
            esc[4] = hex[c >> 4];
            esc[5] = hex[c & 0xf];
            n = 6;
        }
        dynbuf_add(b, esc, n);
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
