/* SPDX-License-Identifier: MIT */
/* Authentication, scopes and tenant isolation against the real roostd (DESIGN §6.1, §4.4.6 and
 * the hostile-input cases S01–S05, P14). Every request about another tenant's agent or event must
 * answer exactly as one about an agent or event that never existed. */
#include <openssl/evp.h>
#include <stdlib.h>
#include <time.h>

#include "harness/harness.h"
#include "proto/jwt.h"

#include "common/banned.h"

static struct roostd d;

#define NEVER_EVENT "evt_01ARZ3NDEKTSV4RRFFQ69G5FAV"
#define ZERO_TOKEN "lt_00000000000000000000000000"

static long get_status(const char *path, const char *token, json_t **out)
{
    return h_callj(d.http, "GET", token, NULL, out, "%s", path);
}

/* ---- 401 ---- */

static void check_401(const char *label, const char *authz_header)
{
    struct h_req_opts opts = {.extra_header = authz_header};
    struct h_response r;
    CHECK_CASE(label, h_request(d.http, "GET", "/api/v1/agents/auth.a/inbox", NULL, NULL, 0,
                                authz_header ? &opts : NULL, &r) == 0);
    CHECK_CASE(label, r.status == 401);
    CHECK_CASE(label, h_error_code(r.json) && strcmp(h_error_code(r.json), "unauthenticated") == 0);
    char www[128];
    CHECK_CASE(label,
               h_header(&r, "WWW-Authenticate", www, sizeof www) && strncmp(www, "Bearer", 6) == 0);
    h_response_cleanup(&r);
}

/* check_401 for a token over `claims` (stolen) signed with roostd's own key. */
static void check_claims_401(const char *label, json_t *claims)
{
    char *tok = h_token_claims(&d, claims);
    char *hdr = h_fmt("Authorization: Bearer %s", tok);
    check_401(label, hdr);
    free(hdr);
    free(tok);
    json_decref(claims);
}

static char *b64(const char *text)
{
    char *out = NULL;
    jwt_b64url_encode((const unsigned char *)text, strlen(text), &out);
    return out;
}

