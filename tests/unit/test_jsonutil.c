/* SPDX-License-Identifier: MIT */
/* Unit tests of src/common/jsonutil.c: the depth pre-scan, the strict object parser, the
 * string writer and the wipe of secrets. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/dynbuf.h"
#include "common/jsonutil.h"
#include "harness/check.h"
#include "roost/roost_error.h"

#include "common/banned.h"

#define DEPTH 32

static int parse(const char *s, json_t **out)
{
    return jsonutil_parse_object(s, strlen(s), DEPTH, out);
}

/* Parses and drops the result; returns the rc. */
static int parse_rc(const char *s)
{
    json_t *v = NULL;
    int rc = parse(s, &v);
    json_decref(v);
    return rc;
}

static char *nested(size_t depth, char open, char close, const char *prefix, const char *suffix)
{
    size_t pl = strlen(prefix), sl = strlen(suffix);
    char *s = malloc(pl + 2 * depth + sl + 1);
    memcpy(s, prefix, pl);
    memset(s + pl, open, depth);
    memset(s + pl + depth, close, depth);
    memcpy(s + pl + 2 * depth, suffix, sl + 1);
    return s;
}

static void test_jsonutil_depth_limit_before_parsing(void)
{
    /* 100k-deep arrays would overflow a naive recursive parser; the pre-scan refuses them. */
    char *deep = nested(100000, '[', ']', "", "");
    json_t *v = (json_t *)1;
    CHECK(jsonutil_parse_object(deep, strlen(deep), DEPTH, &v) == ROOST_EJSONDEPTH);
    CHECK(v == NULL);
    CHECK(jsonutil_depth(deep, strlen(deep), DEPTH) == DEPTH + 1); /* stops counting early */
    free(deep);

    /* Unbalanced opening only (never closed) is refused the same way. */
    char *open_only = malloc(100001);
    memset(open_only, '[', 100000);
    open_only[100000] = '\0';
    CHECK(parse_rc(open_only) == ROOST_EJSONDEPTH);
    free(open_only);

    /* Deep nesting inside an object value. */
    char *inner = nested(10000, '[', ']', "{\"a\":", "}");
    CHECK(parse_rc(inner) == ROOST_EJSONDEPTH);
    free(inner);
    char *objs = malloc(10000 * 6 + 10);
    size_t o = 0;
    for (int i = 0; i < 10000; i++) {
        memcpy(objs + o, "{\"a\":", 5);
        o += 5;
    }
    objs[o++] = '1';
    memset(objs + o, '}', 10000);
    o += 10000;
    objs[o] = '\0';
    CHECK(parse_rc(objs) == ROOST_EJSONDEPTH);
    free(objs);

    /* Exactly at the limit passes, one more fails (the outer object counts as 1). */
    char *at = nested(DEPTH - 1, '[', ']', "{\"a\":", "}");
    CHECK(parse_rc(at) == ROOST_OK);
    free(at);
    char *over = nested(DEPTH, '[', ']', "{\"a\":", "}");
    CHECK(parse_rc(over) == ROOST_EJSONDEPTH);
    free(over);

    /* Brackets inside strings, including after escaped quotes, are not nesting. */
    char *in_string = nested(1000, '[', '{', "{\"a\":\"", "\"}");
    CHECK(parse_rc(in_string) == ROOST_OK);
    free(in_string);
    CHECK(parse_rc("{\"a\":\"\\\"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[\"}") == ROOST_OK);
    CHECK(parse_rc("{\"a\\\\\":[[1]]}") == ROOST_OK);
    CHECK_EQ(jsonutil_depth("{\"a\":[[1]]}", 11, 100), 3);
    CHECK_EQ(jsonutil_depth("[][][]", 6, 100), 1);
    CHECK_EQ(jsonutil_depth("", 0, 100), 0);
}

