/* SPDX-License-Identifier: MIT */
/* Hostile JSON bodies against the real roostd (tests/data/hostile/cases.tsv, J01–J41): every body
 * POSTed to /inbox/claim with the precise error code, the large cases built in memory, then the
 * body limits (413), media types (415), unknown fields and field-level validation of every write
 * route. Afterwards the daemon still answers /healthz and exits 0 on SIGTERM. */
#include <stdlib.h>

#include "harness/harness.h"

#include "common/banned.h"

static struct roostd d;
static char *tok;

#define CLAIM "/api/v1/agents/json.a/inbox/claim"

struct jcase {
    const char *id;
    const char *file; /* body/<file>.json */
    int status;
    const char *code;   /* NULL for a 2xx */
    const char *choice; /* where cases.tsv allows two answers */
};

/* The vectors carry a "cursor" field; the claim's integer field of the same length is "wait_s"
 * (0…claim.max_wait_s), so each body is sent with "cursor" renamed to it: byte offsets, lengths
 * and the hostile bytes stay as they are. */
/* clang-format off */
static const struct jcase jcases[] = {
    {"J01", "valid-baseline", 200, NULL, NULL},
    {"J02", "malformed-trailing-comma", 400, "invalid_json", NULL},
    {"J03", "malformed-unterminated", 400, "invalid_json", NULL},
    {"J04", "malformed-single-quotes", 400, "invalid_json", NULL},
    {"J05", "malformed-comment", 400, "invalid_json", NULL},
    {"J06", "malformed-nan", 400, "invalid_json", NULL},
    {"J07", "number-1e999-overflows-double", 400, "invalid_json", "refused by the parser"},
    {"J08", "malformed-leading-zero", 400, "invalid_json", NULL},
    {"J09", "bom-prefixed", 400, "invalid_json", "reject the BOM (RFC 8259 8.1 MUST NOT add)"},
    {"J10", "empty", 400, "invalid_json", NULL},
    {"J11", "top-level-array", 400, "invalid_body", NULL},
    {"J12", "top-level-scalar", 400, "invalid_body", NULL},
    {"J13", "duplicate-keys", 400, "invalid_json", NULL},
    {"J14", "deep-nesting-arrays-100k", 400, "json_too_deep", NULL},
    {"J15", "deep-nesting-objects-10k", 400, "json_too_deep", NULL},
    {"J20", "int-beyond-2p53", 400, "invalid_wait_s", NULL},
    {"J21", "int-beyond-int64", 400, "invalid_json", NULL},
    {"J22", "negative-zero", 200, NULL, "-0 is the integer 0 (documented)"},
    {"J23", "float-cursor", 400, "invalid_wait_s", NULL},
    {"J24", "cursor-as-string", 400, "invalid_wait_s", NULL},
    {"J25", "null-cursor", 200, NULL, "null for an optional field means absent (documented)"},
    {"J26", "unknown-field", 400, "unknown_field", "strict: unknown fields are refused"},
    {"J27", "nul-escape-in-string", 400, "invalid_json", NULL},
    {"J28", "lone-high-surrogate-escape", 400, "invalid_json", NULL},
    {"J29", "lone-low-surrogate-escape", 400, "invalid_json", NULL},
    {"J30", "invalid-escape", 400, "invalid_json", NULL},
    {"J31", "raw-control-char", 400, "invalid_json", NULL},
    {"J32", "utf8-overlong-slash", 400, "invalid_json", NULL},
    {"J33", "utf8-overlong-nul", 400, "invalid_json", NULL},
    {"J34", "utf8-surrogate-d800", 400, "invalid_json", NULL},
    {"J35", "utf8-above-10ffff", 400, "invalid_json", NULL},
    {"J36", "utf8-truncated-3byte", 400, "invalid_json", NULL},
    {"J37", "utf8-lone-continuation", 400, "invalid_json", NULL},
    {"J38", "utf8-byte-ff", 400, "invalid_json", NULL},
    {"J39", "utf8-5byte-form", 400, "invalid_json", NULL},
    {"J40", "latin1-e9", 400, "invalid_json", NULL},
    {"J41", "utf16le-body", 400, "invalid_json", NULL},
};
/* clang-format on */

static void post_body(const char *path, const char *body, size_t len, const char *content_type,
                      struct h_response *r)
{
    struct h_req_opts opts = {.content_type = content_type};
    h_request(d.http, "POST", path, tok, body, len, &opts, r);
}

/* An over-cap body: the client announces it with "Expect: 100-continue" and waits, so the 413
 * (sent on the header alone) is not lost to a reset while the client is still uploading. */