static void test_auth_unauthenticated_requests_get_401(void)
{
    json_int_t now = (json_int_t)time(NULL);
    check_401("S01 no Authorization", NULL);
    check_401("garbage", "Authorization: Bearer abc.def.ghi");
    check_401("not a JWT", "Authorization: Bearer nonsense");
    check_401("empty bearer", "Authorization: Bearer ");
    check_401("Basic scheme", "Authorization: Basic dXNlcjpwYXNz");

    /* S02: alg none, with and without a signature part. */
    char *h = b64("{\"alg\":\"none\",\"typ\":\"JWT\"}");
    char *claims_text = h_fmt("{\"tenant\":\"t1\",\"sub\":\"x\",\"scope\":\"agent:*:consume\","
                              "\"exp\":%lld}",
                              (long long)now + 3600);
    char *c = b64(claims_text);
    char *hdr = h_fmt("Authorization: Bearer %s.%s.", h, c);
    check_401("S02 alg none", hdr);
    free(hdr);
    /* The same claims with a real signature but the header swapped to none afterwards. */
    json_t *claims = json_loads(claims_text, 0, NULL);
    char *good = h_token_claims(&d, claims);
    const char *dot = strchr(good, '.');
    hdr = h_fmt("Authorization: Bearer %s%s", h, dot ? dot : "");
    check_401("S02 alg none with signature", hdr);
    free(hdr);
    /* The unmodified token is fine (control). */
    long st = get_status("/api/v1/agents/auth.a/inbox", good, NULL);
    CHECK_EQ(st, 200);
    /* A flipped signature byte is not. */
    good[strlen(good) - 2] = good[strlen(good) - 2] == 'A' ? 'B' : 'A';
    hdr = h_fmt("Authorization: Bearer %s", good);
    check_401("tampered signature", hdr);
    free(hdr);
    free(good);
    json_decref(claims);
    free(c);
    free(claims_text);
    free(h);

    /* S03: expired beyond the 60 s skew; no exp at all. */
    check_claims_401("S03 expired", json_pack("{s:s, s:s, s:I}", "tenant", "t1", "scope",
                                              "agent:*:consume", "exp", now - 3600));
    check_claims_401("no exp", json_pack("{s:s, s:s}", "tenant", "t1", "scope", "agent:*:consume"));
    /* Within the skew it is still accepted. */
    claims =
        json_pack("{s:s, s:s, s:I}", "tenant", "t1", "scope", "agent:*:consume", "exp", now - 10);
    char *tok = h_token_claims(&d, claims);
    CHECK_EQ(get_status("/api/v1/agents/auth.a/inbox", tok, NULL), 200);
    free(tok);
    json_decref(claims);
    /* Not yet valid (nbf beyond the skew). */
    check_claims_401("nbf in the future",
                     json_pack("{s:s, s:s, s:I, s:I}", "tenant", "t1", "scope", "agent:*:consume",
                               "exp", now + 7200, "nbf", now + 3600));
    /* No tenant, or a tenant that is not a valid name. */
    check_claims_401("no tenant",
                     json_pack("{s:s, s:I}", "scope", "agent:*:consume", "exp", now + 3600));
    check_claims_401("bad tenant", json_pack("{s:s, s:s, s:I}", "tenant", "a:b", "scope",
                                             "agent:*:consume", "exp", now + 3600));

    /* Signed by another Ed25519 key. */
    EVP_PKEY *other = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
    claims =
        json_pack("{s:s, s:s, s:I}", "tenant", "t1", "scope", "agent:*:consume", "exp", now + 3600);
    tok = NULL;
    CHECK(jwt_sign_eddsa(claims, other, NULL, &tok) == 0);
    hdr = h_fmt("Authorization: Bearer %s", tok ? tok : "");
    check_401("foreign key", hdr);
    free(hdr);
    free(tok);
    json_decref(claims);
    EVP_PKEY_free(other);

    /* A 401 never depends on the route's content: an unknown agent id format still says 401. */
    struct h_response r;
    h_request(d.http, "GET", "/api/v1/agents/bad%20id/inbox", NULL, NULL, 0, NULL, &r);
    CHECK_EQ(r.status, 401);
    h_response_cleanup(&r);
    h_request(d.http, "GET", "/api/v1/admin/quarantine", NULL, NULL, 0, NULL, &r);
    CHECK_EQ(r.status, 401);
    h_response_cleanup(&r);
}

/* ---- scopes ---- */

/* `res` is read after `st` was computed (the call that fills it is an argument). */
static void expect_forbidden(const char *label, long st, json_t **res)
{
    CHECK_CASE(label, st == 403);
    CHECK_CASE(label, h_error_code(*res) && strcmp(h_error_code(*res), "forbidden") == 0);
    json_decref(*res);
    *res = NULL;
}

