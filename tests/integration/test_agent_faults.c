/* SPDX-License-Identifier: MIT */
/* `roost agent run --exec` against the real roostd under the faults of issue 14: a finished event
 * whose ack was lost must not run again on a sibling after a restart; a ping ends the backoff an
 * outage left; a claim answer that arrives after its lease is given back unrun; exit 75 waits
 * longer each time, honours retry_after and ends quarantined; a quarantine carries the exit
 * status and stderr; handlers die with a SIGKILLed agent, and a restart ends what is left. The
 * faults come from a proxy (harness/http_proxy.h) between agent and roostd and from signals. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "harness/agent_proc.h"
#include "harness/harness.h"
#include "harness/http_proxy.h"
#include "roost/roost_agent.h"

#include "common/banned.h"

/* A process that exists and is not a zombie. */
static bool proc_alive(pid_t pid)
{
    char path[64], *text = NULL;
    size_t len = 0;
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    if (h_read_file(path, &text, &len) != 0) {
        return false;
    }
    const char *p = strrchr(text, ')');
    bool alive = p != NULL && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
    free(text);
    return alive;
}

/* The numbers in a file, one per line; returns how many (at most max). */
static int read_pids(const char *path, pid_t *pids, int max)
{
    char *text = NULL;
    size_t len = 0;
    int n = 0;
    if (h_read_file(path, &text, &len) == 0) {
        for (char *p = text; n < max && *p != '\0';) {
            char *end = NULL;
            long v = strtol(p, &end, 10);
            if (end == p) {
                break;
            }
            pids[n++] = (pid_t)v;
            p = end + strspn(end, "\n");
        }
    }
    free(text);
    return n;
}

/* ---- 1. a processed event whose ack was lost is acked by recovery, not run by a sibling ---- */

static void test_agent_restart_acks_processed_beside_sibling(void)
{
    struct agent_fixture f;
    if (!agent_fixture_start(&f, NULL)) {
        return;
    }
    struct http_proxy px;
    CHECK_EQ(http_proxy_start(&px, f.d.port), 0);
    http_proxy_rule(&px, 0, "/ack", NULL, HTTP_PROXY_DROP, 0);
    char *url = h_fmt("http://127.0.0.1:%d", px.port);
    struct agent_proc b; /* a sibling of f.ap, which restarts */
    agent_proc_dirs(&b);
    agent_proc_start(&f.ap, url, f.tok, "ag.sib", 1, "");
    char id[31];
    CHECK(h_publish(f.d.http, f.tok, "ag.sib", NULL, NULL, id) > 0);
    bool ok;
    struct roost_agent_status st;
    /* Handled and recorded as processed; every ack is dropped on the way. */
    H_WAIT_UNTIL(ok, 10000,
                 agent_proc_out_count(&f.ap, id) == 1 && http_proxy_hits(&px, 0) >= 1 &&
                     roost_agent_status_read(f.ap.state, &st) == ROOST_OK && st.processed_ids == 1);
    CHECK(ok);
    agent_proc_kill9(&f.ap);
    CHECK(h_event_status_is(&f.d, f.tok, "ag.sib", id, "claimed"));
    /* A sibling (same agent, its own state dir) is idle and ready to claim. */
    agent_proc_start(&b, f.d.url, f.tok, "ag.sib", 1, "");
    H_WAIT_UNTIL(ok, 10000, agent_proc_status_is(&b, ROOST_AGENT_CONN_STREAMING));
    CHECK(ok);
    /* The restarted agent may ack and release but claims nothing: whatever its recovery gives
     * back can only go to the sibling. */
    http_proxy_rule(&px, 0, "/claim", NULL, HTTP_PROXY_DROP, 0);
    agent_proc_start(&f.ap, url, f.tok, "ag.sib", 1, "");
    /* (roostd completes the event before the agent has its answer and logs it) */
    H_WAIT_UNTIL(ok, 10000,
                 h_event_status_is(&f.d, f.tok, "ag.sib", id, "completed") &&
                     agent_proc_log_contains(&f.ap, "recovery: acked 1 processed event"));
    CHECK(ok);
    CHECK_EQ(agent_proc_out_count(&f.ap, id), 1);
    CHECK_EQ(agent_proc_out_count(&b, id), 0); /* never run again */
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    CHECK_EQ(agent_proc_term(&b), 0);
    agent_proc_cleanup(&b);
    http_proxy_stop(&px);
    free(url);
    agent_fixture_stop(&f);
}

