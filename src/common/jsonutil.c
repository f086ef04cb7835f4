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

char *jsonutil_dump(const json_t *v)
{
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
