/* SPDX-License-Identifier: MIT */
/* The agent loop against the real roostd, through `roost agent run --exec` (a child process we
 * can SIGKILL): no work is lost and none is repeated across an agent crash, a roostd restart, a
 * blocked SSE stream (long polls take over), a lost ack (the processed set acks instead of running
 * the handler again) and an expired cursor (410 → state resync); an idle agent wakes on the SSE
 * ping. A small TCP proxy (harness/http_proxy.h) sits between agent and roostd where a test needs
 * to break things. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/agent_proc.h"
#include "harness/harness.h"
#include "harness/http_proxy.h"
#include "roost/roost_agent.h"

#include "common/banned.h"

/* ---- (a) SIGKILL of the agent mid-way, restart with the same state dir ---- */

#define KILL_EVENTS 200
#define KILL_CONCURRENCY 4

static void test_agent_sigkill_restart_loses_nothing(void)
{
    static const char *const sets[] = {"scavenger.interval_ms=50", NULL};
    struct agent_fixture f;
    if (!agent_fixture_start(&f, sets)) {
        return;
    }
    static char ids[KILL_EVENTS][31];
    h_publish_n(&f.d, f.tok, "ag.kill", KILL_EVENTS, ids);
    /* A short sleep per event keeps handlers in flight when the kill lands. */
    agent_proc_start(&f.ap, f.d.url, f.tok, "ag.kill", KILL_CONCURRENCY, "sleep 0.01;");
    bool ok;
    H_WAIT_UNTIL(ok, 20000, agent_proc_out_lines(&f.ap) >= 50);
    CHECK(ok);
    agent_proc_kill9(&f.ap);
    int at_kill = agent_proc_out_lines(&f.ap);
    CHECK(at_kill < KILL_EVENTS); /* the kill really landed mid-way */
    /* The dead run's leases are outstanding (30 s lease): only recovery frees them in time. */
    agent_proc_start(&f.ap, f.d.url, f.tok, "ag.kill", KILL_CONCURRENCY, "sleep 0.01;");
    H_WAIT_UNTIL(ok, 20000, h_count_status(&f.d, f.tok, "ag.kill", "completed") == KILL_EVENTS);
    CHECK(ok);
    CHECK(agent_proc_log_contains(&f.ap, "recovery: released"));
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    /* Orphaned handlers of the killed run finish within their sleep. */
    h_sleep_ms(200);
    int missing = 0, dups = 0;
    for (int i = 0; i < KILL_EVENTS; i++) {
        int n = agent_proc_out_count(&f.ap, ids[i]);
        missing += n == 0;
        dups += n > 1 ? n - 1 : 0;
    }
    CHECK_EQ(missing, 0);
    CHECK(dups <= KILL_CONCURRENCY);
    CHECK_EQ(agent_proc_out_lines(&f.ap), KILL_EVENTS + dups); /* nothing foreign in the file */
    /* A graceful stop leaves no lease behind. */
    struct roost_agent_status st;
    CHECK_EQ(roost_agent_status_read(f.ap.state, &st), ROOST_OK);
    CHECK_EQ(st.outstanding_leases, 0);
    CHECK_EQ(st.conn, ROOST_AGENT_CONN_STOPPED);
    CHECK(!st.running);
    printf("sigkill: %d handled at kill, %d duplicate(s)\n", at_kill, dups);
    agent_fixture_stop(&f);
}

/* ---- (b) roostd killed and restarted on the same data dir and port ---- */

