/* SPDX-License-Identifier: MIT */
/* An idle `roost agent run` through a real database outage (issue 14 item 2): roostd on a
 * MariaDB of this test's own (scripts/mariadb_test.sh, so the ctest fixture's server, which other
 * tests share, is never stopped), the agent idle on its SSE stream, MariaDB stopped for 40 s and
 * started again. The stream stays up; the agent's own pulls fail meanwhile and its backoff grows
 * to 16-32 s. Work published once roostd is ready again must run within 5 s: its ping ends the
 * backoff. */
#include <stdlib.h>
#include <unistd.h>

#include "harness/agent_proc.h"
#include "harness/harness.h"

#include "common/banned.h"

#define OUTAGE_MS 40000
#define RUN_WITHIN_MS 5000

static int ready_status(struct roostd *d)
{
    long st = 0;
    http_request(d->http, "GET", "/readyz", NULL, NULL, &st, NULL);
    return (int)st;
}

/* A publish that roostd answers 201; -status otherwise (-1: no answer). */
static int64_t try_publish(struct roostd *d, const char *tok, const char *agent, char *id)
{
    return h_publish(d->http, tok, agent, NULL, NULL, id);
}

static void test_agent_runs_new_work_soon_after_db_outage(void)
{
    char dir[128];
    snprintf(dir, sizeof dir, "/tmp/roost-agentdb-%d", (int)getpid());
    char *start = h_fmt("'%s/scripts/mariadb_test.sh' start '%s' >/dev/null", TESTS_DIR "/..", dir);
    char *pause = h_fmt("'%s/scripts/mariadb_test.sh' pause '%s'", TESTS_DIR "/..", dir);
    char *resume =
        h_fmt("'%s/scripts/mariadb_test.sh' resume '%s' >/dev/null", TESTS_DIR "/..", dir);
    char *stop = h_fmt("'%s/scripts/mariadb_test.sh' stop '%s'", TESTS_DIR "/..", dir);
    char *url_path = h_fmt("%s/url", dir), *base = NULL;
    size_t len;
    struct roostd d;
    bool started = false;
    char *tok = NULL;
    struct agent_proc ap = {0};
    agent_proc_dirs(&ap);
    CHECK_EQ(system(start), 0);
    CHECK_EQ(h_read_file(url_path, &base, &len), 0);
    if (base == NULL) {
        goto out;
    }
    base[strcspn(base, "\r\n")] = '\0';
    setenv("ROOST_TEST_MYSQL_URL", base, 1);
    if (!roostd_start_checked(&d, NULL, NULL)) {
        goto out;
    }
    started = true;
    tok = h_token(&d, "t1", "agent:*:consume agent:*:publish");
    /* A safety pull every 2 s (instead of 60) makes the idle agent meet the outage at once, so
     * its backoff grows through all of it, as it does for an agent that tries then. */
    static const char *const extra[] = {"--resync", "2s", NULL};
    agent_proc_start_args(&ap, d.url, tok, "ag.db", 1, "", "30", extra);
    char e1[31], e2[31];
    CHECK(try_publish(&d, tok, "ag.db", e1) > 0);
    bool ok;
    H_WAIT_UNTIL(ok, 10000,
                 agent_proc_out_count(&ap, e1) == 1 &&
                     agent_proc_status_is(&ap, ROOST_AGENT_CONN_STREAMING));
    CHECK(ok);

    /* The outage: the agent sits idle on its stream while roostd cannot reach its database, and
     * a producer keeps trying (refused with 503 meanwhile). */
    CHECK_EQ(system(pause), 0);
    H_WAIT_UNTIL(ok, 10000, ready_status(&d) == 503);
    CHECK(ok);
    int64_t t_out = h_now_ms();
    int refused = 0;
    while (h_now_ms() - t_out < OUTAGE_MS) {
        refused += try_publish(&d, tok, "ag.db", NULL) < 0;
        h_sleep_ms(2000);
    }
    CHECK(refused > 0);
    /* The agent met the outage: its pulls failed and it backs off (1 s doubling). */
    CHECK(agent_proc_log_contains(&ap, "pull failed: "));
    CHECK(agent_proc_status_is(&ap, ROOST_AGENT_CONN_STREAMING));
    CHECK_EQ(system(resume), 0);
    H_WAIT_UNTIL(ok, 30000, ready_status(&d) == 200);
    CHECK(ok);

    /* New work after the return runs within 5 s. (Publishes the outage refused wrote nothing:
     * only e2 is new.) */
    H_WAIT_UNTIL(ok, 10000, try_publish(&d, tok, "ag.db", e2) > 0);
    CHECK(ok);
    int64_t t0 = h_now_ms();
    H_WAIT_UNTIL(ok, RUN_WITHIN_MS, agent_proc_out_count(&ap, e2) == 1);
    CHECK(ok);
    printf("after a %d s database outage: new work ran %lld ms after its publish\n",
           OUTAGE_MS / 1000, (long long)(h_now_ms() - t0));
    CHECK_EQ(agent_proc_out_count(&ap, e1), 1);
    CHECK_EQ(agent_proc_term(&ap), 0);
out:
    agent_proc_kill9(&ap); /* only when a check above gave up on it */
    agent_proc_cleanup(&ap);
    if (started) {
        roostd_finish(&d);
    }
    CHECK_EQ(system(stop), 0);
    free(tok);
    free(base);
    free(url_path);
    free(start);
    free(pause);
    free(resume);
    free(stop);
}

int main(void)
{
    h_init();
    RUN(test_agent_runs_new_work_soon_after_db_outage);
    return h_summary();
}
