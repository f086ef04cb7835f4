/* SPDX-License-Identifier: MIT */
/* /metrics against the real roostd: the exposition passes `promtool check metrics`, counters and
 * histograms move with the traffic generated here, the inbox gauges follow the store through the
 * refresh timer, route labels are router names (never raw paths), metrics.token guards the
 * endpoint, and --print-config masks secrets. promtool missing is a failure, never a skip
 * (make test installs the Debian prometheus package). */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/harness.h"

#include "common/banned.h"

static struct roostd d;
static char *tok;

/* Runs `sh -c cmd` with `input` on stdin; returns the exit status (-1 when it did not run). */
static int run_with_stdin(const char *cmd, const char *input)
{
    char path[] = "/tmp/roost-metrics-XXXXXX";
    int fd = mkstemp(path);
    if (fd < 0) {
        return -1;
    }
    size_t len = strlen(input);
    bool ok = write(fd, input, len) == (ssize_t)len;
    close(fd);
    char *full = h_fmt("%s < %s", cmd, path);
    int st = ok ? system(full) : -1;
    free(full);
    unlink(path);
    return st == -1 || !WIFEXITED(st) ? -1 : WEXITSTATUS(st);
}

static void test_metrics_promtool_and_values(void)
{
    /* Traffic: 3 events to m.a, 1 to m.b; one of m.a claimed and acked; m.b poisoned. */
    for (int i = 0; i < 3; i++) {
        CHECK(h_publish(d.http, tok, "m.a", json_pack("{s:i}", "n", i), NULL, NULL) > 0);
    }
    CHECK(h_publish(d.http, tok, "m.b", json_object(), NULL, NULL) > 0);
    json_t *evs = h_claim(d.http, tok, "m.a", 1, 30, NULL);
    CHECK_EQ(json_array_size(evs), 1);
    CHECK_EQ(h_ack(d.http, tok, "m.a", h_str(h_at(evs, 0), "event_id"),
                   h_str(h_at(evs, 0), "lease_token")),
             200);
    json_decref(evs);
    evs = h_claim(d.http, tok, "m.b", 1, 30, NULL);
    CHECK_EQ(json_array_size(evs), 1);
    CHECK_EQ(h_callj(d.http, "POST", tok,
                     json_pack("{s:s, s:s}", "lease_token", h_str(h_at(evs, 0), "lease_token"),
                               "reason", "poison"),
                     NULL, "/api/v1/agents/m.b/inbox/%s/release", h_str(h_at(evs, 0), "event_id")),
             200);
    json_decref(evs);
    /* A claim that stays open, for the claimed gauges. */
    evs = h_claim(d.http, tok, "m.a", 1, 300, NULL);
    CHECK_EQ(json_array_size(evs), 1);
    json_decref(evs);
    /* A 404 on a made-up path must not become a label. */
    long st = 0;
    http_request(d.http, "GET", "/api/v1/no/such/path-xyz", tok, NULL, &st, NULL);
    CHECK_EQ(st, 404);

    /* The gauges follow through the refresh timer (metrics.refresh_ms=100). */
    char *m = NULL;
    bool ok;
    H_WAIT_UNTIL(ok, 10000,
                 (free(m), m = h_scrape(d.http, NULL)) != NULL &&
                     h_sample(m, "roost_inbox_depth{tenant=\"t1\",agent=\"m.a\"}") == 1 &&
                     h_sample(m, "roost_claimed{tenant=\"t1\"}") == 1);
    CHECK(ok);
    if (m == NULL) {
        return;
    }
    CHECK_EQ(run_with_stdin("promtool check metrics", m), 0);
    /* top_agents=1: m.a is the deepest; m.b (0 pending) falls into _other. */
    CHECK(h_sample(m, "roost_inbox_depth{tenant=\"t1\",agent=\"_other\"}") == 0);
    CHECK(h_sample(m, "roost_inbox_pending{tenant=\"t1\"}") == 1);
    CHECK(h_sample(m, "roost_inbox_quarantined{tenant=\"t1\"}") == 1);
    CHECK(h_sample(m, "roost_inbox_oldest_pending_age_seconds{tenant=\"t1\"}") >= 0);
    CHECK(h_sample(m, "roost_oldest_claim_age_seconds{tenant=\"t1\"}") >= 0);
    CHECK(h_sample(m, "roost_publish_total") == 4);
    CHECK(h_sample(m, "roost_releases_total{reason=\"poison\"}") == 1);
    CHECK(h_sample(m, "roost_releases_total{reason=\"transient\"}") == 0);
    CHECK(h_sample(m, "roost_quarantined_total") == 1);
    CHECK(h_sample(m, "roost_delivery_latency_seconds_count") == 1);
    CHECK(h_sample(m, "roost_delivery_latency_seconds_bucket{le=\"+Inf\"}") == 1);
    CHECK(h_sample(m, "roost_http_requests_total{route=\"publish\",status=\"201\"}") == 4);
    CHECK(h_sample(m, "roost_http_requests_total{route=\"claim\",status=\"200\"}") == 3);
    CHECK(h_sample(m, "roost_http_requests_total{route=\"unmatched\",status=\"404\"}") == 1);
    CHECK(h_sample(m, "roost_http_request_duration_seconds_count{route=\"ack\"}") == 1);
    CHECK(h_sample(m, "roost_store_op_duration_seconds_count{op=\"publish\"}") >= 4);
    CHECK(h_sample(m, "roost_store_op_duration_seconds_count{op=\"metrics_snapshot\"}") >= 1);
    CHECK(h_sample(m, "roost_group_commit_batch_size_count") >= 1);
    /* Each publish waited in the writers' queue and its answer for the loop: counted once each. */
    CHECK(h_sample(m, "roost_store_queue_wait_seconds_count{op=\"publish\"}") == 4);
    CHECK(h_sample(m, "roost_store_return_wait_seconds_count") >= 4);
    CHECK(h_sample(m, "roost_store_write_retries_total") == 0);
    CHECK(h_sample(m, "roost_sse_subscribers") == 0);
    CHECK(h_sample(m, "roost_lease_expirations_total") == 0);
    CHECK(strstr(m, "no/such") == NULL && strstr(m, "route=\"/") == NULL);
    free(m);
}