static void test_jsonutil_accepts_objects(void)
{
    json_t *v = NULL;
    CHECK(parse("{\"a\":1,\"b\":[true,null,\"x\"],\"c\":{\"d\":-0.5}}", &v) == ROOST_OK);
    CHECK(json_is_object(v));
    CHECK(json_integer_value(json_object_get(v, "a")) == 1);
    char *dump = jsonutil_dump(v);
    CHECK_STREQ(dump, "{\"a\":1,\"b\":[true,null,\"x\"],\"c\":{\"d\":-0.5}}");
    free(dump);
    json_decref(v);
    CHECK(parse_rc("{}") == ROOST_OK);
    CHECK(parse_rc(" \n{ } \t") == ROOST_OK);
    CHECK(parse_rc("{\"max\":9223372036854775807,\"min\":-9223372036854775808}") == ROOST_OK);
    CHECK(parse_rc("{\"u\":\"caf\xc3\xa9 \\u00e9 \\ud83d\\ude00\"}") == ROOST_OK);
    CHECK(parse_rc("{\"a\":{\"a\":1},\"b\":{\"a\":2}}") == ROOST_OK); /* same key, other objects */

    /* The length is the bound: bytes after it are not read. */
    const char *s = "{\"a\":1}garbage";
    CHECK(jsonutil_parse_object(s, 7, DEPTH, &v) == ROOST_OK);
    json_decref(v);
    CHECK(jsonutil_parse_object(s, 6, DEPTH, &v) == ROOST_EJSON);
}

static void test_jsonutil_refuses_hostile_input(void)
{
    static const char *const bad_json[] = {
        "",
        " ",
        "{",
        "{\"a\":1,}",
        "{'a':1}",
        "{\"a\":01}",
        "{\"a\":NaN}",
        "{\"a\":1} x",
        "{\"a\":1}{}",
        "{\"a\":1,\"a\":2}",                 /* duplicate key */
        "{\"a\":1,\"b\":{\"c\":1,\"c\":1}}", /* duplicate key nested */
        "{\"a\":\"\\u0000\"}",               /* NUL escape */
        "{\"a\\u0000b\":1}",                 /* NUL escape in a key */
        "{\"a\":\"\xff\"}",                  /* invalid UTF-8 */
        "{\"a\":\"\xc0\xaf\"}",              /* overlong encoding */
        "{\"a\":\"\xed\xa0\x80\"}",          /* UTF-8 encoded surrogate */
        "{\"a\":\"\xf8\x88\x80\x80\x80\"}",  /* 5-byte form */
        "{\"a\":\"\xe9t\xe9\"}",             /* Latin-1 */
        "{\"a\":\"\\ud800\"}",               /* lone high surrogate */
        "{\"a\":\"\\udc00\"}",               /* lone low surrogate */
        "{\"a\":\"\\x41\"}",                 /* invalid escape */
        "{\"a\":\"tab\there\"}",             /* raw control character */
        "{\"a\":1e999}",                     /* overflows a double */
        "{\"a\":-1e999}",
        "{\"a\":9223372036854775808}", /* beyond int64 */
        "{\"a\":-9223372036854775809}",
        "{\"a\":99999999999999999999999}",
        "\xef\xbb\xbf{}", /* BOM */
        "{/*c*/}",
    };
    for (size_t i = 0; i < sizeof bad_json / sizeof bad_json[0]; i++) {
        json_t *v = (json_t *)1;
        int rc = parse(bad_json[i], &v);
        if (rc != ROOST_EJSON) {
            fprintf(stderr, "case %zu: '%s' gave %s\n", i, bad_json[i], roost_err_name(rc));
        }
        CHECK(rc == ROOST_EJSON);
        CHECK(v == NULL);
    }
    /* Embedded raw NUL byte inside the bounded buffer. */
    CHECK(jsonutil_parse_object("{\"a\":\"x\0y\"}", 11, DEPTH, &(json_t *){NULL}) == ROOST_EJSON);
}

