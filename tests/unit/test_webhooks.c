/* SPDX-License-Identifier: MIT */
/* Unit tests of the webhook helpers (src/server/webhooks_sign.c, webhooks_http.c): the Standard
 * Webhooks vector (tests/data/webhooks/standard-webhooks-vector.json, from the shared vectors),
 * the whsec_ secret rules, the retry schedule, the challenge answer, and the registration URL
 * check (scheme, form, and the destination filter on resolved addresses). */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "harness/check.h"
#include "server/webhooks.h"

#include "common/banned.h"

static void test_webhooks_standard_vector(void)
{
    json_t *v = json_load_file("data/webhooks/standard-webhooks-vector.json", 0, NULL);
    CHECK(v != NULL);
    if (v == NULL) {
        return;
    }
    const char *secret = json_string_value(json_object_get(v, "secret"));
    json_t *h = json_object_get(v, "headers");
    const char *id = json_string_value(json_object_get(h, "webhook-id"));
    const char *ts = json_string_value(json_object_get(h, "webhook-timestamp"));
    const char *want = json_string_value(json_object_get(h, "webhook-signature"));
    const char *body = json_string_value(json_object_get(v, "body"));
    unsigned char key[WEBHOOKS_SECRET_MAX_BYTES];
    size_t key_len = 0;
    CHECK_EQ(webhooks_secret_key(secret, key, &key_len), ROOST_OK);
    CHECK_EQ(key_len, 24);
    char got[128];
    CHECK_EQ(webhooks_sign_v1(key, key_len, id, strtoll(ts, NULL, 10), body, strlen(body), got,
                              sizeof got),
             ROOST_OK);
    CHECK_STREQ(got, want);
    /* Any change to the signed content changes the signature. */
    CHECK_EQ(webhooks_sign_v1(key, key_len, "msg_other", strtoll(ts, NULL, 10), body, strlen(body),
                              got, sizeof got),
             ROOST_OK);
    CHECK(strcmp(got, want) != 0);
    json_decref(v);
}

static void test_webhooks_secret_rules(void)
{
    unsigned char key[WEBHOOKS_SECRET_MAX_BYTES];
    size_t n = 0;
    CHECK_EQ(webhooks_secret_key("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", key, &n),
             ROOST_EWEBHOOKSECRET);
    CHECK_EQ(webhooks_secret_key("whsec_", key, &n), ROOST_EWEBHOOKSECRET);
    CHECK_EQ(webhooks_secret_key("whsec_c2hvcnQ=", key, &n), ROOST_EWEBHOOKSECRET); /* 5 bytes */
    CHECK_EQ(webhooks_secret_key("whsec_!!!!", key, &n), ROOST_EWEBHOOKSECRET);
    CHECK_EQ(webhooks_secret_key(NULL, key, &n), ROOST_EWEBHOOKSECRET);
}

static void test_webhooks_schedule(void)
{
    int64_t s[WEBHOOKS_SCHEDULE_MAX];
    size_t n = 0;
    char err[160];
    CHECK_EQ(webhooks_parse_schedule("5,300,1800,7200,18000,36000,36000", s, &n, err, sizeof err),
             0);
    CHECK_EQ(n, 7);
    CHECK_EQ(s[0], 5);
    CHECK_EQ(s[6], 36000);
    CHECK_EQ(webhooks_parse_schedule(" 1 , 2 ", s, &n, err, sizeof err), 0);
    CHECK_EQ(n, 2);
    CHECK_EQ(webhooks_parse_schedule("", s, &n, err, sizeof err), -1);
    CHECK_EQ(webhooks_parse_schedule("1,x", s, &n, err, sizeof err), -1);
    CHECK_EQ(webhooks_parse_schedule("-1", s, &n, err, sizeof err), -1);
    CHECK(strstr(err, "webhooks.retry_schedule_s") != NULL);
}

static void test_webhooks_challenge_answer(void)
{
    /* RFC 4231 test case 2: key "Jefe", data "what do ya want for nothing?". */
    char out[65];
    webhooks_challenge_answer((const unsigned char *)"Jefe", 4, "what do ya want for nothing?",
                              out);
    CHECK_STREQ(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
}

static void test_webhooks_url_check(void)
{
    struct webhooks_net net;
    char err[128], why[256];
    memset(&net, 0, sizeof net);
    CHECK_EQ(ssrf_filter_parse(&net.filter, "", err, sizeof err), 0);
    CHECK_EQ(webhooks_url_check(&net, "http://8.8.8.8/hook", why, sizeof why),
             ROOST_EHTTPSREQUIRED);
    CHECK_EQ(webhooks_url_check(&net, "ftp://8.8.8.8/hook", why, sizeof why), ROOST_EHTTPSREQUIRED);
    CHECK_EQ(webhooks_url_check(&net, "not a url", why, sizeof why), ROOST_EWEBHOOKURL);
    CHECK_EQ(webhooks_url_check(&net, "https://user:pw@8.8.8.8/", why, sizeof why),
             ROOST_EWEBHOOKURL);
    CHECK_EQ(webhooks_url_check(&net, "https://8.8.8.8/x#frag", why, sizeof why),
             ROOST_EWEBHOOKURL);
    CHECK_EQ(webhooks_url_check(&net, "https://8.8.8.8/hook", why, sizeof why), ROOST_OK);
    CHECK_EQ(webhooks_url_check(&net, "https://127.0.0.1:8443/hook", why, sizeof why),
             ROOST_EDESTFORBIDDEN);
    CHECK(strstr(why, "127.0.0.0/8") != NULL);
    CHECK_EQ(webhooks_url_check(&net, "https://[::ffff:169.254.169.254]/", why, sizeof why),
             ROOST_EDESTFORBIDDEN);
    CHECK_EQ(webhooks_url_check(&net, "https://[fe80::1%25eth0]/", why, sizeof why),
             ROOST_EDESTFORBIDDEN);
    /* allow_cidrs opens what it names. */
    CHECK_EQ(ssrf_filter_parse(&net.filter, "127.0.0.1/32", err, sizeof err), 0);
    CHECK_EQ(webhooks_url_check(&net, "https://127.0.0.1:8443/hook", why, sizeof why), ROOST_OK);
    CHECK_EQ(webhooks_url_check(&net, "https://127.0.0.2:8443/hook", why, sizeof why),
             ROOST_EDESTFORBIDDEN);
}

int main(void)
{
    RUN(test_webhooks_standard_vector);
    RUN(test_webhooks_secret_rules);
    RUN(test_webhooks_schedule);
    RUN(test_webhooks_challenge_answer);
    RUN(test_webhooks_url_check);
    return check_summary();
}