/* A lease that runs out moves roost_lease_expirations_total (scavenger every 50 ms). */
/* Claim jobs run so far: roost_store_queue_wait_seconds counts each job once. */
static double claim_jobs(void)
{
    return h_metric(d.http, "roost_store_queue_wait_seconds_count{op=\"claim\"}");
}

/* A long-polling claim of an agent whose last claim took everything waits for a notify before
 * asking the store (api_inbox.c, waiters.h "drained agents"); what it answers is unchanged. */
static void test_metrics_claim_of_drained_agent(void)
{
    CHECK(h_publish(d.http, tok, "m.dr", json_object(), NULL, NULL) > 0);
    json_t *evs = h_claim(d.http, tok, "m.dr", 10, 2, NULL); /* takes it: drained */
    CHECK_EQ(json_array_size(evs), 1);
    json_decref(evs);
    /* The 2 s lease expires: the scavenger's notify, or the parked claim's own recheck after a
     * second, hands the event to a claim parked before asking the store. */
    struct h_response r;
    const char *body = "{\"wait_s\":30,\"lease_s\":30}";
    CHECK(h_request(d.http, "POST", "/api/v1/agents/m.dr/inbox/claim", tok, body, strlen(body),
                    NULL, &r) == 0);
    CHECK_EQ(r.status, 200);
    evs = json_object_get(r.json, "events");
    CHECK_EQ(json_array_size(evs), 1);
    CHECK_EQ(h_int(h_at(evs, 0), "attempts"), 2);
    CHECK(r.elapsed_ms < 20000);
    h_response_cleanup(&r);
    /* Drained again (its lease is 30 s). wait_s=1: parked at once, its one store job is the last
     * run at the deadline; without the memo there is one before parking too. */
    double before = claim_jobs();
    body = "{\"wait_s\":1}";
    CHECK(h_request(d.http, "POST", "/api/v1/agents/m.dr/inbox/claim", tok, body, strlen(body),
                    NULL, &r) == 0);
    CHECK_EQ(r.status, 200);
    CHECK_EQ(json_array_size(json_object_get(r.json, "events")), 0);
    CHECK(r.elapsed_ms >= 900);
    h_response_cleanup(&r);
    CHECK_EQ(claim_jobs() - before, 1);
}

/* A publish to an agent with a claim parked hands the event to that claim in its own
 * transaction (workers.h, followers): the claim answers it and runs one store job, the one that
 * shared the publish's COMMIT. A publish that fails in the store (here: a state patch over
 * limits.max_state_bytes) leaves the claim to run on its own (it finds nothing and parks
 * again); a delayed event is never handed over (the claim is woken when it comes due). */