/* ---- 2. after an outage, a ping means "pull now", whatever the backoff ---- */

static void test_agent_ping_ends_backoff(void)
{
    struct agent_fixture f;
    if (!agent_fixture_start(&f, NULL)) {
        return;
    }
    struct http_proxy px;
    CHECK_EQ(http_proxy_start(&px, f.d.port), 0);
    char *url = h_fmt("http://127.0.0.1:%d", px.port);
    agent_proc_start(&f.ap, url, f.tok, "ag.out", 1, "");
    char e1[31], e2[31], e3[31];
    CHECK(h_publish(f.d.http, f.tok, "ag.out", NULL, NULL, e1) > 0);
    bool ok;
    H_WAIT_UNTIL(ok, 10000,
                 agent_proc_out_count(&f.ap, e1) == 1 &&
                     agent_proc_status_is(&f.ap, ROOST_AGENT_CONN_STREAMING));
    CHECK(ok);
    /* The outage: every request but the stream gets 503, as from a roostd whose database is
     * down. The ping of e2 sends the agent into its backoff: 1 s, 2 s, 4 s, 8 s... */
    http_proxy_rule(&px, 0, "/api/v1/agents/", "/subscribe", HTTP_PROXY_FAIL_503, 0);
    CHECK(h_publish(f.d.http, f.tok, "ag.out", NULL, NULL, e2) > 0);
    H_WAIT_UNTIL(ok, 20000, http_proxy_hits(&px, 0) >= 4);
    CHECK(ok);
    /* The database is back; the next retry is 8 s (± 25 %) away. New work pings. */
    http_proxy_rule_off(&px, 0);
    int64_t t0 = h_now_ms();
    CHECK(h_publish(f.d.http, f.tok, "ag.out", NULL, NULL, e3) > 0);
    H_WAIT_UNTIL(ok, 4000,
                 agent_proc_out_count(&f.ap, e2) == 1 && agent_proc_out_count(&f.ap, e3) == 1);
    CHECK(ok);
    printf("after the outage: both events handled %lld ms after the ping\n",
           (long long)(h_now_ms() - t0));
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    http_proxy_stop(&px);
    free(url);
    agent_fixture_stop(&f);
}

/* ---- 3. a claim answer held back past its lease is released, not run ---- */

static void test_agent_late_claim_not_run(void)
{
    static const char *const sets[] = {"scavenger.interval_ms=50", "claim.max_attempts=100", NULL};
    struct agent_fixture f;
    if (!agent_fixture_start(&f, sets)) {
        return;
    }
    struct http_proxy px;
    CHECK_EQ(http_proxy_start(&px, f.d.port), 0);
    /* roostd commits the claim at once; its answer reaches the agent 2.5 s later. */
    http_proxy_rule(&px, 0, "/claim", NULL, HTTP_PROXY_DELAY, 2500);
    char *url = h_fmt("http://127.0.0.1:%d", px.port);
    agent_proc_start_lease(&f.ap, url, f.tok, "ag.late", 1, "", "2s");
    char id[31];
    CHECK(h_publish(f.d.http, f.tok, "ag.late", NULL, NULL, id) > 0);
    bool ok;
    H_WAIT_UNTIL(ok, 15000, agent_proc_log_contains(&f.ap, "event(s) unrun"));
    CHECK(ok);
    CHECK_EQ(agent_proc_out_count(&f.ap, id), 0);
    /* On time again: it runs, once. */
    http_proxy_rule_off(&px, 0);
    CHECK(h_publish(f.d.http, f.tok, "ag.late", NULL, NULL, NULL) > 0); /* a ping */
    H_WAIT_UNTIL(ok, 15000, h_event_status_is(&f.d, f.tok, "ag.late", id, "completed"));
    CHECK(ok);
    CHECK_EQ(agent_proc_out_count(&f.ap, id), 1);
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    http_proxy_stop(&px);
    free(url);
    agent_fixture_stop(&f);
}