static void post_over_cap(const char *path, const char *body, size_t len, struct h_response *r)
{
    struct h_req_opts opts = {.extra_header = "Expect: 100-continue"};
    h_request(d.http, "POST", path, tok, body, len, &opts, r);
}

static void expect(const char *label, const struct h_response *r, int status, const char *code)
{
    CHECK_CASE(label, r->status == status);
    if (code) {
        CHECK_CASE(label, h_error_code(r->json) && strcmp(h_error_code(r->json), code) == 0);
    }
    if (r->status != status ||
        (code && !(h_error_code(r->json) && strcmp(h_error_code(r->json), code) == 0))) {
        fprintf(stderr, "  [%s] got %ld %.200s\n", label, r->status, r->body ? r->body : "");
    }
}

static void test_json_body_cases(void)
{
    for (size_t i = 0; i < sizeof jcases / sizeof jcases[0]; i++) {
        const struct jcase *c = &jcases[i];
        char *path = h_fmt("%s/data/hostile/body/%s.json", TESTS_DIR, c->file);
        char *data = NULL;
        size_t len = 0;
        CHECK_CASE(c->id, h_read_file(path, &data, &len) == 0);
        free(path);
        if (!data) {
            continue;
        }
        /* As the vector is: there is no "cursor" in a claim, so never a 2xx and never a 5xx. */
        struct h_response r;
        post_body(CLAIM, data, len, NULL, &r);
        CHECK_CASE(c->id, r.status >= 400 && r.status < 500);
        h_response_cleanup(&r);
        for (size_t k = 0; k + 8 <= len; k++) {
            if (memcmp(data + k, "\"cursor\"", 8) == 0) {
                memcpy(data + k, "\"wait_s\"", 8);
            }
        }
        post_body(CLAIM, data, len, NULL, &r);
        expect(c->id, &r, c->status, c->code);
        /* Error bodies never echo the input back. */
        if (r.status >= 400 && len > 8) {
            CHECK_CASE(c->id, strstr(r.body, "wait_s\":") == NULL);
        }
        if (strcmp(c->id, "J26") == 0) {
            CHECK_STREQ(h_str(json_object_get(r.json, "error"), "field"), "is_admin");
        }
        if (c->choice) {
            printf("%s: %s\n", c->id, c->choice);
        }
        h_response_cleanup(&r);
        free(data);
    }
}

/* J16–J19: the generator writes them only with --large; build them here. */
static char *repeat(const char *head, const char *unit, size_t n, const char *tail, size_t *len)
{
    size_t hl = strlen(head), ul = strlen(unit), tl = strlen(tail);
    *len = hl + ul * n + tl;
    char *s = malloc(*len + 1);
    memcpy(s, head, hl);
    for (size_t i = 0; i < n; i++) {
        memcpy(s + hl + i * ul, unit, ul);
    }
    memcpy(s + hl + ul * n, tail, tl + 1);
    return s;
}

static void test_json_large_cases(void)
{
    size_t len;
    struct h_response r;
    /* J16: 1M unclosed '[' (just under the 1 MiB body cap here): depth, not a stack overflow. */
    char *b = repeat("", "[", 1000000, "", &len);
    post_body(CLAIM, b, len, NULL, &r);
    expect("J16", &r, 400, "json_too_deep");
    h_response_cleanup(&r);
    free(b);
    /* J17: an 8 MiB string: over the body cap, refused before parsing. */
    b = repeat("{\"note\":\"", "AAAAAAAAAAAAAAAA", 512 * 1024, "\"}", &len);
    post_over_cap(CLAIM, b, len, &r);
    expect("J17", &r, 413, NULL);
    h_response_cleanup(&r);
    free(b);
    /* J18/J19: a million-element array, 200k keys: over the cap as well (413). */
    b = repeat("{\"ids\":[0", ",0", 999999, "]}", &len);
    post_over_cap(CLAIM, b, len, &r);
    expect("J18", &r, 413, NULL);
    h_response_cleanup(&r);
    free(b);
    b = repeat("{\"k0\":0", ",\"kx\":0", 199999, "}", &len);
    post_over_cap(CLAIM, b, len, &r);
    expect("J19", &r, 413, NULL);
    h_response_cleanup(&r);
    free(b);
    /* Under the cap, 50k distinct keys parse and are refused as unknown fields. */
    size_t cap = 50000 * 12 + 16, n = 0;
    b = malloc(cap);
    n += (size_t)snprintf(b + n, cap - n, "{");
    for (int i = 0; i < 50000; i++) {
        n += (size_t)snprintf(b + n, cap - n, "%s\"k%d\":0", i ? "," : "", i);
    }
    n += (size_t)snprintf(b + n, cap - n, "}");
    post_body(CLAIM, b, n, NULL, &r);
    expect("J19 under the cap", &r, 400, "unknown_field");
    h_response_cleanup(&r);
    free(b);
}