static void test_metrics_claim_with_publish(void)
{
    struct h_waiting_claim c = {.url = d.url, .token = tok, .agent = "m.wp", .wait_s = 30};
    h_claim_start(&c);
    CHECK(h_wait_parked(d.http, 1));
    double jobs = claim_jobs(), handed = h_metric(d.http, "roost_claims_with_publish_total");
    char big[1100];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    CHECK_EQ(h_publish(d.http, tok, "m.wp", json_object(),
                       json_pack("{s:{s:s}}", "state_patch", "big", big), NULL),
             -413);
    /* Parked again once its own job had run (after the 413 went out): it found nothing. */
    CHECK(h_wait_parked(d.http, 1));
    CHECK_EQ(claim_jobs() - jobs, 1);
    char id[31];
    CHECK(h_publish(d.http, tok, "m.wp", json_object(), NULL, id) > 0);
    h_claim_join(&c);
    CHECK_EQ(c.status, 200);
    CHECK_STREQ(c.event_id, id);
    CHECK_EQ(c.attempts, 1);
    CHECK_EQ(claim_jobs() - jobs, 2);
    CHECK_EQ(h_metric(d.http, "roost_claims_with_publish_total") - handed, 1);

    struct h_waiting_claim later = {.url = d.url, .token = tok, .agent = "m.wp2", .wait_s = 30};
    h_claim_start(&later);
    CHECK(h_wait_parked(d.http, 1));
    handed = h_metric(d.http, "roost_claims_with_publish_total");
    CHECK(h_publish(d.http, tok, "m.wp2", json_object(), json_pack("{s:i}", "delay_s", 1), id) > 0);
    h_claim_join(&later);
    CHECK_EQ(later.status, 200);
    CHECK_STREQ(later.event_id, id);
    CHECK_EQ(h_metric(d.http, "roost_claims_with_publish_total") - handed, 0);
    CHECK(h_wait_parked(d.http, 0));
}

static void test_metrics_lease_expiry(void)
{
    CHECK(h_publish(d.http, tok, "m.exp", json_object(), NULL, NULL) > 0);
    json_t *evs = h_claim(d.http, tok, "m.exp", 1, 1, NULL);
    CHECK_EQ(json_array_size(evs), 1);
    json_decref(evs);
    char *m = NULL;
    bool ok;
    H_WAIT_UNTIL(ok, 10000,
                 (free(m), m = h_scrape(d.http, NULL)) != NULL &&
                     h_sample(m, "roost_lease_expirations_total") == 1);
    CHECK(ok);
    free(m);
}

static void test_metrics_token(void)
{
    struct roostd g;
    static const char *const sets[] = {"metrics.token=s3cret-metrics", "store.synchronous=normal",
                                       NULL};
    if (roostd_start(&g, NULL, sets) != 0) {
        CHECK(!"roostd with metrics.token started");
        return;
    }
    struct h_response r;
    CHECK(h_request(g.http, "GET", "/metrics", NULL, NULL, 0, NULL, &r) == 0);
    CHECK_EQ(r.status, 401);
    h_response_cleanup(&r);
    CHECK(h_request(g.http, "GET", "/metrics", "wrong", NULL, 0, NULL, &r) == 0);
    CHECK_EQ(r.status, 401);
    h_response_cleanup(&r);
    char *m = h_scrape(g.http, "s3cret-metrics");
    CHECK(m != NULL && strstr(m, "roost_build_info") != NULL);
    free(m);
    CHECK_EQ(roostd_stop(&g), 0);
    /* The token never reaches the log. */
    char *path = h_fmt("%s/roostd.log", g.dir), *log = NULL;
    size_t len = 0;
    CHECK(h_read_file(path, &log, &len) == 0 && strstr(log, "s3cret") == NULL);
    free(log);
    free(path);
    roostd_remove_dir(&g);
}

/* --print-config shows every key but masks secrets (metrics.token, store.url's password). */
static void test_config_print_masks_secrets(void)
{
    char *cmd = h_fmt("%s --print-config --set metrics.token=s3cret-metrics"
                      " --set store.url=mysql://roost:pa55word@db.example:3306/roost",
                      ROOSTD_BIN);
    FILE *p = popen(cmd, "r");
    free(cmd);
    CHECK(p != NULL);
    if (p == NULL) {
        return;
    }
    char buf[16384];
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = '\0';
    CHECK_EQ(pclose(p), 0);
    CHECK(strstr(buf, "s3cret") == NULL);
    CHECK(strstr(buf, "pa55word") == NULL);
    CHECK(strstr(buf, "metrics.token = ********") != NULL);
    CHECK(strstr(buf, "store.url = mysql://roost:") != NULL);
    CHECK(strstr(buf, "metrics.refresh_ms = 1000") != NULL);
    CHECK(strstr(buf, "log.format = logfmt") != NULL);
}

int main(void)
{
    h_init();
    static const char *const sets[] = {"metrics.refresh_ms=100",      "metrics.top_agents=1",
                                       "scavenger.interval_ms=50",    "store.synchronous=normal",
                                       "limits.max_state_bytes=1024", NULL};
    if (!roostd_start_checked(&d, NULL, sets)) {
        return h_summary();
    }
    tok = h_token(&d, "t1", "agent:*:consume agent:*:publish tenant:admin");
    RUN(test_metrics_promtool_and_values);
    RUN(test_metrics_lease_expiry);
    RUN(test_metrics_claim_of_drained_agent);
    RUN(test_metrics_claim_with_publish);
    RUN(test_metrics_token);
    RUN(test_config_print_masks_secrets);
    free(tok);
    roostd_finish(&d);
    return h_summary();
}