/* ---- 4. exit 75: a growing delay, a bound, and the handler's own retry_after ---- */

static void test_agent_tempfail_is_bounded(void)
{
    static const char *const sets[] = {"claim.max_attempts=3", NULL};
    struct agent_fixture f;
    if (!agent_fixture_start(&f, sets)) {
        return;
    }
    char *pre = h_fmt("echo \"$ROOST_EVENT_ID\" >> '%s'; exit 75;", f.ap.out);
    static const char *const extra[] = {"--tempfail-max", "3", NULL};
    agent_proc_start_args(&f.ap, f.d.url, f.tok, "ag.t75", 1, pre, "30s", extra);
    char id[31];
    CHECK(h_publish(f.d.http, f.tok, "ag.t75", NULL, NULL, id) > 0);
    /* Attempt 1 waits 1 s, attempt 2 waits 2 s, attempt 3 reaches the bound: it counts as a
     * failure, and claim.max_attempts=3 quarantines it. Three runs, not thousands. */
    bool ok;
    H_WAIT_UNTIL(ok, 15000, h_event_status_is(&f.d, f.tok, "ag.t75", id, "quarantined"));
    CHECK(ok);
    CHECK_EQ(agent_proc_out_count(&f.ap, id), 3);
    char *admin = h_token(&f.d, "t1", "tenant:admin");
    json_t *q = NULL;
    CHECK_EQ(h_callj(f.d.http, "GET", admin, NULL, &q, "/api/v1/admin/quarantine/%s", id), 200);
    CHECK_EQ(h_int(q, "attempts"), 3);
    const char *le = h_str(q, "last_error");
    CHECK(le != NULL && strstr(le, "exit 75") != NULL);
    json_decref(q);
    free(admin);
    CHECK(agent_proc_log_contains(&f.ap, "attempt 1: retry later, retry in 1 s"));
    CHECK(agent_proc_log_contains(&f.ap, "attempt 2: retry later, retry in 2 s"));
    CHECK(agent_proc_log_contains(&f.ap, "attempt 3: retry later, counted as a failure"));
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    free(pre);
    agent_fixture_stop(&f);
}

static void test_agent_tempfail_retry_after(void)
{
    struct agent_fixture f;
    if (!agent_fixture_start(&f, NULL)) {
        return;
    }
    char *pre = h_fmt("echo \"$ROOST_EVENT_ID\" >> '%s'; echo retry_after=120 > "
                      "\"$ROOST_RESULT_FILE\"; exit 75;",
                      f.ap.out);
    agent_proc_start(&f.ap, f.d.url, f.tok, "ag.ra", 1, pre);
    char id[31];
    time_t before = time(NULL);
    CHECK(h_publish(f.d.http, f.tok, "ag.ra", NULL, NULL, id) > 0);
    bool ok;
    H_WAIT_UNTIL(ok, 10000, h_event_status_is(&f.d, f.tok, "ag.ra", id, "scheduled"));
    CHECK(ok);
    /* Scheduled about 120 s ahead, by the handler's word, after one run. */
    json_t *ev = h_inbox_event(&f.d, f.tok, "ag.ra", id);
    const char *at = h_str(ev, "available_at");
    struct tm tm = {0};
    CHECK(at != NULL && sscanf(at, "%d-%d-%dT%d:%d:%d", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                               &tm.tm_hour, &tm.tm_min, &tm.tm_sec) == 6);
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    int64_t ahead = (int64_t)timegm(&tm) - (int64_t)before;
    CHECK(ahead >= 110 && ahead <= 130);
    json_decref(ev);
    CHECK_EQ(agent_proc_out_count(&f.ap, id), 1);
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    free(pre);
    agent_fixture_stop(&f);
}

