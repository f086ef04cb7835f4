/* SPDX-License-Identifier: MIT */
/* The operator API and `roost admin` against the real roostd: agents sorted by depth and age
 * with subscribers (from the SSE hub) and last_seen_at (claims), quarantine inspect and purge,
 * tenant stats from the metrics snapshot. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/agent_proc.h"
#include "harness/harness.h"

#include "common/banned.h"

static struct roostd d;
static char *tok;
static char quarantined_id[64];
static char pending_id[64];

/* Runs the CLI with the server and token options; *out gets stdout (caller frees). Returns the
 * exit status, -1 when it did not run. */
static int cli(char **out, const char *args)
{
    char *cmd = h_fmt("%s %s --server %s --token %s --compact 2>/dev/null", ROOST_CLI_BIN, args,
                      d.url, tok);
    FILE *p = popen(cmd, "r");
    free(cmd);
    if (p == NULL) {
        return -1;
    }
    char buf[65536];
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = '\0';
    int st = pclose(p);
    if (out != NULL) {
        *out = h_fmt("%s", buf);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void setup_traffic(void)
{
    for (int i = 0; i < 3; i++) {
        CHECK(h_publish(d.http, tok, "ao.deep", json_pack("{s:i}", "n", i), NULL, pending_id) > 0);
    }
    const char *poisoned[] = {"ao.shallow", "ao.other"};
    for (int k = 0; k < 2; k++) {
        CHECK(h_publish(d.http, tok, poisoned[k], json_pack("{s:s}", "x", "y"), NULL, NULL) > 0);
        json_t *evs = h_claim(d.http, tok, poisoned[k], 1, 30, "worker-1");
        CHECK_EQ(json_array_size(evs), 1);
        const char *id = h_str(h_at(evs, 0), "event_id");
        if (k == 0 && id) {
            snprintf(quarantined_id, sizeof quarantined_id, "%s", id);
        }
        CHECK_EQ(
            h_callj(d.http, "POST", tok,
                    json_pack("{s:s, s:s, s:s}", "lease_token", h_str(h_at(evs, 0), "lease_token"),
                              "reason", "poison", "error", "kaput"),
                    NULL, "/api/v1/agents/%s/inbox/%s/release", poisoned[k], id),
            200);
        json_decref(evs);
    }
    CHECK(h_publish(d.http, tok, "ao.shallow", json_object(), NULL, NULL) > 0);
}

/* An SSE stream held open on a raw socket with `token`; returns the fd or -1. */
static int open_stream_as(const char *token, const char *agent)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)d.port)};
    inet_pton(AF_INET, d.host, &sa.sin_addr);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        if (fd >= 0) {
            close(fd);
        }
        return -1;
    }
    char *req = h_fmt("GET /api/v1/agents/%s/subscribe HTTP/1.1\r\nHost: %s\r\n"
                      "Authorization: Bearer %s\r\nAccept: text/event-stream\r\n\r\n",
                      agent, d.host, token);
    bool ok = write(fd, req, strlen(req)) == (ssize_t)strlen(req);
    free(req);
    if (!ok) {
        close(fd);
        return -1;
    }
    return fd;
}

static int open_stream(const char *agent)
{
    return open_stream_as(tok, agent);
}

static json_t *find_agent(json_t *list, const char *agent)
{
    json_t *a;
    size_t i;
    json_array_foreach(json_object_get(list, "agents"), i, a)
    {
        if (strcmp(h_str(a, "agent_id"), agent) == 0) {
            return a;
        }
    }
    return NULL;
}

static long subscribers_of(const char *agent)
{
    json_t *res = NULL;
    long n = -1;
    if (h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/admin/agents") == 200) {
        json_t *a = find_agent(res, agent);
        n = a ? (long)h_int(a, "subscribers") : -1;
    }
    json_decref(res);
    return n;
}