static void test_jsonutil_top_level_must_be_object(void)
{
    static const char *const not_objects[] = {"[]",    "[1,2]", "[{\"a\":1}]", "1",
                                              "\"s\"", "null",  "true"};
    for (size_t i = 0; i < sizeof not_objects / sizeof not_objects[0]; i++) {
        json_t *v = (json_t *)1;
        int rc = parse(not_objects[i], &v);
        if (rc != ROOST_EBODY) {
            fprintf(stderr, "case '%s' gave %s\n", not_objects[i], roost_err_name(rc));
        }
        CHECK(rc == ROOST_EBODY);
        CHECK(v == NULL);
    }
}

/* jsonutil_add_string writes what jansson's compact dump writes (jansson is the oracle). */
static void test_jsonutil_add_string_matches_jansson(void)
{
    char ctl[40];
    size_t n = 0;
    for (int c = 1; c < 0x20; c++) {
        ctl[n++] = (char)c;
    }
    ctl[n] = '\0';
    const char *const cases[] = {"",
                                 "plain",
                                 "q\"uote",
                                 "back\\slash",
                                 "sl/ash",
                                 "tab\tnl\n",
                                 "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x90\xa6",
                                 ctl,
                                 "\x7f"};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct dynbuf b = {.max = 4096};
        jsonutil_add_string(&b, cases[i]);
        json_t *v = json_string(cases[i]);
        char *want = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
        CHECK(b.err == DYNBUF_OK);
        CHECK(want != NULL && b.s != NULL && strcmp(b.s, want) == 0);
        free(want);
        json_decref(v);
        dynbuf_cleanup(&b);
    }
    struct dynbuf b = {.max = 16};
    jsonutil_add_string(&b, NULL);
    CHECK(b.s != NULL && strcmp(b.s, "null") == 0);
    dynbuf_cleanup(&b);
}

/* jsonutil_dump writes what json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY) writes, whether it
 * writes the text itself or leaves it to jansson (reals, non-ASCII, deep values). */