/* ---- limits, media types, unknown fields, field validation ---- */

static void test_json_body_and_payload_limits(void)
{
    struct h_response r;
    size_t len;
    /* Just over limits.max_body_bytes (1 MiB here). */
    char *b =
        repeat("{\"recipients\":[\"lim.a\"],\"payload\":{\"s\":\"", "x", 1048576, "\"}}", &len);
    post_over_cap("/api/v1/events", b, len, &r);
    expect("body over the cap", &r, 413, NULL);
    h_response_cleanup(&r);
    free(b);
    /* Payload limit (1024 bytes of compact JSON here): {"s":"…"} is 8 + n bytes. */
    b = repeat("{\"recipients\":[\"lim.a\"],\"payload\":{\"s\":\"", "x", 1016, "\"}}", &len);
    post_body("/api/v1/events", b, len, NULL, &r);
    expect("payload at the limit", &r, 201, NULL);
    h_response_cleanup(&r);
    free(b);
    b = repeat("{\"recipients\":[\"lim.a\"],\"payload\":{\"s\":\"", "x", 1017, "\"}}", &len);
    post_body("/api/v1/events", b, len, NULL, &r);
    expect("payload over the limit", &r, 413, "payload_too_large");
    h_response_cleanup(&r);
    free(b);
    b = repeat("{\"recipients\":[\"lim.a\"],\"state_patch\":{\"s\":\"", "x", 2000, "\"}}", &len);
    post_body("/api/v1/events", b, len, NULL, &r);
    expect("state_patch over the limit", &r, 413, "payload_too_large");
    h_response_cleanup(&r);
    free(b);
    /* Depth: limits.max_json_depth (32) counts the body's own object. */
    for (int nested = 31; nested <= 32; nested++) {
        size_t l1, l2;
        char *open_part = repeat("", "{\"a\":", (size_t)nested, "", &l1);
        char *close_part = repeat("", "}", (size_t)nested, "", &l2);
        char *full = h_fmt("{\"recipients\":[\"lim.b\"],\"payload\":%s1%s}", open_part, close_part);
        post_body("/api/v1/events", full, strlen(full), NULL, &r);
        expect(nested == 31 ? "depth 32" : "depth 33", &r, nested == 31 ? 201 : 400,
               nested == 31 ? NULL : "json_too_deep");
        h_response_cleanup(&r);
        free(full);
        free(close_part);
        free(open_part);
    }
    /* Nothing of the refused ones was written. */
    long st;
    json_t *page = h_inbox(d.http, tok, "lim.a", 0, 10, &st);
    CHECK_EQ(h_int(page, "head"), 1);
    json_decref(page);
}

static void test_json_media_types(void)
{
    static const char body[] = "{\"limit\":1}";
    struct {
        const char *ct;
        int status;
    } cases[] = {
        {"text/plain", 415},
        {"application/x-www-form-urlencoded", 415},
        {"application/json; charset=latin1", 415},
        {"application/jsonx", 415},
        {"multipart/form-data; boundary=x", 415},
        {"", 415}, /* a body without a Content-Type */
        {"application/json", 200},
        {"application/json;charset=UTF-8", 200},
        {"Application/JSON; charset=utf-8", 200},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct h_response r;
        post_body(CLAIM, body, strlen(body), cases[i].ct, &r);
        expect(cases[i].ct[0] ? cases[i].ct : "(none)", &r, cases[i].status,
               cases[i].status == 415 ? "unsupported_media_type" : NULL);
        h_response_cleanup(&r);
    }
}

struct fcase {
    const char *label;
    const char *path;
    const char *body;
    int status;
    const char *code;
};

#define EVT "evt_01ARZ3NDEKTSV4RRFFQ69G5FAV"
#define LT "lt_00000000000000000000000000"