static void test_agent_survives_roostd_restart(void)
{
    static const char *const sets[] = {"scavenger.interval_ms=50", NULL};
    struct agent_fixture f;
    if (!agent_fixture_start(&f, sets)) {
        return;
    }
    agent_proc_start(&f.ap, f.d.url, f.tok, "ag.restart", 2, "");
    bool ok;
    H_WAIT_UNTIL(ok, 10000, agent_proc_status_is(&f.ap, ROOST_AGENT_CONN_STREAMING));
    CHECK(ok);
    char before[31];
    CHECK(h_publish(f.d.http, f.tok, "ag.restart", NULL, NULL, before) > 0);
    H_WAIT_UNTIL(ok, 5000, agent_proc_out_count(&f.ap, before) == 1);
    CHECK(ok);

    char dir[256], listen[64];
    snprintf(dir, sizeof dir, "%s", f.d.dir);
    snprintf(listen, sizeof listen, "listen=127.0.0.1:%d", f.d.port);
    roostd_kill(&f.d);
    /* The agent notices: the stream is gone, requests fail. */
    H_WAIT_UNTIL(ok, 10000, !agent_proc_status_is(&f.ap, ROOST_AGENT_CONN_STREAMING));
    CHECK(ok);
    const char *const sets2[] = {"scavenger.interval_ms=50", listen, NULL};
    if (roostd_start(&f.d, dir, sets2) != 0) {
        CHECK(!"roostd restarted on the same port");
        agent_proc_kill9(&f.ap);
        agent_proc_cleanup(&f.ap);
        free(f.tok);
        return;
    }
    free(f.tok);
    f.tok = h_token(&f.d, "t1", AGENT_SCOPE);
    char after[3][31];
    for (int i = 0; i < 3; i++) {
        CHECK(h_publish(f.d.http, f.tok, "ag.restart", NULL, NULL, after[i]) > 0);
    }
    H_WAIT_UNTIL(ok, 15000,
                 agent_proc_out_count(&f.ap, after[0]) == 1 &&
                     agent_proc_out_count(&f.ap, after[1]) == 1 &&
                     agent_proc_out_count(&f.ap, after[2]) == 1);
    CHECK(ok);
    H_WAIT_UNTIL(ok, 15000, agent_proc_status_is(&f.ap, ROOST_AGENT_CONN_STREAMING));
    CHECK(ok); /* and the stream is back */
    H_WAIT_UNTIL(ok, 5000, h_count_status(&f.d, f.tok, "ag.restart", "completed") == 4);
    CHECK(ok);
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    CHECK_EQ(agent_proc_out_lines(&f.ap), 4);
    agent_fixture_stop(&f);
}

/* ---- (c) SSE blocked by a proxy: long polls still deliver promptly ---- */

static void test_agent_polls_when_sse_blocked(void)
{
    /* A short claim.max_wait_s: the agent's default long poll (25 s) is refused with 400
     * invalid_wait_s and it must adapt. */
    static const char *const sets[] = {"claim.max_wait_s=5", NULL};
    struct agent_fixture f;
    if (!agent_fixture_start(&f, sets)) {
        return;
    }
    struct http_proxy px;
    CHECK_EQ(http_proxy_start(&px, f.d.port), 0);
    http_proxy_rule(&px, 0, "/subscribe", NULL, HTTP_PROXY_DROP, 0);
    char *url = h_fmt("http://127.0.0.1:%d", px.port);
    agent_proc_start(&f.ap, url, f.tok, "ag.poll", 1, "");
    bool ok;
    H_WAIT_UNTIL(ok, 10000,
                 agent_proc_status_is(&f.ap, ROOST_AGENT_CONN_POLLING) &&
                     http_proxy_hits(&px, 0) > 0);
    CHECK(ok);
    h_sleep_ms(300); /* let the agent settle into its long poll */
    for (int i = 0; i < 3; i++) {
        char id[31];
        int64_t t0 = h_now_ms();
        CHECK(h_publish(f.d.http, f.tok, "ag.poll", NULL, NULL, id) > 0);
        H_WAIT_UNTIL(ok, 30000, agent_proc_out_count(&f.ap, id) == 1);
        CHECK(ok);
        int64_t took = h_now_ms() - t0;
        printf("sse blocked: event %d handled after %lld ms\n", i, (long long)took);
        /* Woken in its long poll, not at the poll's end (15 s: half the 30 s lease): a
         * wide gap, so a machine many times slower than usual still tells the two apart. */
        CHECK(took < 10000);
    }
    CHECK(agent_proc_status_is(&f.ap, ROOST_AGENT_CONN_POLLING)); /* it never streamed */
    CHECK(http_proxy_hits(&px, 0) >= 1);
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    http_proxy_stop(&px);
    free(url);
    agent_fixture_stop(&f);
}

/* ---- (d) the ack is lost: after a restart the handler does not run again ---- */

/* With `expire`, the restart comes after the lease expired (roostd took the event back), else
 * while the dead run's lease still holds. */