/* ---- 6. a quarantine says why: exit status and the end of stderr ---- */

static void test_agent_quarantine_has_reason(void)
{
    struct agent_fixture f;
    if (!agent_fixture_start(&f, NULL)) {
        return;
    }
    char *admin = h_token(&f.d, "t1", "tenant:admin");
    /* 3000 bytes of noise, then the reason: only the last 1 KiB is kept. */
    agent_proc_start(&f.ap, f.d.url, f.tok, "ag.q", 1,
                     "head -c 3000 /dev/zero | tr '\\0' x >&2; echo 'boom: bad input' >&2; "
                     "exit 65;");
    char id[31];
    CHECK(h_publish(f.d.http, f.tok, "ag.q", NULL, NULL, id) > 0);
    bool ok;
    H_WAIT_UNTIL(ok, 10000, h_event_status_is(&f.d, f.tok, "ag.q", id, "quarantined"));
    CHECK(ok);
    json_t *q = NULL;
    CHECK_EQ(h_callj(f.d.http, "GET", admin, NULL, &q, "/api/v1/admin/quarantine/%s", id), 200);
    const char *le = h_str(q, "last_error");
    CHECK(le != NULL && strncmp(le, "exit 65; stderr: ", 17) == 0);
    CHECK(le != NULL && strstr(le, "xxxboom: bad input\n") != NULL);
    CHECK(le != NULL && strlen(le) <= 17 + 1024);
    json_decref(q);
    /* One line per event in the log: attempt, outcome, duration, why. */
    char *line = h_fmt("event %s attempt 1: quarantine after ", id);
    CHECK(agent_proc_log_contains(&f.ap, line));
    CHECK(agent_proc_log_contains(&f.ap, " ms: exit 65; stderr: xxx"));
    free(line);
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    /* roostd's answer to a poison release says what became of the event. */
    char id2[31];
    CHECK(h_publish(f.d.http, f.tok, "ag.q", NULL, NULL, id2) > 0);
    json_t *evs = h_claim(f.d.http, f.tok, "ag.q", 1, 30, NULL);
    json_t *res = NULL;
    CHECK_EQ(h_callj(f.d.http, "POST", f.tok,
                     json_pack("{s:s, s:s}", "lease_token", h_str(h_at(evs, 0), "lease_token"),
                               "reason", "poison"),
                     &res, "/api/v1/agents/ag.q/inbox/%s/release", id2),
             200);
    CHECK_STREQ(h_str(res, "status"), "quarantined");
    json_decref(res);
    json_decref(evs);
    free(admin);
    agent_fixture_stop(&f);
}

/* ---- 6b. the attempt that quarantines is logged and counted as such; a traceback's reason is
 * its last line ---- */

static void test_agent_last_attempt_logged_quarantined(void)
{
    static const char *const sets[] = {"claim.max_attempts=2", NULL};
    struct agent_fixture f;
    if (!agent_fixture_start(&f, sets)) {
        return;
    }
    /* What a Python handler prints when it raises. */
    agent_proc_start(&f.ap, f.d.url, f.tok, "ag.tb", 1,
                     "printf 'Traceback (most recent call last):\\n  File \"h.py\", line 3, in "
                     "<module>\\n    main()\\nValueError: bad input\\n' >&2; exit 1;");
    char id[31];
    CHECK(h_publish(f.d.http, f.tok, "ag.tb", NULL, NULL, id) > 0);
    bool ok;
    H_WAIT_UNTIL(ok, 30000, h_event_status_is(&f.d, f.tok, "ag.tb", id, "quarantined"));
    CHECK(ok);
    /* The keeper logs the server's answer to each failure's release. */
    char *rel = h_fmt("event %s attempt 1: released, retry in ", id);
    char *quar =
        h_fmt("event %s attempt 2: quarantined, not retried (its attempts are used up", id);
    H_WAIT_UNTIL(ok, 10000, agent_proc_log_contains(&f.ap, quar));
    CHECK(ok);
    CHECK(agent_proc_log_contains(&f.ap, rel));
    CHECK(!agent_proc_log_contains(&f.ap, "attempt 2: released"));
    /* The reason shown is the exception, not the traceback's first line. */
    CHECK(agent_proc_log_contains(&f.ap, " ms: ValueError: bad input"));
    CHECK(!agent_proc_log_contains(&f.ap, " ms: exit 1; stderr: Traceback"));
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    CHECK(agent_proc_log_contains(&f.ap, "2 handled, 0 acked, 1 released, 1 quarantined"));
    free(rel);
    free(quar);
    agent_fixture_stop(&f);
}

