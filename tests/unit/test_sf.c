/* SPDX-License-Identifier: MIT */
/* Unit tests of src/proto/sf.c: every case of the httpwg structured-field-tests
 * (tests/data/structured-field-tests/, every .json) — parse, compare with `expected` through the
 * suite's JSON mapping, serialize and compare with `canonical` — plus limits and API checks. */
#include <dirent.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness/check.h"
#include "proto/sf.h"

#include "common/banned.h"

#define SF_TESTS_DIR "data/structured-field-tests"

static int cases_total, cases_passed;

static json_t *base32_json(const unsigned char *s, size_t len)
{
    static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    size_t cap = (len + 4) / 5 * 8 + 1;
    char *out = malloc(cap);
    size_t o = 0;
    for (size_t i = 0; i < len; i += 5) {
        unsigned char blk[5] = {0};
        size_t n = len - i < 5 ? len - i : 5;
        memcpy(blk, s + i, n);
        uint64_t v = 0;
        for (int k = 0; k < 5; k++) {
            v = v << 8 | blk[k];
        }
        static const size_t chars_for[6] = {0, 2, 4, 5, 7, 8};
        for (size_t k = 0; k < 8; k++) {
            out[o++] = k < chars_for[n] ? alpha[(v >> (35 - 5 * k)) & 31] : '=';
        }
    }
    out[o] = '\0';
    json_t *j = json_string(out);
    free(out);
    return j;
}

static json_t *typed(const char *type, json_t *value)
{
    return json_pack("{s:s, s:o}", "__type", type, "value", value);
}

static json_t *bare_json(const struct sf_item *it)
{
    switch (it->type) {
    case SF_INTEGER:
        return json_integer(it->num);
    case SF_DECIMAL:
        return json_real((double)it->num / 1000.0);
    case SF_STRING:
        return json_stringn(it->str, it->len);
    case SF_TOKEN:
        return typed("token", json_stringn(it->str, it->len));
    case SF_BYTES:
        return typed("binary", base32_json((const unsigned char *)it->str, it->len));
    case SF_BOOLEAN:
        return json_boolean(it->num);
    case SF_DATE:
        return typed("date", json_integer(it->num));
    case SF_DISPLAY:
        return typed("displaystring", json_stringn(it->str, it->len));
    case SF_INNER_LIST:
        break;
    }
    return json_null();
}

static json_t *params_json(const struct sf_item *it)
{
    json_t *a = json_array();
    for (size_t i = 0; i < it->n_params; i++) {
        json_array_append_new(
            a, json_pack("[s, o]", it->params[i].key, bare_json(&it->params[i].value)));
    }
    return a;
}

static json_t *item_json(const struct sf_item *it)
{
    if (it->type == SF_INNER_LIST) {
        json_t *members = json_array();
        for (size_t i = 0; i < it->n_inner; i++) {
            json_array_append_new(members, item_json(&it->inner[i]));
        }
        return json_pack("[o, o]", members, params_json(it));
    }
    return json_pack("[o, o]", bare_json(it), params_json(it));
}

static json_t *field_json(const struct sf_field *f)
{
    if (f->type == SF_FIELD_ITEM) {
        return item_json(&f->members[0].value);
    }
    json_t *a = json_array();
    for (size_t i = 0; i < f->n_members; i++) {
        json_t *v = item_json(&f->members[i].value);
        if (f->type == SF_FIELD_DICT) {
            v = json_pack("[s, o]", f->members[i].key, v);
        }
        json_array_append_new(a, v);
    }
    return a;
}

/* Structural equality with numbers compared by value (the suite writes 1.0 and 1 alike). */
static int json_same(const json_t *a, const json_t *b)
{
    if (json_is_number(a) && json_is_number(b)) {
        return fabs(json_number_value(a) - json_number_value(b)) < 1e-9;
    }
    if (json_typeof(a) != json_typeof(b)) {
        return 0;
    }
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b)) {
            return 0;
        }
        for (size_t i = 0; i < json_array_size(a); i++) {
            if (!json_same(json_array_get(a, i), json_array_get(b, i))) {
                return 0;
            }
        }
        return 1;
    }
    if (json_is_object(a)) {
        const char *k;
        json_t *v;
        if (json_object_size(a) != json_object_size(b)) {
            return 0;
        }
        json_object_foreach((json_t *)a, k, v)
        {
            json_t *w = json_object_get(b, k);
            if (w == NULL || !json_same(v, w)) {
                return 0;
            }
        }
        return 1;
    }
    if (json_is_string(a)) {
        return json_string_length(a) == json_string_length(b) &&
               memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
    }
    return json_equal((json_t *)a, (json_t *)b);
}