static void lost_ack_case(bool expire)
{
    static const char *const sets[] = {"scavenger.interval_ms=50", NULL};
    struct agent_fixture f;
    if (!agent_fixture_start(&f, sets)) {
        return;
    }
    struct http_proxy px;
    CHECK_EQ(http_proxy_start(&px, f.d.port), 0);
    http_proxy_rule(&px, 0, "/ack", NULL, HTTP_PROXY_DROP, 0);
    char *url = h_fmt("http://127.0.0.1:%d", px.port);
    agent_proc_start_lease(&f.ap, url, f.tok, "ag.lost", 1, "", expire ? "2s" : "30s");
    char id[31];
    CHECK(h_publish(f.d.http, f.tok, "ag.lost", NULL, NULL, id) > 0);
    bool ok;
    /* Handled and recorded as processed, but every ack is dropped on the way. */
    struct roost_agent_status st;
    H_WAIT_UNTIL(ok, 10000,
                 agent_proc_out_count(&f.ap, id) == 1 && http_proxy_hits(&px, 0) >= 1 &&
                     roost_agent_status_read(f.ap.state, &st) == ROOST_OK && st.processed_ids == 1);
    CHECK(ok);
    agent_proc_kill9(&f.ap);
    char *s = h_event_status(&f.d, f.tok, "ag.lost", id);
    CHECK_STREQ(s, "claimed"); /* the ack never reached roostd */
    free(s);
    if (expire) {
        H_WAIT_UNTIL(ok, 10000, h_event_status_is(&f.d, f.tok, "ag.lost", id, "pending"));
        CHECK(ok);
    }
    /* Restart straight to roostd. While the old lease holds, recovery acks it (the event is in
     * the processed set); once it expired, the ack is refused, the claim brings the event back,
     * and the processed set acks it without running the handler. */
    agent_proc_start(&f.ap, f.d.url, f.tok, "ag.lost", 1, "");
    const char *how = expire ? "already processed" : "recovery: acked 1 processed event";
    /* (roostd completes the event before the agent has its answer and logs it) */
    H_WAIT_UNTIL(ok, 10000,
                 h_event_status_is(&f.d, f.tok, "ag.lost", id, "completed") &&
                     agent_proc_log_contains(&f.ap, how));
    CHECK(ok);
    CHECK_EQ(agent_proc_out_count(&f.ap, id), 1);
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    http_proxy_stop(&px);
    free(url);
    agent_fixture_stop(&f);
}

static void test_agent_lost_ack_not_rerun(void)
{
    lost_ack_case(false);
    lost_ack_case(true);
}

/* ---- (e) 410: the cursor is older than retention ---- */

static void test_agent_resyncs_after_410(void)
{
    static const char *const sets[] = {"retention.completed_s=0", "retention.interval_ms=50", NULL};
    struct agent_fixture f;
    if (!agent_fixture_start(&f, sets)) {
        return;
    }
    h_publish_n(&f.d, f.tok, "ag.gone", 3, NULL);
    CHECK(h_publish(f.d.http, f.tok, "ag.gone", NULL,
                    json_pack("{s:{s:s}}", "state_patch", "mode", "resynced"), NULL) > 0);
    /* Complete the first three by hand; retention then purges them. */
    json_t *claimed = h_claim(f.d.http, f.tok, "ag.gone", 3, 60, "manual");
    CHECK_EQ(json_array_size(claimed), 3);
    for (size_t i = 0; i < json_array_size(claimed); i++) {
        CHECK_EQ(h_ack(f.d.http, f.tok, "ag.gone", h_str(h_at(claimed, i), "event_id"),
                       h_str(h_at(claimed, i), "lease_token")),
                 200);
    }
    json_decref(claimed);
    bool ok;
    long st = 0;
    H_WAIT_UNTIL(ok, 10000,
                 (json_decref(h_inbox(f.d.http, f.tok, "ag.gone", 0, 10, &st)), st == 410));
    CHECK(ok);
    /* A new agent starts at cursor 0: 410, state resync, and the fourth event still runs. */
    agent_proc_start(&f.ap, f.d.url, f.tok, "ag.gone", 1, "");
    H_WAIT_UNTIL(ok, 10000, agent_proc_out_lines(&f.ap) == 1);
    CHECK(ok);
    CHECK(agent_proc_log_contains(&f.ap, "state resync after 410: continuing at cursor 4"));
    CHECK(agent_proc_log_contains(&f.ap, "\"mode\":\"resynced\""));
    struct roost_agent_status ast;
    H_WAIT_UNTIL(ok, 5000,
                 roost_agent_status_read(f.ap.state, &ast) == ROOST_OK && ast.cursor == 4);
    CHECK(ok);
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    agent_fixture_stop(&f);
}