/* "ao.deep=2 ao.shallow=1 ao.other=0": the subscribers of the tenant's three agents, as the
 * agent list (rendered on a worker from the hub's copy of the tenant's streams) shows them. */
static char *subscribers_text(void)
{
    json_t *res = NULL;
    char *text = NULL;
    if (h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/admin/agents?sort=agent") == 200) {
        json_t *a[3] = {find_agent(res, "ao.deep"), find_agent(res, "ao.shallow"),
                        find_agent(res, "ao.other")};
        text = h_fmt("ao.deep=%d ao.shallow=%d ao.other=%d",
                     a[0] ? (int)h_int(a[0], "subscribers") : -1,
                     a[1] ? (int)h_int(a[1], "subscribers") : -1,
                     a[2] ? (int)h_int(a[2], "subscribers") : -1);
    }
    json_decref(res);
    return text;
}

static bool subscribers_are(const char *want)
{
    char *got = subscribers_text();
    bool same = got && strcmp(got, want) == 0;
    free(got);
    return same;
}

/* Each agent's count is its own tenant's streams on it: several agents, several streams on one,
 * and another tenant's stream on an agent of the same name, opened and closed in turn. */
static void test_admin_agents_subscribers_per_tenant(void)
{
    char *other = h_token(&d, "t2", "agent:*:consume agent:*:read");
    int fd[4] = {open_stream("ao.deep"), open_stream("ao.deep"), open_stream("ao.shallow"),
                 open_stream_as(other, "ao.other")};
    for (int i = 0; i < 4; i++) {
        CHECK(fd[i] >= 0);
    }
    bool ok;
    H_WAIT_UNTIL(ok, 5000, subscribers_are("ao.deep=2 ao.shallow=1 ao.other=0"));
    CHECK(ok);
    json_t *res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/admin/agents?sort=depth"), 200);
    json_t *deep = find_agent(res, "ao.deep");
    CHECK(deep && json_is_string(json_object_get(deep, "last_seen_at")));
    json_decref(res);
    close(fd[0]);
    close(fd[2]);
    H_WAIT_UNTIL(ok, 5000, subscribers_are("ao.deep=1 ao.shallow=0 ao.other=0"));
    CHECK(ok);
    int again = open_stream("ao.other");
    H_WAIT_UNTIL(ok, 5000, subscribers_are("ao.deep=1 ao.shallow=0 ao.other=1"));
    CHECK(ok);
    close(fd[1]);
    close(fd[3]);
    if (again >= 0) {
        close(again);
    }
    H_WAIT_UNTIL(ok, 5000, subscribers_are("ao.deep=0 ao.shallow=0 ao.other=0"));
    CHECK(ok);
    free(other);
}