/* Joins an array of strings with ", " (several field lines combine that way, RFC 9110 §5.3). */
static char *join_lines(const json_t *arr, size_t *len)
{
    size_t n = 0;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        n += json_string_length(json_array_get(arr, i)) + 2;
    }
    char *s = malloc(n + 1);
    size_t o = 0;
    for (size_t i = 0; i < json_array_size(arr); i++) {
        if (i > 0) {
            memcpy(s + o, ", ", 2);
            o += 2;
        }
        const json_t *l = json_array_get(arr, i);
        memcpy(s + o, json_string_value(l), json_string_length(l));
        o += json_string_length(l);
    }
    s[o] = '\0';
    *len = o;
    return s;
}

static void run_case(const char *file, const json_t *tc)
{
    const char *name = json_string_value(json_object_get(tc, "name"));
    const char *ht = json_string_value(json_object_get(tc, "header_type"));
    bool must_fail = json_is_true(json_object_get(tc, "must_fail"));
    bool can_fail = json_is_true(json_object_get(tc, "can_fail"));
    enum sf_field_type type = strcmp(ht, "item") == 0   ? SF_FIELD_ITEM
                              : strcmp(ht, "list") == 0 ? SF_FIELD_LIST
                                                        : SF_FIELD_DICT;
    size_t rawlen;
    char *raw = join_lines(json_object_get(tc, "raw"), &rawlen);
    struct sf_field f;
    int rc = sf_parse(raw, rawlen, type, &f);
    bool ok;
    const char *why = "";
    cases_total++;
    if (must_fail) {
        ok = rc != 0;
        why = "parsed but must fail";
    } else if (rc != 0) {
        ok = can_fail;
        why = "failed to parse";
    } else {
        json_t *got = field_json(&f);
        ok = json_same(got, json_object_get(tc, "expected"));
        why = "value differs";
        if (ok) {
            const json_t *canon = json_object_get(tc, "canonical");
            size_t wantlen;
            char *want = join_lines(canon != NULL ? canon : json_object_get(tc, "raw"), &wantlen);
            char *ser = NULL;
            size_t serlen = 0;
            ok = sf_serialize(&f, &ser, &serlen) == 0 && serlen == wantlen &&
                 memcmp(ser, want, wantlen) == 0;
            why = "serialization differs";
            if (!ok) {
                fprintf(stderr, "  serialized \"%s\" want \"%s\"\n", ser ? ser : "(fail)", want);
            }
            free(ser);
            free(want);
        } else {
            char *g = json_dumps(got, JSON_COMPACT);
            fprintf(stderr, "  got %s\n", g);
            free(g);
        }
        json_decref(got);
        sf_field_cleanup(&f);
    }
    if (ok) {
        cases_passed++;
    } else {
        fprintf(stderr, "%s: \"%s\": %s (raw \"%s\")\n", file, name, why, raw);
    }
    CHECK(ok);
    free(raw);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_sf_httpwg_suite(void)
{
    DIR *d = opendir(SF_TESTS_DIR);
    CHECK(d != NULL);
    if (d == NULL) {
        return;
    }
    char *names[64];
    size_t n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && n < 64) {
        size_t l = strlen(e->d_name);
        if (l > 5 && strcmp(e->d_name + l - 5, ".json") == 0) {
            names[n++] = strdup(e->d_name);
        }
    }
    closedir(d);
    qsort(names, n, sizeof names[0], cmp_str);
    CHECK(n >= 15);
    for (size_t i = 0; i < n; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", SF_TESTS_DIR, names[i]);
        json_error_t jerr;
        json_t *cases = json_load_file(path, 0, &jerr);
        CHECK(json_is_array(cases));
        for (size_t k = 0; k < json_array_size(cases); k++) {
            run_case(names[i], json_array_get(cases, k));
        }
        json_decref(cases);
        free(names[i]);
    }
    printf("structured-field-tests: %d/%d cases pass\n", cases_passed, cases_total);
    CHECK(cases_total >= 235);
    CHECK_EQ(cases_passed, cases_total);
}