static void test_auth_scopes(void)
{
    char *admin = h_token(&d, "t1", "agent:*:consume agent:*:publish tenant:admin");
    char *none = h_token(&d, "t1", "");
    char *other_service = h_token(&d, "t1", "repo:read openid");
    char *read = h_token(&d, "t1", "agent:scope.a:read");
    char *proj = h_token(&d, "t1", "agent:project_a.*:consume");
    char *pub = h_token(&d, "t1", "agent:pub.ok.*:publish");
    json_t *res = NULL;

    /* A token without (our) scopes authenticates but may do nothing. */
    expect_forbidden("no scope", get_status("/api/v1/agents/scope.a/inbox", none, &res), &res);
    expect_forbidden("foreign scopes",
                     get_status("/api/v1/agents/scope.a/inbox", other_service, &res), &res);

    /* read: inbox and state, but no claim. */
    CHECK_EQ(get_status("/api/v1/agents/scope.a/inbox", read, NULL), 200);
    CHECK_EQ(get_status("/api/v1/agents/scope.a/state", read, NULL), 200);
    expect_forbidden(
        "read cannot claim",
        h_callj(d.http, "POST", read, json_pack("{}"), &res, "/api/v1/agents/scope.a/inbox/claim"),
        &res);
    expect_forbidden("read is per agent", get_status("/api/v1/agents/scope.b/inbox", read, &res),
                     &res);
    expect_forbidden("read cannot publish",
                     h_callj(d.http, "POST", read, json_pack("{s:[s]}", "recipients", "scope.a"),
                             &res, "/api/v1/events"),
                     &res);

    /* Project scoping by prefix. */
    h_publish(d.http, admin, "project_a.x", NULL, NULL, NULL);
    h_publish(d.http, admin, "project_b.x", NULL, NULL, NULL);
    json_t *evs = h_claim(d.http, proj, "project_a.x", 10, 30, NULL);
    CHECK_EQ(json_array_size(evs), 1);
    CHECK_EQ(h_ack(d.http, proj, "project_a.x", h_str(h_at(evs, 0), "event_id"),
                   h_str(h_at(evs, 0), "lease_token")),
             200);
    json_decref(evs);
    expect_forbidden("project_b claim",
                     h_callj(d.http, "POST", proj, json_pack("{}"), &res,
                             "/api/v1/agents/project_b.x/inbox/claim"),
                     &res);
    expect_forbidden("project_b read", get_status("/api/v1/agents/project_b.x/inbox", proj, &res),
                     &res);
    expect_forbidden("prefix is literal",
                     get_status("/api/v1/agents/project_ab.x/inbox", proj, &res), &res);
    expect_forbidden("consume does not publish",
                     h_callj(d.http, "POST", proj,
                             json_pack("{s:[s]}", "recipients", "project_a.x"), &res,
                             "/api/v1/events"),
                     &res);
    expect_forbidden("consume is not admin", get_status("/api/v1/admin/quarantine", proj, &res),
                     &res);
    expect_forbidden("consume is not admin (agents)",
                     get_status("/api/v1/admin/agents", proj, &res), &res);

    /* Publish needs the scope for every recipient, and a refusal writes nothing. */
    CHECK_EQ(h_publish(d.http, pub, "pub.ok.1", NULL, NULL, NULL), 1);
    expect_forbidden("publish to one foreign recipient",
                     h_callj(d.http, "POST", pub,
                             json_pack("{s:[s,s]}", "recipients", "pub.ok.1", "pub.other"), &res,
                             "/api/v1/events"),
                     &res);
    expect_forbidden("publish batch with one foreign recipient",
                     h_callj(d.http, "POST", pub,
                             json_pack("{s:[{s:[s]},{s:[s]}]}", "events", "recipients", "pub.ok.1",
                                       "recipients", "pub.other"),
                             &res, "/api/v1/events"),
                     &res);
    long st;
    json_t *page = h_inbox(d.http, admin, "pub.ok.1", 0, 10, &st);
    CHECK_EQ(h_int(page, "head"), 1);
    json_decref(page);
    page = h_inbox(d.http, admin, "pub.other", 0, 10, &st);
    CHECK_EQ(h_int(page, "head"), 0);
    json_decref(page);
    /* Publish does not grant reading. */
    expect_forbidden("publish cannot read", get_status("/api/v1/agents/pub.ok.1/inbox", pub, &res),
                     &res);

    /* S05: a token for agent A used on agent B's path. */
    char *only_a = h_token(&d, "t1", "agent:s05.a:consume");
    CHECK_EQ(get_status("/api/v1/agents/s05.a/inbox", only_a, NULL), 200);
    expect_forbidden("S05", get_status("/api/v1/agents/s05.b/inbox", only_a, &res), &res);
    expect_forbidden(
        "S05 claim",
        h_callj(d.http, "POST", only_a, json_pack("{}"), &res, "/api/v1/agents/s05.b/inbox/claim"),
        &res);
    free(only_a);

    free(admin);
    free(none);
    free(other_service);
    free(read);
    free(proj);
    free(pub);
}

/* ---- tenant isolation ---- */

/* Compares two answers: same status and the same JSON body. */
static void check_same(const char *label, long st_a, json_t *a, long st_b, json_t *b)
{
    CHECK_CASE(label, st_a == st_b);
    CHECK_CASE(label, a != NULL && b != NULL && json_equal(a, b));
    if (!(a && b && json_equal(a, b))) {
        char *ta = a ? json_dumps(a, JSON_COMPACT) : NULL;
        char *tb = b ? json_dumps(b, JSON_COMPACT) : NULL;
        fprintf(stderr, "  [%s] %ld %s\n  vs %ld %s\n", label, st_a, ta ? ta : "-", st_b,
                tb ? tb : "-");
        free(ta);
        free(tb);
    }
    json_decref(a);
    json_decref(b);
}