/* ---- 7. handlers die with their agent ---- */

/* The handler first notes whether its supervisor's pid file (which a restart reads) already
 * exists, then records its shell's pid, its parent's (the agent's supervisor process) and, on
 * its first attempt, a background sleep's, then waits for it. */
static char *long_handler(const struct agent_proc *ap)
{
    return h_fmt("[ -f '%s/exec/'$PPID.pid ] || echo $PPID >> '%s/unnamed.pids'; "
                 "echo $$ >> '%s/sh.pids'; echo $PPID >> '%s/sup.pids'; "
                 "if [ \"$ROOST_ATTEMPT\" = 1 ]; then sleep 60 & echo $! >> '%s/sh.pids'; wait; "
                 "fi;",
                 ap->state, ap->dir, ap->dir, ap->dir, ap->dir);
}

static void test_agent_sigkill_ends_handlers(void)
{
    struct agent_fixture f;
    if (!agent_fixture_start(&f, NULL)) {
        return;
    }
    char *pre = long_handler(&f.ap);
    agent_proc_start(&f.ap, f.d.url, f.tok, "ag.k9", 1, pre);
    char id[31];
    CHECK(h_publish(f.d.http, f.tok, "ag.k9", NULL, NULL, id) > 0);
    char *path = h_fmt("%s/sh.pids", f.ap.dir);
    pid_t pids[8];
    bool ok;
    H_WAIT_UNTIL(ok, 10000, read_pids(path, pids, 8) == 2);
    CHECK(ok);
    agent_proc_kill9(&f.ap);
    /* The shell and its background job are gone, without a restart. */
    H_WAIT_UNTIL(ok, 5000, !proc_alive(pids[0]) && !proc_alive(pids[1]));
    CHECK(ok);
    /* The restart runs the event again: a single copy, the first one being gone. */
    agent_proc_start(&f.ap, f.d.url, f.tok, "ag.k9", 1, pre);
    H_WAIT_UNTIL(ok, 10000, h_event_status_is(&f.d, f.tok, "ag.k9", id, "completed"));
    CHECK(ok);
    CHECK_EQ(agent_proc_out_count(&f.ap, id), 1);
    CHECK_EQ(read_pids(path, pids, 8), 3);
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    free(path);
    free(pre);
    agent_fixture_stop(&f);
}