/* clang-format off */
static const struct fcase fcases[] = {
    {"claim unknown", CLAIM, "{\"is_admin\":true}", 400, "unknown_field"},
    {"claim limit 0", CLAIM, "{\"limit\":0}", 400, "invalid_limit"},
    {"claim limit 1001", CLAIM, "{\"limit\":1001}", 400, "invalid_limit"},
    {"claim limit 1.0", CLAIM, "{\"limit\":1.0}", 400, "invalid_limit"},
    {"claim limit true", CLAIM, "{\"limit\":true}", 400, "invalid_limit"},
    {"claim lease_s 0", CLAIM, "{\"lease_s\":0}", 400, "invalid_lease_s"},
    {"claim lease_s max+1", CLAIM, "{\"lease_s\":43201}", 400, "invalid_lease_s"},
    {"claim wait_s 31", CLAIM, "{\"wait_s\":31}", 400, "invalid_wait_s"},
    {"claim consumer space", CLAIM, "{\"consumer\":\"a b\"}", 400, "invalid_consumer"},
    {"claim consumer empty", CLAIM, "{\"consumer\":\"\"}", 400, "invalid_consumer"},
    {"claim consumer number", CLAIM, "{\"consumer\":7}", 400, "invalid_consumer"},
    {"claim ok", CLAIM, "{\"limit\":1,\"lease_s\":30,\"wait_s\":0,\"consumer\":\"h:1\"}", 200, NULL},
    {"publish unknown", "/api/v1/events", "{\"recipients\":[\"f.a\"],\"admin\":1}", 400,
     "unknown_field"},
    {"publish batch unknown", "/api/v1/events", "{\"events\":[{\"recipients\":[\"f.a\"],\"x\":1}]}",
     400, "unknown_field"},
    {"publish batch + field", "/api/v1/events", "{\"events\":[{\"recipients\":[\"f.a\"]}],\"x\":1}",
     400, "invalid_batch"},
    {"publish batch empty", "/api/v1/events", "{\"events\":[]}", 400, "invalid_batch"},
    {"publish batch not list", "/api/v1/events", "{\"events\":{}}", 400, "invalid_batch"},
    {"publish batch item", "/api/v1/events", "{\"events\":[7]}", 400, "invalid_batch"},
    {"publish no recipients", "/api/v1/events", "{\"payload\":{}}", 400, "invalid_recipients"},
    {"publish recipients str", "/api/v1/events", "{\"recipients\":\"f.a\"}", 400,
     "invalid_recipients"},
    {"publish recipients []", "/api/v1/events", "{\"recipients\":[]}", 400, "invalid_recipients"},
    {"publish recipient colon", "/api/v1/events", "{\"recipients\":[\"a:b\"]}", 400,
     "invalid_recipients"},
    {"publish payload array", "/api/v1/events", "{\"recipients\":[\"f.a\"],\"payload\":[1]}", 400,
     "invalid_payload"},
    {"publish payload string", "/api/v1/events", "{\"recipients\":[\"f.a\"],\"payload\":\"x\"}",
     400, "invalid_payload"},
    {"publish priority str", "/api/v1/events", "{\"recipients\":[\"f.a\"],\"priority\":\"1\"}", 400,
     "invalid_priority"},
    {"publish priority -101", "/api/v1/events", "{\"recipients\":[\"f.a\"],\"priority\":-101}", 400,
     "invalid_priority"},
    {"publish idem empty", "/api/v1/events", "{\"recipients\":[\"f.a\"],\"idempotency_key\":\"\"}",
     400, "invalid_idempotency_key"},
    {"publish corr number", "/api/v1/events", "{\"recipients\":[\"f.a\"],\"correlation_id\":1}", 400,
     "invalid_correlation_id"},
    {"publish delay -1", "/api/v1/events", "{\"recipients\":[\"f.a\"],\"delay_s\":-1}", 400,
     "invalid_available_at"},
    {"publish available_at bad", "/api/v1/events",
     "{\"recipients\":[\"f.a\"],\"available_at\":\"2026-13-45T99:00:00Z\"}", 400,
     "invalid_available_at"},
    {"publish ttl 0", "/api/v1/events", "{\"recipients\":[\"f.a\"],\"ttl_s\":0}", 400,
     "invalid_expires_at"},
    {"publish expires_at bad", "/api/v1/events",
     "{\"recipients\":[\"f.a\"],\"expires_at\":\"yesterday\"}", 400, "invalid_expires_at"},
    {"publish expires in past", "/api/v1/events",
     "{\"recipients\":[\"f.a\"],\"expires_at\":\"2001-01-01T00:00:00.000Z\"}", 400,
     "invalid_expires_at"},
    {"publish NUL in payload", "/api/v1/events",
     "{\"recipients\":[\"f.a\"],\"payload\":{\"s\":\"a\\u0000b\"}}", 400, "invalid_json"},
    {"ack unknown", "/api/v1/agents/json.a/inbox/" EVT "/ack",
     "{\"lease_token\":\"" LT "\",\"x\":1}", 400, "unknown_field"},
    {"ack no token", "/api/v1/agents/json.a/inbox/" EVT "/ack", "{}", 400, "invalid_lease_token"},
    {"ack bad token", "/api/v1/agents/json.a/inbox/" EVT "/ack", "{\"lease_token\":\"lt_x\"}", 400,
     "invalid_lease_token"},
    {"ack token number", "/api/v1/agents/json.a/inbox/" EVT "/ack", "{\"lease_token\":1}", 400,
     "invalid_lease_token"},
    {"batch ack empty", "/api/v1/agents/json.a/inbox/ack", "{\"acks\":[]}", 400, "invalid_acks"},
    {"batch ack item field", "/api/v1/agents/json.a/inbox/ack",
     "{\"acks\":[{\"event_id\":\"" EVT "\",\"lease_token\":\"" LT "\",\"x\":1}]}", 400,
     "invalid_acks"},
    {"batch ack bad id", "/api/v1/agents/json.a/inbox/ack",
     "{\"acks\":[{\"event_id\":\"evt_x\",\"lease_token\":\"" LT "\"}]}", 400, "invalid_event_id"},
    {"release delay -1", "/api/v1/agents/json.a/inbox/" EVT "/release",
     "{\"lease_token\":\"" LT "\",\"delay_s\":-1}", 400, "invalid_delay_s"},
    {"release reason", "/api/v1/agents/json.a/inbox/" EVT "/release",
     "{\"lease_token\":\"" LT "\",\"reason\":\"later\"}", 400, "invalid_reason"},
    {"release error type", "/api/v1/agents/json.a/inbox/" EVT "/release",
     "{\"lease_token\":\"" LT "\",\"error\":[]}", 400, "invalid_error"},
    {"extend lease_s", "/api/v1/agents/json.a/inbox/" EVT "/extend",
     "{\"lease_token\":\"" LT "\",\"lease_s\":-5}", 400, "invalid_lease_s"},
    {"release-all consumer", "/api/v1/agents/json.a/inbox/release-all", "{\"consumer\":\"a b\"}",
     400, "invalid_consumer"},
    {"release-all unknown", "/api/v1/agents/json.a/inbox/release-all", "{\"all\":true}", 400,
     "unknown_field"},
    {"requeue body", "/api/v1/admin/quarantine/" EVT "/requeue", "{\"x\":1}", 400,
     "unknown_field"},
};
/* clang-format on */