static void test_admin_agents_sorted_with_activity(void)
{
    json_t *res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/admin/agents?sort=depth&limit=1"),
             200);
    json_t *first = h_at(json_object_get(res, "agents"), 0);
    CHECK_STREQ(h_str(first, "agent_id"), "ao.deep");
    CHECK_EQ(h_int(first, "pending"), 3);
    CHECK(json_is_null(json_object_get(first, "last_seen_at")));
    CHECK(json_is_number(json_object_get(first, "oldest_pending_age_s")));
    const char *next = h_str(res, "next");
    CHECK(next != NULL);
    json_t *res2 = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res2,
                     "/api/v1/admin/agents?sort=depth&limit=5&next=%s", next ? next : ""),
             200);
    CHECK_EQ(json_array_size(json_object_get(res2, "agents")), 2);
    CHECK_STREQ(h_str(h_at(json_object_get(res2, "agents"), 0), "agent_id"), "ao.shallow");
    CHECK(json_is_null(json_object_get(res2, "next")));
    json_t *shallow = find_agent(res2, "ao.shallow");
    CHECK(shallow && json_is_string(json_object_get(shallow, "last_seen_at")));
    CHECK(shallow && h_int(shallow, "quarantined") == 1 && h_int(shallow, "subscribers") == 0);
    json_decref(res);
    json_decref(res2);

    /* Oldest pending first: ao.deep was published first; ao.other has none and comes last. */
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/admin/agents?sort=age"), 200);
    json_t *agents = json_object_get(res, "agents");
    CHECK_STREQ(h_str(h_at(agents, 0), "agent_id"), "ao.deep");
    CHECK_STREQ(h_str(h_at(agents, 2), "agent_id"), "ao.other");
    json_decref(res);
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, NULL, "/api/v1/admin/agents?sort=size"), 400);
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, NULL, "/api/v1/admin/agents?sort=depth&next=Zm9v"),
             400);

    /* An open stream shows in the agent's subscribers. */
    int fd = open_stream("ao.deep");
    CHECK(fd >= 0);
    bool ok;
    H_WAIT_UNTIL(ok, 5000, subscribers_of("ao.deep") == 1);
    CHECK(ok);
    if (fd >= 0) {
        close(fd);
    }
    H_WAIT_UNTIL(ok, 5000, subscribers_of("ao.deep") == 0);
    CHECK(ok);

    char *out = NULL;
    CHECK_EQ(cli(&out, "admin agents --sort depth --limit 1"), 0);
    CHECK(out && strstr(out, "\"ao.deep\"") && strstr(out, "\"subscribers\""));
    free(out);
    CHECK_EQ(cli(NULL, "admin agents --sort sideways"), 2);
}

static void test_admin_quarantine_inspect(void)
{
    json_t *res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/admin/quarantine/%s", quarantined_id),
             200);
    CHECK_STREQ(h_str(res, "status"), "quarantined");
    CHECK_STREQ(h_str(res, "last_error"), "kaput");
    CHECK_EQ(h_int(res, "attempts"), 1);
    CHECK_EQ(h_int(res, "nacks"), 0);
    CHECK_EQ(h_int(res, "timeouts"), 0);
    CHECK_STREQ(h_str(res, "consumer"), "worker-1");
    CHECK_STREQ(h_str(json_object_get(res, "payload"), "x"), "y");
    json_decref(res);
    /* A pending event is not in the quarantine; a malformed id is a 400. */
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, NULL, "/api/v1/admin/quarantine/%s", pending_id),
             404);
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, NULL, "/api/v1/admin/quarantine/nope"), 400);
    char *out = NULL;
    char *args = h_fmt("admin quarantine inspect %s", quarantined_id);
    CHECK_EQ(cli(&out, args), 0);
    CHECK(out && strstr(out, "\"last_error\":\"kaput\""));
    free(out);
    free(args);
    args = h_fmt("admin quarantine inspect %s", pending_id);
    CHECK_EQ(cli(NULL, args), 3);
    free(args);
}