/* `roost agent status --compact` of the agent's state dir, parsed; NULL when it failed. */
static json_t *cli_agent_status(const struct agent_proc *ap)
{
    char *cmd = h_fmt("'%s' agent status --state-dir '%s' --compact", ROOST_CLI_BIN, ap->state);
    FILE *f = popen(cmd, "r");
    free(cmd);
    if (f == NULL) {
        return NULL;
    }
    char line[2048] = "";
    if (fgets(line, sizeof line, f) == NULL) {
        line[0] = '\0';
    }
    if (pclose(f) != 0) {
        return NULL;
    }
    json_error_t jerr;
    return json_loads(line, 0, &jerr);
}

/* ---- (f) an idle agent wakes on the SSE ping ---- */

static void test_agent_idle_wakes_on_ping(void)
{
    struct agent_fixture f;
    if (!agent_fixture_start(&f, NULL)) {
        return;
    }
    agent_proc_start(&f.ap, f.d.url, f.tok, "ag.idle", 1, "");
    bool ok;
    H_WAIT_UNTIL(ok, 10000, agent_proc_status_is(&f.ap, ROOST_AGENT_CONN_STREAMING));
    CHECK(ok);
    h_sleep_ms(1000); /* idle: nothing to do, nothing polled */
    for (int i = 0; i < 3; i++) {
        char id[31];
        int64_t t0 = h_now_ms();
        CHECK(h_publish(f.d.http, f.tok, "ag.idle", NULL, NULL, id) > 0);
        H_WAIT_UNTIL(ok, 30000, agent_proc_out_count(&f.ap, id) == 1);
        CHECK(ok);
        int64_t took = h_now_ms() - t0;
        printf("idle wake-up %d: %lld ms\n", i, (long long)took);
        CHECK(took < 10000); /* pushed, not found by the 60 s resync */
    }
    CHECK(agent_proc_status_is(&f.ap, ROOST_AGENT_CONN_STREAMING));
    /* `roost agent status` reads the same from another process. The handler's output is written
     * before its ack is sent, so wait (bounded) for the last ack to land before reading the
     * lease count. */
    json_t *js = NULL;
    H_WAIT_UNTIL(ok, 5000,
                 (json_decref(js), js = cli_agent_status(&f.ap)) != NULL &&
                     h_int(js, "outstanding_leases") == 0);
    CHECK(ok);
    CHECK_STREQ(h_str(js, "connection"), "streaming");
    CHECK_STREQ(h_str(js, "agent_id"), "ag.idle");
    CHECK(json_is_true(json_object_get(js, "running")));
    CHECK_EQ(h_int(js, "outstanding_leases"), 0);
    CHECK_EQ(h_int(js, "cursor"), 3);
    CHECK(json_is_string(json_object_get(js, "last_sync")));
    json_decref(js);
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    agent_fixture_stop(&f);
}

/* ---- (g) a handler longer than its lease keeps it by extension ---- */

static void test_agent_extends_lease_of_long_handler(void)
{
    static const char *const sets[] = {"scavenger.interval_ms=50", NULL};
    struct agent_fixture f;
    if (!agent_fixture_start(&f, sets)) {
        return;
    }
    /* A 1 s lease and a 3 s handler: without extension the scavenger takes the event back and
     * the ack is refused (the processed set then saves the handler from a second run). */
    agent_proc_start_lease(&f.ap, f.d.url, f.tok, "ag.long", 1, "sleep 3;", "1s");
    char id[31];
    CHECK(h_publish(f.d.http, f.tok, "ag.long", NULL, NULL, id) > 0);
    bool ok;
    H_WAIT_UNTIL(ok, 10000, h_event_status_is(&f.d, f.tok, "ag.long", id, "completed"));
    CHECK(ok);
    CHECK_EQ(agent_proc_out_count(&f.ap, id), 1);
    CHECK(!agent_proc_log_contains(&f.ap, "refused"));
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    CHECK_EQ(agent_proc_out_count(&f.ap, id), 1);
    agent_fixture_stop(&f);
}