static void test_auth_tenant_isolation(void)
{
    char *ta = h_token(&d, "tenant_a", "agent:*:consume agent:*:publish tenant:admin");
    char *tb = h_token(&d, "tenant_b", "agent:*:consume agent:*:publish tenant:admin");

    /* Tenant A: three events on iso.a, one claimed, one quarantined, state set. */
    char ids[3][31];
    for (int i = 0; i < 3; i++) {
        h_publish(d.http, ta, "iso.a", json_pack("{s:s}", "secret", "A"),
                  json_pack("{s:{s:s}}", "state_patch", "owner", "A"), ids[i]);
    }
    json_t *claimed = h_claim(d.http, ta, "iso.a", 2, 600, "a-proc");
    CHECK_EQ(json_array_size(claimed), 2);
    const char *a_id = h_str(h_at(claimed, 0), "event_id");
    const char *a_lease = h_str(h_at(claimed, 0), "lease_token");
    const char *q_id = h_str(h_at(claimed, 1), "event_id");
    CHECK_EQ(h_callj(d.http, "POST", ta,
                     json_pack("{s:s, s:s}", "lease_token", h_str(h_at(claimed, 1), "lease_token"),
                               "reason", "poison"),
                     NULL, "/api/v1/agents/iso.a/inbox/%s/release", q_id),
             200);

    long s1, s2;
    json_t *j1, *j2;
    /* Reading A's agent as B looks exactly like reading an agent that never existed. */
    s1 = get_status("/api/v1/agents/iso.a/inbox", tb, &j1);
    s2 = get_status("/api/v1/agents/never.existed/inbox", tb, &j2);
    CHECK_EQ(s1, 200);
    CHECK_EQ(h_int(j1, "head"), 0);
    CHECK_EQ(json_array_size(json_object_get(j1, "events")), 0);
    check_same("inbox", s1, j1, s2, j2);
    s1 = get_status("/api/v1/agents/iso.a/inbox?after_cursor=2", tb, &j1);
    s2 = get_status("/api/v1/agents/never.existed/inbox?after_cursor=2", tb, &j2);
    check_same("inbox after a cursor of A's", s1, j1, s2, j2);
    s1 = get_status("/api/v1/agents/iso.a/state", tb, &j1);
    s2 = get_status("/api/v1/agents/never.existed/state", tb, &j2);
    CHECK_EQ(s1, 200);
    check_same("state", s1, j1, s2, j2);
    s1 = h_callj(d.http, "POST", tb, json_pack("{}"), &j1, "/api/v1/agents/iso.a/inbox/claim");
    s2 = h_callj(d.http, "POST", tb, json_pack("{}"), &j2,
                 "/api/v1/agents/never.existed/inbox/claim");
    CHECK_EQ(s1, 200);
    check_same("claim", s1, j1, s2, j2);

    /* A's event ids (even with A's real lease token) are unknown to B, like a random id. */
    s1 = h_callj(d.http, "POST", tb, json_pack("{s:s}", "lease_token", a_lease), &j1,
                 "/api/v1/agents/iso.a/inbox/%s/ack", a_id);
    s2 = h_callj(d.http, "POST", tb, json_pack("{s:s}", "lease_token", a_lease), &j2,
                 "/api/v1/agents/iso.a/inbox/%s/ack", NEVER_EVENT);
    CHECK_EQ(s1, 404);
    CHECK_STREQ(h_error_code(j1), "event_not_found");
    check_same("ack", s1, j1, s2, j2);
    s1 = h_callj(d.http, "POST", tb, json_pack("{s:s}", "lease_token", a_lease), &j1,
                 "/api/v1/agents/iso.a/inbox/%s/release", a_id);
    s2 = h_callj(d.http, "POST", tb, json_pack("{s:s}", "lease_token", a_lease), &j2,
                 "/api/v1/agents/iso.a/inbox/%s/release", NEVER_EVENT);
    check_same("release", s1, j1, s2, j2);
    s1 = h_callj(d.http, "POST", tb, json_pack("{s:s}", "lease_token", a_lease), &j1,
                 "/api/v1/agents/iso.a/inbox/%s/extend", a_id);
    s2 = h_callj(d.http, "POST", tb, json_pack("{s:s}", "lease_token", a_lease), &j2,
                 "/api/v1/agents/iso.a/inbox/%s/extend", NEVER_EVENT);
    check_same("extend", s1, j1, s2, j2);
    json_t *acks = json_pack("{s:[{s:s, s:s}]}", "acks", "event_id", a_id, "lease_token", a_lease);
    s1 = h_callj(d.http, "POST", tb, acks, &j1, "/api/v1/agents/iso.a/inbox/ack");
    acks = json_pack("{s:[{s:s, s:s}]}", "acks", "event_id", NEVER_EVENT, "lease_token", a_lease);
    s2 = h_callj(d.http, "POST", tb, acks, &j2, "/api/v1/agents/iso.a/inbox/ack");
    CHECK_EQ(s1, 200);
    json_t *r1 = json_object_get(h_at(json_object_get(j1, "results"), 0), "error");
    json_t *r2 = json_object_get(h_at(json_object_get(j2, "results"), 0), "error");
    check_same("batch ack item", s1, json_incref(r1), s2, json_incref(r2));
    json_decref(j1);
    json_decref(j2);
    s1 = h_callj(d.http, "POST", tb, json_pack("{s:s}", "consumer", "a-proc"), &j1,
                 "/api/v1/agents/iso.a/inbox/release-all");
    CHECK_EQ(s1, 200);
    CHECK_EQ(h_int(j1, "released"), 0);
    json_decref(j1);

    /* Admin views of B show nothing of A; requeue of A's quarantined event is a 404. */
    s1 = get_status("/api/v1/admin/quarantine", tb, &j1);
    CHECK_EQ(s1, 200);
    CHECK_EQ(json_array_size(json_object_get(j1, "events")), 0);
    json_decref(j1);
    s1 = get_status("/api/v1/admin/quarantine?agent_id=iso.a", tb, &j1);
    CHECK_EQ(json_array_size(json_object_get(j1, "events")), 0);
    json_decref(j1);
    s1 = get_status("/api/v1/admin/agents", tb, &j1);
    CHECK_EQ(s1, 200);
    CHECK_EQ(json_array_size(json_object_get(j1, "agents")), 0);
    json_decref(j1);
    s1 = h_callj(d.http, "POST", tb, NULL, &j1, "/api/v1/admin/quarantine/%s/requeue", q_id);
    s2 = h_callj(d.http, "POST", tb, NULL, &j2, "/api/v1/admin/quarantine/%s/requeue", NEVER_EVENT);
    CHECK_EQ(s1, 404);
    check_same("requeue", s1, j1, s2, j2);

    /* B publishing to the same agent name gets its own sequence from 1. */
    CHECK_EQ(h_publish(d.http, tb, "iso.a", NULL, NULL, NULL), 1);
    /* A's world is untouched by all of the above. */
    json_t *page = h_inbox(d.http, ta, "iso.a", 0, 10, &s1);
    CHECK_EQ(h_int(page, "head"), 3);
    json_decref(page);
    CHECK_EQ(h_ack(d.http, ta, "iso.a", a_id, a_lease), 200);
    s1 = get_status("/api/v1/admin/quarantine", ta, &j1);
    CHECK_EQ(json_array_size(json_object_get(j1, "events")), 1);
    json_decref(j1);
    CHECK_EQ(h_callj(d.http, "POST", ta, NULL, NULL, "/api/v1/admin/quarantine/%s/requeue", q_id),
             200);
    json_decref(claimed);
    free(ta);
    free(tb);
}

int main(void)
{
    h_init();
    static const char *const sets[] = {"store.synchronous=normal", NULL};
    if (!roostd_start_checked(&d, NULL, sets)) {
        return h_summary();
    }
    RUN(test_auth_unauthenticated_requests_get_401);
    RUN(test_auth_scopes);
    RUN(test_auth_tenant_isolation);
    roostd_finish(&d);
    return h_summary();
}