static void test_agent_restart_ends_orphans(void)
{
    struct agent_fixture f;
    if (!agent_fixture_start(&f, NULL)) {
        return;
    }
    char *pre = long_handler(&f.ap);
    agent_proc_start(&f.ap, f.d.url, f.tok, "ag.orph", 1, pre);
    char id[31];
    CHECK(h_publish(f.d.http, f.tok, "ag.orph", NULL, NULL, id) > 0);
    char *path = h_fmt("%s/sh.pids", f.ap.dir), *sup_path = h_fmt("%s/sup.pids", f.ap.dir);
    pid_t pids[8], sup[8];
    bool ok;
    H_WAIT_UNTIL(ok, 10000, read_pids(path, pids, 8) == 2 && read_pids(sup_path, sup, 8) == 1);
    CHECK(ok);
    /* The command started only once its pid file was written: a restart can always find it. */
    char *unnamed_path = h_fmt("%s/unnamed.pids", f.ap.dir);
    pid_t unnamed[8];
    CHECK_EQ(read_pids(unnamed_path, unnamed, 8), 0);
    free(unnamed_path);
    /* The agent frozen, the process between it and the handler killed, then the agent: nothing
     * is left to notice, and the handler runs on, orphaned. */
    kill(f.ap.pid, SIGSTOP);
    kill(sup[0], SIGKILL);
    agent_proc_kill9(&f.ap);
    CHECK(proc_alive(pids[0]) && proc_alive(pids[1]));
    /* The restart ends them (named by the state dir) before it claims anything. */
    agent_proc_start(&f.ap, f.d.url, f.tok, "ag.orph", 1, pre);
    H_WAIT_UNTIL(ok, 5000, !proc_alive(pids[0]) && !proc_alive(pids[1]));
    CHECK(ok);
    H_WAIT_UNTIL(ok, 10000, h_event_status_is(&f.d, f.tok, "ag.orph", id, "completed"));
    CHECK(ok);
    CHECK(agent_proc_log_contains(&f.ap, "ended the command"));
    CHECK_EQ(agent_proc_out_count(&f.ap, id), 1);
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    for (int i = 0; i < 2; i++) {
        if (proc_alive(pids[i])) {
            kill(pids[i], SIGKILL); /* (only after a failure) */
        }
    }
    free(path);
    free(sup_path);
    free(pre);
    agent_fixture_stop(&f);
}

/* ---- 8. a command's supervisor holds no descriptor of the agent's ---- */

/* Every command's supervisor (its parent) keeps only stdin, stdout and stderr: one that kept the
 * agent's descriptors would hold the stdin pipes of commands other workers start at the same
 * time, and two commands reading their stdin to the end then wait for each other forever (the
 * chaos runner's agents hung so, tests/chaos). */
static void test_agent_supervisor_closes_inherited_fds(void)
{
    struct agent_fixture f;
    if (!agent_fixture_start(&f, NULL)) {
        return;
    }
    /* A held descriptor is there the whole time. Under ASan the supervisor's runtime opens and
     * closes some of its own for a moment (CI once caught a pipe so), which a single look can
     * see. So a descriptor counts only when two looks 100 ms apart find it with the same target. */
    char *pre =
        h_fmt("cat >/dev/null; look() { for n in $(ls /proc/$PPID/fd); do "
              "[ \"$n\" -gt 2 ] && t=$(readlink /proc/$PPID/fd/$n) && [ -n \"$t\" ] && "
              "echo \"$n $t\"; done; }; a=$(look); sleep 0.1; b=$(look); "
              "echo \"$a\" | while read -r x; do [ -n \"$x\" ] && "
              "echo \"$b\" | grep -qxF \"$x\" && echo \"$x\" >> '%s/extra.fds'; done; true;",
              f.ap.dir);
    agent_proc_start(&f.ap, f.d.url, f.tok, "ag.fd", 4, pre);
    h_publish_n(&f.d, f.tok, "ag.fd", 8, NULL);
    bool ok;
    H_WAIT_UNTIL(ok, 20000, agent_proc_out_lines(&f.ap) == 8);
    CHECK(ok);
    char *path = h_fmt("%s/extra.fds", f.ap.dir), *extra = NULL;
    size_t extra_len = 0;
    if (h_read_file(path, &extra, &extra_len) == 0) {
        fprintf(stderr, "descriptors a supervisor kept:\n%s", extra);
    }
    CHECK(extra == NULL);
    free(extra);
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    free(path);
    free(pre);
    agent_fixture_stop(&f);
}

int main(void)
{
    h_init();
    RUN(test_agent_restart_acks_processed_beside_sibling);
    RUN(test_agent_ping_ends_backoff);
    RUN(test_agent_late_claim_not_run);
    RUN(test_agent_tempfail_is_bounded);
    RUN(test_agent_tempfail_retry_after);
    RUN(test_agent_quarantine_has_reason);
    RUN(test_agent_last_attempt_logged_quarantined);
    RUN(test_agent_sigkill_ends_handlers);
    RUN(test_agent_restart_ends_orphans);
    RUN(test_agent_supervisor_closes_inherited_fds);
    return h_summary();
}