/* ---- (h) exit codes: 1 → retry with backoff, 75 → retry now, 65 → quarantine ---- */

static void test_agent_exit_codes(void)
{
    static const char *const sets[] = {"scavenger.interval_ms=50", NULL};
    struct agent_fixture f;
    if (!agent_fixture_start(&f, sets)) {
        return;
    }
    agent_proc_start(&f.ap, f.d.url, f.tok, "ag.codes", 2,
                     "p=$(cat); case \"$p\" in *fail*) [ \"$ROOST_ATTEMPT\" = 1 ] && exit 1;; "
                     "*poison*) exit 65;; *later*) [ \"$ROOST_ATTEMPT\" = 1 ] && exit 75;; esac; "
                     "echo \"$ROOST_ATTEMPT\" >> '/dev/null';");
    char fail[31], poison[31], later[31];
    int64_t t0 = h_now_ms();
    CHECK(h_publish(f.d.http, f.tok, "ag.codes", json_pack("{s:b}", "fail", 1), NULL, fail) > 0);
    CHECK(h_publish(f.d.http, f.tok, "ag.codes", json_pack("{s:b}", "poison", 1), NULL, poison) >
          0);
    CHECK(h_publish(f.d.http, f.tok, "ag.codes", json_pack("{s:b}", "later", 1), NULL, later) > 0);
    bool ok;
    H_WAIT_UNTIL(ok, 10000, h_count_status(&f.d, f.tok, "ag.codes", "completed") == 2);
    CHECK(ok);
    /* The failed one waited for its backoff (1 s after attempt 1) before attempt 2. */
    CHECK(h_now_ms() - t0 >= 900);
    char *s = h_event_status(&f.d, f.tok, "ag.codes", poison);
    CHECK_STREQ(s, "quarantined");
    free(s);
    CHECK_EQ(agent_proc_out_count(&f.ap, fail), 1);
    CHECK_EQ(agent_proc_out_count(&f.ap, later), 1);
    CHECK_EQ(agent_proc_out_count(&f.ap, poison), 0);
    /* The quarantine view tells the failure (a nack) from the free give-back. */
    json_t *q = NULL;
    char *admin = h_token(&f.d, "t1", "tenant:admin");
    CHECK_EQ(
        h_callj(f.d.http, "GET", admin, NULL, &q, "/api/v1/admin/quarantine?agent_id=ag.codes"),
        200);
    CHECK_EQ(json_array_size(json_object_get(q, "events")), 1);
    json_decref(q);
    free(admin);
    CHECK_EQ(agent_proc_term(&f.ap), 0);
    agent_fixture_stop(&f);
}

/* ---- the C API in process: counters, callbacks, the bounded processed set ---- */

struct inproc {
    atomic_int handled;
    atomic_int streaming_seen;
    atomic_int stopped_seen;
};

static int inproc_handler(const struct roost_event *ev, void *ctx)
{
    struct inproc *x = ctx;
    (void)ev;
    atomic_fetch_add(&x->handled, 1);
    return ROOST_AGENT_ACK;
}

static void inproc_conn(enum roost_agent_conn c, void *ctx)
{
    struct inproc *x = ctx;
    if (c == ROOST_AGENT_CONN_STREAMING) {
        atomic_fetch_add(&x->streaming_seen, 1);
    } else if (c == ROOST_AGENT_CONN_STOPPED) {
        atomic_fetch_add(&x->stopped_seen, 1);
    }
}

struct run_arg {
    struct roost_agent *agent;
    int rc;
};

static void *run_thread(void *arg)
{
    struct run_arg *r = arg;
    r->rc = roost_agent_run(r->agent);
    return NULL;
}

#define INPROC_EVENTS 300