static void test_jsonutil_dump_matches_jansson(void)
{
    static const char *const texts[] = {
        "{}",
        "[]",
        "{\"a\":{},\"b\":[],\"c\":[{}],\"d\":[[],[[]]]}",
        "{\"t\":1733327000123456789,\"p\":\"abcdefghijklmnopqrstuvwxyz\"}",
        "{\"max\":9223372036854775807,\"min\":-9223372036854775808,\"z\":-0,\"o\":0}",
        "{\"b\":true,\"f\":false,\"n\":null,\"s\":\"\"}",
        "{\"q\\\"k\":\"q\\\"v\\\\\\/\\b\\f\\n\\r\\t\\u0001\\u001f\\u007f\"}",
        "{\"nul\":\"a\\u0000b\"}",
        "{\"r\":1.5,\"e\":1e300,\"i\":[1,2.0]}",
        "{\"u\":\"caf\u00e9 \\ud83d\\ude00\"}",
        "{\"z\":1,\"a\":2,\"m\":{\"y\":[1,\"2\",{\"x\":null}],\"b\":false}}",
        "[1,\"two\",[3],{\"four\":4}]",
        "\"scalar\"",
        "42",
        "-7",
        "true",
        "null",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        json_error_t err;
        json_t *v = json_loads(texts[i], JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
        if (v == NULL) {
            fprintf(stderr, "case %zu does not parse: %s\n", i, err.text);
        }
        CHECK(v != NULL);
        char *got = jsonutil_dump(v);
        char *want = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        CHECK(got != NULL && want != NULL);
        if (got != NULL && want != NULL && strcmp(got, want) != 0) {
            fprintf(stderr, "case %zu: got %s want %s\n", i, got, want);
        }
        CHECK(got != NULL && want != NULL && strcmp(got, want) == 0);
        free(got);
        free(want);
        json_decref(v);
    }
    /* Insertion order survives deletes and replacements; depth past the own writer's limit. */
    json_t *o = json_object();
    json_object_set_new(o, "c", json_integer(3));
    json_object_set_new(o, "a", json_integer(1));
    json_object_set_new(o, "b", json_integer(2));
    json_object_del(o, "a");
    json_object_set_new(o, "c", json_string("again"));
    json_object_set_new(o, "a", json_true());
    json_t *deep = json_array();
    json_t *at = deep;
    for (int d = 0; d < 100; d++) {
        json_t *inner = json_array();
        json_array_append_new(at, inner);
        at = inner;
    }
    json_object_set_new(o, "deep", deep);
    char *got = jsonutil_dump(o);
    char *want = json_dumps(o, JSON_COMPACT | JSON_ENCODE_ANY);
    CHECK(got != NULL && want != NULL && strcmp(got, want) == 0);
    free(got);
    free(want);
    json_decref(o);
}

static bool same_value(const json_t *a, const json_t *b)
{
    char *da = json_dumps(a, JSON_COMPACT | JSON_ENCODE_ANY);
    char *db = json_dumps(b, JSON_COMPACT | JSON_ENCODE_ANY);
    bool same = da != NULL && db != NULL && strcmp(da, db) == 0 && json_equal(a, b);
    free(da);
    free(db);
    return same;
}

/* jsonutil_parse_plain reads what jansson reads (same values, same key order) and gives up on
 * the rest: checked on typical bodies and on ~60k random edits of them, where it must never
 * accept a text jansson refuses nor read one differently. */
static void test_jsonutil_parse_plain_agrees_with_jansson(void)
{
    static const char *const plain[] = {
        "{\"recipients\":[\"bench-agent-1\"],\"payload\":{\"t\":1733327000123456789,\"p\":"
        "\"abcdefghijklmnopqrstuvwxyz\"}}",
        "{\"limit\":10,\"lease_s\":60,\"wait_s\":5}",
        "{\"lease_token\":\"01JEXAMPLE.token-123\"}",
        "{\"acks\":[{\"event_id\":\"e1\",\"lease_token\":\"t1\"},{\"event_id\":\"e2\","
        "\"lease_token\":\"t2\"}]}",
        " {\"a\" : [ 1 , -2 , 0 , -0 , true , false , null , \"\" , { } , [ ] ] }\r\n",
        "{\"esc\":\"q\\\"b\\\\s\\/b\\bf\\fn\\nr\\rt\\t\",\"del\":\"\x7f\"}",
        "{\"max\":9223372036854775807,\"min\":-9223372036854775808}",
        "{\"\":1,\"z\":2,\"a\":{\"z\":3,\"a\":4}}",
        "[1,[2,[3,[4]]]]",
        "\"top\"",
        "7",
        "null",
    };
    size_t n_plain = sizeof plain / sizeof plain[0];
    for (size_t i = 0; i < n_plain; i++) {
        json_error_t err;
        json_t *want =
            json_loadb(plain[i], strlen(plain[i]), JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
        json_t *got = jsonutil_parse_plain(plain[i], strlen(plain[i]));
        if (got == NULL || want == NULL || !same_value(got, want)) {
            fprintf(stderr, "plain case %zu read differently\n", i);
        }
        CHECK(got != NULL && want != NULL && same_value(got, want));
        json_decref(got);
        json_decref(want);
    }
    /* Not plain: left to jansson, whether it accepts them or not. */
    static const char *const not_plain[] = {
        "{\"r\":1.5}",
        "{\"e\":1e3}",
        "{\"u\":\"\\u0041\"}",
        "{\"k\\n\":1}",
        "{\"c\":\"caf\xc3\xa9\"}",
        "{\"a\":1,\"a\":2}",
        "{\"a\":01}",
        "{\"a\":1,}",
        "{\"a\":truex}",
        "{\"a\":1} x",
        "",
        "{\"a\":9223372036854775808}",
    };
    for (size_t i = 0; i < sizeof not_plain / sizeof not_plain[0]; i++) {
        json_t *got = jsonutil_parse_plain(not_plain[i], strlen(not_plain[i]));
        CHECK(got == NULL);
        json_decref(got);
    }
    static const char alphabet[] =
        "{}[]:,\"\\ -0123456789.eE+trufalsnx/bu\t\n\r\x00\x1f\x7f\x80\xc3";
    uint64_t rng = 0x9e3779b97f4a7c15ULL;
    size_t taken = 0, agreed = 0, runs = 60000;
    for (size_t k = 0; k < runs; k++) {
        char text[512];
        const char *seed = plain[k % n_plain];
        size_t len = strlen(seed);
        memcpy(text, seed, len);
        int edits = 1 + (int)(k % 3);
        for (int e = 0; e < edits; e++) {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            size_t at = len ? (size_t)(rng % len) : 0;
            char c = alphabet[(rng >> 32) % (sizeof alphabet - 1)];
            switch ((rng >> 48) % 3) {
            case 0: /* replace */
                if (len > 0) {
                    text[at] = c;
                }
                break;
            case 1: /* insert */
                if (len + 1 < sizeof text) {
                    memmove(text + at + 1, text + at, len - at);
                    text[at] = c;
                    len++;
                }
                break;
            default: /* delete */
                if (len > 0) {
                    memmove(text + at, text + at + 1, len - at - 1);
                    len--;
                }
            }
        }
        json_error_t err;
        json_t *got = jsonutil_parse_plain(text, len);
        if (got == NULL) {
            continue;
        }
        taken++;
        json_t *want = json_loadb(text, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &err);
        if (want != NULL && same_value(got, want)) {
            agreed++;
        } else {
            fprintf(stderr, "disagreement on '%.*s'\n", (int)len, text);
        }
        json_decref(got);
        json_decref(want);
    }
    CHECK_EQ(agreed, taken);
    CHECK(taken > runs / 10); /* the edits leave many texts plain and valid */
}

static bool all_zero(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\0') {
            return false;
        }
    }
    return true;
}