static void test_json_field_validation(void)
{
    for (size_t i = 0; i < sizeof fcases / sizeof fcases[0]; i++) {
        struct h_response r;
        post_body(fcases[i].path, fcases[i].body, strlen(fcases[i].body), NULL, &r);
        expect(fcases[i].label, &r, fcases[i].status, fcases[i].code);
        h_response_cleanup(&r);
    }
    /* An error text at the 4096-byte cap and one over it. */
    size_t len;
    char *b = repeat("{\"lease_token\":\"" LT "\",\"error\":\"", "e", 4097, "\"}", &len);
    struct h_response r;
    post_body("/api/v1/agents/json.a/inbox/" EVT "/release", b, len, NULL, &r);
    expect("release error too long", &r, 400, "invalid_error");
    h_response_cleanup(&r);
    free(b);
    b = repeat("{\"recipients\":[\"f.a\"],\"correlation_id\":\"", "c", 257, "\"}", &len);
    post_body("/api/v1/events", b, len, NULL, &r);
    expect("correlation_id too long", &r, 400, "invalid_correlation_id");
    h_response_cleanup(&r);
    free(b);
    /* A POST that takes parameters needs a body. */
    h_request(d.http, "POST", CLAIM, tok, NULL, 0, NULL, &r);
    expect("claim without body", &r, 400, "invalid_json");
    h_response_cleanup(&r);
}

int main(void)
{
    h_init();
    static const char *const sets[] = {"limits.max_body_bytes=1048576",
                                       "limits.max_payload_bytes=1024", "store.synchronous=normal",
                                       NULL};
    if (!roostd_start_checked(&d, NULL, sets)) {
        return h_summary();
    }
    tok = h_token(&d, "t1", "agent:*:consume agent:*:publish tenant:admin");
    RUN(test_json_body_cases);
    RUN(test_json_large_cases);
    RUN(test_json_body_and_payload_limits);
    RUN(test_json_media_types);
    RUN(test_json_field_validation);
    CHECK(roostd_alive(&d));
    long st = 0;
    http_request(d.http, "GET", "/healthz", NULL, NULL, &st, NULL);
    CHECK_EQ(st, 200);
    free(tok);
    roostd_finish(&d);
    return h_summary();
}