static void test_agent_c_api_in_process(void)
{
    struct agent_fixture f;
    if (!agent_fixture_start(&f, NULL)) {
        return;
    }
    struct inproc x = {0};
    struct roost_agent_options o;
    roost_agent_options_init(&o);
    o.server_url = f.d.url;
    o.token = f.tok;
    o.agent_id = "ag.sdk";
    o.state_dir = f.ap.state;
    o.consumer = "inproc-1";
    o.concurrency = 8;
    o.processed_max = 16;
    o.handler = inproc_handler;
    o.handler_ctx = &x;
    o.on_conn = inproc_conn;
    o.cb_ctx = &x;
    struct run_arg r = {0};
    CHECK_EQ(roost_agent_new(&r.agent, &o), ROOST_OK);
    pthread_t t;
    CHECK_EQ(pthread_create(&t, NULL, run_thread, &r), 0);
    h_publish_n(&f.d, f.tok, "ag.sdk", INPROC_EVENTS, NULL);
    bool ok;
    struct roost_agent_status st;
    H_WAIT_UNTIL(ok, 20000,
                 roost_agent_status(r.agent, &st) == ROOST_OK && st.acked == INPROC_EVENTS);
    CHECK(ok);
    CHECK_EQ(h_count_status(&f.d, f.tok, "ag.sdk", "completed"), INPROC_EVENTS);
    CHECK_EQ(st.handled, INPROC_EVENTS);
    CHECK_EQ(atomic_load(&x.handled), INPROC_EVENTS);
    CHECK_STREQ(st.consumer, "inproc-1");
    CHECK(st.running);
    CHECK_EQ(st.cursor >= 0, 1);
    CHECK(st.last_sync_ms > 0);
    CHECK(atomic_load(&x.streaming_seen) >= 1);
    roost_agent_stop(r.agent);
    pthread_join(t, NULL);
    CHECK_EQ(r.rc, ROOST_OK);
    CHECK_EQ(atomic_load(&x.stopped_seen), 1);
    roost_agent_free(r.agent);
    /* The processed set is pruned to processed_max every 256 inserts: 16 + 44. */
    CHECK_EQ(roost_agent_status_read(f.ap.state, &st), ROOST_OK);
    CHECK_EQ(st.processed_ids, 16 + (INPROC_EVENTS - 256));
    CHECK_EQ(st.outstanding_leases, 0);
    CHECK_EQ(st.conn, ROOST_AGENT_CONN_STOPPED);
    CHECK_EQ(st.cursor, INPROC_EVENTS);
    agent_fixture_stop(&f);
}

/* ---- roost inbox tail: pull, then SSE wake-ups (or long polls when SSE is blocked) ---- */

/* `from`: the --from cursor, or NULL for the default (the head). */
static pid_t tail_start(const char *url, const char *token, const char *agent, const char *out,
                        const char *from)
{
    setenv("ROOST_TOKEN", token, 1);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
        }
        if (from != NULL) {
            execl(ROOST_CLI_BIN, "roost", "inbox", "tail", "--server", url, "--agent", agent,
                  "--from", from, (char *)NULL);
        } else {
            execl(ROOST_CLI_BIN, "roost", "inbox", "tail", "--server", url, "--agent", agent,
                  (char *)NULL);
        }
        _exit(127);
    }
    return pid;
}

/* The sequence numbers of the NDJSON lines of `path`, in order; returns how many (<= max). */
static int tail_seqs(const char *path, int64_t *seqs, int max)
{
    char *data = NULL;
    size_t len = 0;
    int n = 0;
    if (h_read_file(path, &data, &len) != 0) {
        return 0;
    }
    for (char *p = data; p != NULL && *p != '\0' && n < max;) {
        char *nl = strchr(p, '\n');
        if (nl == NULL) {
            break; /* a line still being written */
        }
        json_error_t err;
        json_t *j = json_loadb(p, (size_t)(nl - p), 0, &err);
        seqs[n++] = j != NULL ? (int64_t)h_int(j, "sequence_number") : -1;
        json_decref(j);
        p = nl + 1;
    }
    free(data);
    return n;
}