static void test_admin_stats_from_metrics_snapshot(void)
{
    json_t *res = NULL;
    bool ok;
    /* Served from the snapshot (metrics.refresh_ms=100): wait for one that saw the traffic. */
    H_WAIT_UNTIL(ok, 5000,
                 (json_decref(res), res = NULL,
                  h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/admin/stats") == 200) &&
                     h_int(res, "quarantined") == 2 && h_int(res, "pending") == 4);
    CHECK(ok);
    CHECK_STREQ(h_str(res, "tenant"), "t1");
    CHECK_EQ(h_int(res, "claimed"), 0);
    CHECK(json_is_string(json_object_get(res, "as_of")));
    CHECK(json_is_true(json_object_get(res, "complete")));
    CHECK(json_is_number(json_object_get(res, "oldest_pending_age_s")));
    json_decref(res);
    /* Another tenant sees only its own (nothing). */
    char *other = h_token(&d, "t2", "tenant:admin");
    CHECK_EQ(h_callj(d.http, "GET", other, NULL, &res, "/api/v1/admin/stats"), 200);
    CHECK_EQ(h_int(res, "pending"), 0);
    json_decref(res);
    free(other);
    char *out = NULL;
    CHECK_EQ(cli(&out, "admin stats"), 0);
    CHECK(out && strstr(out, "\"quarantined\":2"));
    free(out);
}

static void test_admin_quarantine_purge(void)
{
    CHECK_EQ(cli(NULL, "admin quarantine purge"), 2);
    CHECK_EQ(cli(NULL, "admin quarantine purge --all --agent ao.other"), 2);
    /* Another tenant cannot purge ours. */
    char *other = h_token(&d, "t2", "tenant:admin");
    CHECK_EQ(h_callj(d.http, "POST", other, NULL, NULL, "/api/v1/admin/quarantine/%s/purge",
                     quarantined_id),
             404);
    free(other);
    CHECK_EQ(
        h_callj(d.http, "POST", tok, NULL, NULL, "/api/v1/admin/quarantine/%s/purge", pending_id),
        409);
    char *out = NULL;
    char *args = h_fmt("admin quarantine purge %s", quarantined_id);
    CHECK_EQ(cli(&out, args), 0);
    CHECK(out && strstr(out, "\"purged\":1"));
    free(out);
    free(args);
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, NULL, "/api/v1/admin/quarantine/%s", quarantined_id),
             404);
    json_t *res = NULL;
    CHECK_EQ(h_callj(d.http, "POST", tok, json_pack("{s:s}", "bogus", "x"), NULL,
                     "/api/v1/admin/quarantine/purge"),
             400);
    CHECK_EQ(h_callj(d.http, "POST", tok, json_pack("{s:i}", "limit", 10), &res,
                     "/api/v1/admin/quarantine/purge"),
             200);
    CHECK_EQ(h_int(res, "purged"), 1);
    CHECK(json_is_false(json_object_get(res, "more")));
    json_decref(res);
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/admin/quarantine"), 200);
    CHECK_EQ(json_array_size(json_object_get(res, "events")), 0);
    json_decref(res);
    /* Pending events are untouched. */
    long st = 0;
    json_t *page = h_inbox(d.http, tok, "ao.deep", 0, 10, &st);
    CHECK_EQ(json_array_size(json_object_get(page, "events")), 3);
    json_decref(page);
}

/* Publishes n events to `agent` and quarantines them (claim, release with reason poison). */
static void quarantine_n(const char *t, const char *agent, int n)
{
    for (int i = 0; i < n; i++) {
        CHECK(h_publish(d.http, t, agent, json_pack("{s:i}", "n", i), NULL, NULL) > 0);
    }
    json_t *evs = h_claim(d.http, t, agent, n, 30, "worker-1");
    CHECK_EQ(json_array_size(evs), (size_t)n);
    for (size_t i = 0; i < json_array_size(evs); i++) {
        CHECK_EQ(h_callj(d.http, "POST", t,
                         json_pack("{s:s, s:s}", "lease_token", h_str(h_at(evs, i), "lease_token"),
                                   "reason", "poison"),
                         NULL, "/api/v1/agents/%s/inbox/%s/release", agent,
                         h_str(h_at(evs, i), "event_id")),
                 200);
    }
    json_decref(evs);
}

/* The bulk redrive: POST /admin/quarantine/requeue (bounded by limit, "more" to go on) and
 * `roost admin quarantine requeue --all [--agent A]`, which calls it until none is left. A
 * tenant of its own, so the other tests' quarantine stays as it is. */