static void test_sf_limits(void)
{
    struct sf_field f;
    /* SF_MAX_MEMBERS members parse; one more does not. */
    size_t cap = 4 * (SF_MAX_MEMBERS + 2);
    char *buf = malloc(cap);
    size_t o = 0;
    for (int i = 0; i < SF_MAX_MEMBERS; i++) {
        o += (size_t)snprintf(buf + o, cap - o, "%s1", i ? "," : "");
    }
    CHECK_EQ(sf_parse(buf, o, SF_FIELD_LIST, &f), 0);
    CHECK_EQ(f.n_members, SF_MAX_MEMBERS);
    sf_field_cleanup(&f);
    o += (size_t)snprintf(buf + o, cap - o, ",2");
    CHECK_EQ(sf_parse(buf, o, SF_FIELD_LIST, &f), -1);
    free(buf);
    /* Over-long input is refused before parsing. */
    char *big = malloc(SF_MAX_INPUT_BYTES + 1);
    memset(big, 'a', SF_MAX_INPUT_BYTES + 1);
    CHECK_EQ(sf_parse(big, SF_MAX_INPUT_BYTES + 1, SF_FIELD_ITEM, &f), -1);
    CHECK_EQ(sf_parse(big, SF_MAX_INPUT_BYTES, SF_FIELD_ITEM, &f), 0);
    CHECK_EQ(f.members[0].value.len, SF_MAX_INPUT_BYTES);
    sf_field_cleanup(&f);
    free(big);
    /* Keys: 64 bytes fine, 65 not. */
    char key[80];
    memset(key, 'k', sizeof key);
    CHECK_EQ(sf_parse(key, SF_MAX_KEY_BYTES, SF_FIELD_DICT, &f), 0);
    sf_field_cleanup(&f);
    CHECK_EQ(sf_parse(key, SF_MAX_KEY_BYTES + 1, SF_FIELD_DICT, &f), -1);
    /* Not NUL-terminated input: the parser stays inside len. */
    const char s[] = "abc;x=1XYZ";
    CHECK_EQ(sf_parse(s, 7, SF_FIELD_ITEM, &f), 0);
    CHECK_EQ(f.members[0].value.params[0].value.num, 1);
    sf_field_cleanup(&f);
    /* An embedded NUL is not whitespace nor any token character. */
    CHECK_EQ(sf_parse("a\0b", 3, SF_FIELD_ITEM, &f), -1);
}

static void test_sf_lookups_and_copy(void)
{
    const char *in = "sig1=(\"@method\" \"@path\");created=1618884473;keyid=\"k\", sig2=:AAEC:";
    struct sf_field f;
    CHECK_EQ(sf_parse(in, strlen(in), SF_FIELD_DICT, &f), 0);
    const struct sf_item *s1 = sf_dict_get(&f, "sig1");
    CHECK(s1 != NULL && s1->type == SF_INNER_LIST && s1->n_inner == 2);
    CHECK(sf_dict_get(&f, "sig3") == NULL);
    const struct sf_item *created = sf_param_get(s1, "created");
    CHECK(created != NULL && created->type == SF_INTEGER && created->num == 1618884473);
    const struct sf_item *s2 = sf_dict_get(&f, "sig2");
    CHECK(s2 != NULL && s2->type == SF_BYTES && s2->len == 3 && s2->str[2] == 2);
    struct sf_item copy;
    CHECK_EQ(sf_item_copy(&copy, s1), 0);
    char *a = NULL, *b = NULL;
    CHECK_EQ(sf_serialize_item(s1, &a, NULL), 0);
    CHECK_EQ(sf_serialize_item(&copy, &b, NULL), 0);
    CHECK_STREQ(a, "(\"@method\" \"@path\");created=1618884473;keyid=\"k\"");
    CHECK_STREQ(a, b);
    free(a);
    free(b);
    sf_item_cleanup(&copy);
    sf_field_cleanup(&f);
}

static void test_sf_serializer_refuses_invalid(void)
{
    char *out = NULL;
    struct sf_item it = {.type = SF_INTEGER, .num = 1000000000000000LL};
    CHECK_EQ(sf_serialize_item(&it, &out, NULL), -1);
    char tok[] = "1abc";
    struct sf_item t = {.type = SF_TOKEN, .str = tok, .len = 4};
    CHECK_EQ(sf_serialize_item(&t, &out, NULL), -1);
    char str[] = "a\nb";
    struct sf_item s = {.type = SF_STRING, .str = str, .len = 3};
    CHECK_EQ(sf_serialize_item(&s, &out, NULL), -1);
    struct sf_item d = {.type = SF_DECIMAL, .num = -500};
    CHECK_EQ(sf_serialize_item(&d, &out, NULL), 0);
    CHECK_STREQ(out, "-0.5");
    free(out);
}

static void test_sf_base64_strictness(void)
{
    unsigned char *o = NULL;
    size_t n = 0;
    /* RFC 9530's printed "…Dg==" (45 chars) over-pads a 32-byte value: refused. */
    const char *bad = "RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg==";
    CHECK_EQ(sf_base64_decode(bad, strlen(bad), &o, &n), -1);
    const char *good = "RK/0qy18MlBSVnWgjwz6lZEWjP/lF5HF9bvEF8FabDg=";
    CHECK_EQ(sf_base64_decode(good, strlen(good), &o, &n), 0);
    CHECK_EQ(n, 32);
    free(o);
}

int main(void)
{
    RUN(test_sf_httpwg_suite);
    RUN(test_sf_limits);
    RUN(test_sf_lookups_and_copy);
    RUN(test_sf_serializer_refuses_invalid);
    RUN(test_sf_base64_strictness);
    return check_summary();
}