/* Every string value, however deep, is overwritten in place; keys and other values stay. */
static void test_jsonutil_wipe_overwrites_every_string(void)
{
    json_t *v = json_pack("{s:s, s:{s:s, s:[s, i, {s:s}]}, s:i, s:n}", "refresh_token", "rt1.x.y",
                          "signing_key", "private_key", "-----BEGIN PRIVATE KEY-----", "list", "a",
                          7, "deep", "secret", "n", 42, "none");
    CHECK(v != NULL);
    json_t *key = json_object_get(v, "signing_key");
    json_t *list = json_object_get(key, "list");
    const char *strs[] = {json_string_value(json_object_get(v, "refresh_token")),
                          json_string_value(json_object_get(key, "private_key")),
                          json_string_value(json_array_get(list, 0)),
                          json_string_value(json_object_get(json_array_get(list, 2), "deep"))};
    size_t lens[] = {7, 27, 1, 6};
    jsonutil_wipe(v);
    for (size_t i = 0; i < 4; i++) {
        CHECK(all_zero(strs[i], lens[i]));
    }
    CHECK_EQ(json_integer_value(json_array_get(list, 1)), 7);
    CHECK_EQ(json_integer_value(json_object_get(v, "n")), 42);
    CHECK(json_object_get(v, "refresh_token") != NULL); /* keys stay: only values are secret */
    jsonutil_wipe(NULL);
    json_decref(v);
}

int main(void)
{
    RUN(test_jsonutil_depth_limit_before_parsing);
    RUN(test_jsonutil_accepts_objects);
    RUN(test_jsonutil_refuses_hostile_input);
    RUN(test_jsonutil_top_level_must_be_object);
    RUN(test_jsonutil_add_string_matches_jansson);
    RUN(test_jsonutil_dump_matches_jansson);
    RUN(test_jsonutil_parse_plain_agrees_with_jansson);
    RUN(test_jsonutil_wipe_overwrites_every_string);
    return check_summary();
}