static void test_admin_quarantine_requeue_all(void)
{
    char *t = h_token(&d, "t3", "agent:*:consume agent:*:publish tenant:admin");
    quarantine_n(t, "rq.a", 3);
    quarantine_n(t, "rq.b", 2);
    CHECK_EQ(h_count_status(&d, t, "rq.a", "quarantined"), 3);
    json_t *res = NULL;
    CHECK_EQ(h_callj(d.http, "POST", t, json_pack("{s:s, s:i}", "agent_id", "rq.a", "limit", 2),
                     &res, "/api/v1/admin/quarantine/requeue"),
             200);
    CHECK_EQ(h_int(res, "requeued"), 2);
    CHECK(json_is_true(json_object_get(res, "more")));
    json_decref(res);
    CHECK_EQ(h_count_status(&d, t, "rq.a", "quarantined"), 1);
    CHECK_EQ(h_count_status(&d, t, "rq.a", "pending"), 2);
    h_expect_error(d.http, "POST", t, json_pack("{s:i}", "limit", 1001), 400, "invalid_limit",
                   "/api/v1/admin/quarantine/requeue");
    CHECK_EQ(h_callj(d.http, "POST", t, json_pack("{s:s}", "agent", "rq.a"), NULL,
                     "/api/v1/admin/quarantine/requeue"),
             400);

    char *saved = tok;
    tok = t;
    CHECK_EQ(cli(NULL, "admin quarantine requeue"), 2);
    CHECK_EQ(cli(NULL, "admin quarantine requeue --all evt_01ARZ3NDEKTSV4RRFFQ69G5FAV"), 2);
    CHECK_EQ(cli(NULL, "admin quarantine requeue evt_01ARZ3NDEKTSV4RRFFQ69G5FAV --agent rq.a"), 2);
    char *out = NULL;
    CHECK_EQ(cli(&out, "admin quarantine requeue --all --agent rq.a --limit 1"), 0);
    CHECK_STREQ(out, "{\"requeued\":1}\n");
    free(out);
    CHECK_EQ(h_count_status(&d, t, "rq.a", "quarantined"), 0);
    CHECK_EQ(h_count_status(&d, t, "rq.b", "quarantined"), 2);
    /* The whole tenant, one event per request: the CLI goes on until none is left. */
    CHECK_EQ(cli(&out, "admin quarantine requeue --all --limit 1"), 0);
    CHECK_STREQ(out, "{\"requeued\":2}\n");
    free(out);
    CHECK_EQ(cli(&out, "admin quarantine requeue --all"), 0);
    CHECK_STREQ(out, "{\"requeued\":0}\n");
    free(out);
    tok = saved;
    CHECK_EQ(h_count_status(&d, t, "rq.b", "pending"), 2);
    CHECK_EQ(h_count_status(&d, t, "rq.a", "pending"), 3);
    /* Requeued work is claimable again. */
    json_t *evs = h_claim(d.http, t, "rq.b", 10, 30, NULL);
    CHECK_EQ(json_array_size(evs), 2);
    json_decref(evs);
    free(t);
}

/* --output table|json on the list commands: a table on a terminal (script(1) gives the CLI one),
 * the server's JSON in a pipe, either when asked for. */
static void test_cli_output_table(void)
{
    char *out = NULL;
    CHECK_EQ(cli(&out, "admin agents --output table --limit 1"), 0);
    CHECK(out != NULL && strncmp(out, "AGENT ", 6) == 0 && strstr(out, " QUARANTINED ") != NULL);
    CHECK(out != NULL && strstr(out, "\n(more: --next ") != NULL);
    free(out);
    CHECK_EQ(cli(&out, "admin agents --limit 1"), 0);
    CHECK(out != NULL && strncmp(out, "{\"agents\":[{", 12) == 0);
    free(out);
    CHECK_EQ(cli(&out, "admin quarantine list -o table --agent ao.other"), 0);
    CHECK(out != NULL && strncmp(out, "AGENT     EVENT ID", 18) == 0 &&
          strstr(out, "\nao.other  evt_") != NULL);
    free(out);
    CHECK_EQ(cli(&out, "inbox read --agent ao.deep --output json"), 0);
    CHECK(out != NULL && strncmp(out, "{\"events\":[", 11) == 0);
    free(out);
    CHECK_EQ(cli(&out, "keys list -o table"), 0);
    CHECK(out != NULL && strncmp(out, "KEY ID  AGENT ID  ALG", 21) == 0);
    free(out);
    CHECK_EQ(cli(NULL, "admin agents --output yaml"), 2);
    /* On a terminal the default is the table. */
    char *cmd = h_fmt("script -qec \"'%s' inbox read --agent ao.deep --server %s --token %s\" "
                      "/dev/null",
                      ROOST_CLI_BIN, d.url, tok);
    FILE *p = popen(cmd, "r");
    char buf[8192] = "";
    size_t n = p != NULL ? fread(buf, 1, sizeof buf - 1, p) : 0;
    buf[n] = '\0';
    CHECK(p != NULL && pclose(p) == 0);
    CHECK(strncmp(buf, "SEQ  EVENT ID", 13) == 0 && strstr(buf, "pending") != NULL);
    free(cmd);
}