/* Open SSE streams of `agent` as GET /admin/agents counts them; -1 when unknown. */
static int subscribers(struct roostd *d, const char *admin, const char *agent)
{
    json_t *res = NULL;
    int n = -1;
    if (h_callj(d->http, "GET", admin, NULL, &res, "/api/v1/admin/agents") == 200) {
        json_t *agents = json_object_get(res, "agents");
        for (size_t i = 0; i < json_array_size(agents); i++) {
            if (strcmp(h_str(h_at(agents, i), "agent_id"), agent) == 0) {
                n = (int)h_int(h_at(agents, i), "subscribers");
            }
        }
    }
    json_decref(res);
    return n;
}

static void test_inbox_tail_follows(void)
{
    struct agent_fixture f;
    if (!agent_fixture_start(&f, NULL)) {
        return;
    }
    char *out1 = h_fmt("%s/tail1.ndjson", f.ap.dir), *out2 = h_fmt("%s/tail2.ndjson", f.ap.dir);
    char *out3 = h_fmt("%s/tail3.ndjson", f.ap.dir);
    h_publish_n(&f.d, f.tok, "ag.tail", 2, NULL);
    pid_t t1 = tail_start(f.d.url, f.tok, "ag.tail", out1, "0");
    struct http_proxy px;
    CHECK_EQ(http_proxy_start(&px, f.d.port), 0);
    http_proxy_rule(&px, 0, "/subscribe", NULL, HTTP_PROXY_DROP, 0);
    char *purl = h_fmt("http://127.0.0.1:%d", px.port);
    pid_t t2 = tail_start(purl, f.tok, "ag.tail", out2, "0");
    /* Without --from, like tail -f: only what comes after the head it found. */
    pid_t t3 = tail_start(f.d.url, f.tok, "ag.tail", out3, NULL);
    int64_t seqs[16];
    bool ok;
    H_WAIT_UNTIL(ok, 5000, tail_seqs(out1, seqs, 16) == 2 && tail_seqs(out2, seqs, 16) == 2);
    CHECK(ok);
    H_WAIT_UNTIL(ok, 5000, http_proxy_hits(&px, 0) >= 1);
    CHECK(ok);
    /* t1 and t3 have their streams open, so each has read the head already. */
    char *admin = h_token(&f.d, "t1", "tenant:admin");
    H_WAIT_UNTIL(ok, 5000, subscribers(&f.d, admin, "ag.tail") == 2);
    CHECK(ok);
    free(admin);
    CHECK_EQ(tail_seqs(out3, seqs, 16), 0);
    for (int i = 0; i < 3; i++) {
        CHECK(h_publish(f.d.http, f.tok, "ag.tail", NULL, NULL, NULL) == 3 + i);
        H_WAIT_UNTIL(ok, 3000,
                     tail_seqs(out1, seqs, 16) == 3 + i && tail_seqs(out2, seqs, 16) == 3 + i &&
                         tail_seqs(out3, seqs, 16) == 1 + i);
        CHECK(ok);
    }
    for (int k = 0; k < 2; k++) {
        int n = tail_seqs(k == 0 ? out1 : out2, seqs, 16);
        CHECK_EQ(n, 5);
        for (int i = 0; i < n; i++) {
            CHECK_EQ(seqs[i], i + 1); /* every event once, in order */
        }
    }
    CHECK_EQ(tail_seqs(out3, seqs, 16), 3);
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(seqs[i], i + 3); /* the new ones only */
    }
    kill(t1, SIGTERM);
    kill(t2, SIGTERM);
    kill(t3, SIGTERM);
    waitpid(t1, NULL, 0);
    waitpid(t2, NULL, 0);
    waitpid(t3, NULL, 0);
    http_proxy_stop(&px);
    free(purl);
    free(out1);
    free(out2);
    free(out3);
    agent_fixture_stop(&f);
}

int main(void)
{
    h_init();
    RUN(test_agent_sigkill_restart_loses_nothing);
    RUN(test_agent_survives_roostd_restart);
    RUN(test_agent_polls_when_sse_blocked);
    RUN(test_agent_lost_ack_not_rerun);
    RUN(test_agent_resyncs_after_410);
    RUN(test_agent_idle_wakes_on_ping);
    RUN(test_agent_extends_lease_of_long_handler);
    RUN(test_agent_exit_codes);
    RUN(test_agent_c_api_in_process);
    RUN(test_inbox_tail_follows);
    return h_summary();
}