/* limits.admin_scan_ms: a listing that ranks every agent of a tenant (sort=depth|age) fails with
 * 503 scan_budget_exceeded past its time budget (1 ms here, over 10,000 agents), so it cannot
 * hold a store connection for long; the listing by agent id (an index walk) is not budgeted. */
static void test_admin_agents_sorted_scan_budget(void)
{
    static const char *const sets[] = {"limits.admin_scan_ms=1", "store.synchronous=normal", NULL};
    struct roostd m;
    if (!roostd_start_checked(&m, NULL, sets)) {
        return;
    }
    char *t = h_token(&m, "scan", "agent:*:publish agent:*:read tenant:admin");
    json_t *recips = json_array();
    for (int i = 0; i < 10000; i++) {
        char *name = h_fmt("scan.%05d", i);
        json_array_append_new(recips, json_string(name));
        free(name);
    }
    json_t *res = NULL;
    CHECK_EQ(h_callj(m.http, "POST", t, json_pack("{s:o}", "recipients", recips), &res,
                     "/api/v1/events"),
             201);
    json_decref(res);
    static const char *const sorted[] = {"/api/v1/admin/agents?sort=age",
                                         "/api/v1/admin/agents?sort=depth"};
    for (size_t i = 0; i < 2; i++) {
        res = NULL;
        CHECK_EQ(h_callj(m.http, "GET", t, NULL, &res, "%s", sorted[i]), 503);
        CHECK_STREQ(h_error_code(res), "scan_budget_exceeded");
        json_decref(res);
    }
    res = NULL;
    CHECK_EQ(h_callj(m.http, "GET", t, NULL, &res, "/api/v1/admin/agents?limit=10"), 200);
    CHECK_EQ(json_array_size(json_object_get(res, "agents")), 10);
    json_decref(res);
    res = NULL;
    CHECK_EQ(h_callj(m.http, "GET", t, NULL, &res, "/api/v1/agents/scan.00001/inbox"), 200);
    CHECK_EQ(json_array_size(json_object_get(res, "events")), 1);
    json_decref(res);
    free(t);
    roostd_finish(&m);
}

int main(void)
{
    h_init();
    static const char *const sets[] = {"metrics.refresh_ms=100", "store.synchronous=normal", NULL};
    if (!roostd_start_checked(&d, NULL, sets)) {
        return h_summary();
    }
    tok = h_token(&d, "t1", "agent:*:consume agent:*:publish agent:*:read tenant:admin");
    RUN(setup_traffic);
    RUN(test_admin_agents_sorted_with_activity);
    RUN(test_admin_agents_subscribers_per_tenant);
    RUN(test_admin_quarantine_inspect);
    RUN(test_cli_output_table);
    RUN(test_admin_stats_from_metrics_snapshot);
    RUN(test_admin_quarantine_purge);
    RUN(test_admin_quarantine_requeue_all);
    RUN(test_admin_agents_sorted_scan_budget);
    free(tok);
    roostd_finish(&d);
    return h_summary();
}
