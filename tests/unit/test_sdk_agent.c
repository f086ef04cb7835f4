/* SPDX-License-Identifier: MIT */
/* Unit tests of the libroost agent loop that need no roostd: option checks, the state dir's lock
 * and owner, status from another "process" (the state file), stop before and during run against
 * an unreachable server (connection state callbacks, run returns ROOST_OK). The behaviour against
 * a real roostd is in tests/integration/test_agent.c. */
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/check.h"
#include "roost/roost.h"

#include "common/banned.h"

static int handler(const struct roost_event *ev, void *ctx)
{
    (void)ev;
    (void)ctx;
    return ROOST_AGENT_ACK;
}

static int handler_ex(const struct roost_event *ev, struct roost_agent_outcome *out, void *ctx)
{
    (void)ev;
    (void)out;
    (void)ctx;
    return ROOST_AGENT_ACK;
}

static char tmpdir[256];

static void opts_for(struct roost_agent_options *o, const char *sub)
{
    static char dir[320];
    roost_agent_options_init(o);
    snprintf(dir, sizeof dir, "%s/%s", tmpdir, sub);
    o->server_url = "http://127.0.0.1:1"; /* nothing listens on port 1 */
    o->token = "tok";
    o->agent_id = "unit.agent";
    o->state_dir = dir;
    o->handler = handler;
}

static void test_agent_options_are_checked(void)
{
    struct roost_agent *a = (struct roost_agent *)1;
    struct roost_agent_options o;
    CHECK_EQ(roost_agent_new(NULL, NULL), ROOST_EINVAL);
    CHECK_EQ(roost_agent_new(&a, NULL), ROOST_EINVAL);
    CHECK(a == NULL);
    opts_for(&o, "opts");
    o.handler = NULL;
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_EINVAL);
    opts_for(&o, "opts");
    o.agent_id = "bad:id";
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_EAGENTID);
    opts_for(&o, "opts");
    o.consumer = "bad consumer";
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_ECONSUMER);
    opts_for(&o, "opts");
    o.concurrency = 257;
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_EINVAL);
    opts_for(&o, "opts");
    o.long_poll_s = 31;
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_EINVAL);
    opts_for(&o, "opts");
    o.processed_max = 3;
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_EINVAL);
    opts_for(&o, "opts");
    o.server_url = "ftp://x";
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_EINVAL);
    opts_for(&o, "opts");
    o.token = "two\nlines";
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_EINVAL);
    opts_for(&o, "opts");
    o.handler_ex = handler_ex; /* one handler, not both */
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_EINVAL);
    opts_for(&o, "opts");
    o.tempfail_max = 1001;
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_EINVAL);
    opts_for(&o, "opts");
    o.handler = NULL;
    o.handler_ex = handler_ex;
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_OK);
    roost_agent_free(a);
    opts_for(&o, "opts");
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_OK);
    roost_agent_free(a);
    roost_agent_free(NULL);
    roost_agent_stop(NULL);
    CHECK_EQ(roost_agent_run(NULL), ROOST_EINVAL);
}

static void test_agent_state_dir_is_locked_and_owned(void)
{
    struct roost_agent_options o;
    struct roost_agent *a = NULL, *b = NULL;
    opts_for(&o, "lock");
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_OK);
    /* A second agent on the same dir is refused while the first lives. */
    CHECK_EQ(roost_agent_new(&b, &o), ROOST_ESTATE);
    CHECK(b == NULL);
    struct roost_agent_status st;
    CHECK_EQ(roost_agent_status_read(o.state_dir, &st), ROOST_OK);
    CHECK(st.running);
    CHECK_STREQ(st.agent_id, "unit.agent");
    CHECK_EQ(st.conn, ROOST_AGENT_CONN_STARTING);
    roost_agent_free(a);
    CHECK_EQ(roost_agent_status_read(o.state_dir, &st), ROOST_OK);
    CHECK(!st.running);
    CHECK_EQ(st.conn, ROOST_AGENT_CONN_STOPPED);
    /* The dir belongs to its agent id. */
    o.agent_id = "other.agent";
    CHECK_EQ(roost_agent_new(&b, &o), ROOST_ESTATE);
    o.agent_id = "unit.agent";
    CHECK_EQ(roost_agent_new(&b, &o), ROOST_OK);
    roost_agent_free(b);
    CHECK_EQ(roost_agent_status_read("/nonexistent/roost", &st), ROOST_EIO);
    CHECK_EQ(roost_agent_status_read(NULL, &st), ROOST_EINVAL);
}

/* Records `pid` as the pid of the agent that last ran on dir (what a running agent writes). */
static void record_owner_pid(const char *dir, long pid)
{
    char path[400], sql[160];
    sqlite3 *db = NULL;
    snprintf(path, sizeof path, "%s/agent.db", dir);
    snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO meta(key, value) VALUES ('pid', '%ld')", pid);
    CHECK_EQ(sqlite3_open(path, &db), SQLITE_OK);
    CHECK_EQ(sqlite3_exec(db, sql, NULL, NULL, NULL), SQLITE_OK);
    sqlite3_close(db);
}

/* A child forked by the agent (a command's supervisor, say) holds the dir's lock a moment after
 * the agent is SIGKILLed: a restart waits for it while the recorded agent is gone, and is refused
 * at once while that agent lives. */
static void test_agent_state_dir_lock_outlives_a_killed_agent(void)
{
    struct roost_agent_options o;
    struct roost_agent *a = NULL, *b = NULL;
    opts_for(&o, "handover");
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_OK);
    pid_t gone = fork(); /* a pid that no longer runs */
    if (gone == 0) {
        _exit(0);
    }
    waitpid(gone, NULL, 0);
    pid_t holder = fork(); /* inherits the lock, keeps it for 300 ms */
    if (holder == 0) {
        nanosleep(&(struct timespec){.tv_nsec = 300 * 1000 * 1000}, NULL);
        _exit(0);
    }
    roost_agent_free(a);
    record_owner_pid(o.state_dir, (long)getpid()); /* its agent lives: refused at once */
    CHECK_EQ(roost_agent_new(&b, &o), ROOST_ESTATE);
    record_owner_pid(o.state_dir, (long)gone); /* its agent is gone: waits for the holder */
    CHECK_EQ(roost_agent_new(&b, &o), ROOST_OK);
    int status = -1;
    CHECK_EQ(waitpid(holder, &status, WNOHANG), holder); /* taken only once the holder ended */
    roost_agent_free(b);
}

static void test_agent_conn_names(void)
{
    CHECK_STREQ(roost_agent_conn_name(ROOST_AGENT_CONN_STARTING), "starting");
    CHECK_STREQ(roost_agent_conn_name(ROOST_AGENT_CONN_STREAMING), "streaming");
    CHECK_STREQ(roost_agent_conn_name(ROOST_AGENT_CONN_POLLING), "polling");
    CHECK_STREQ(roost_agent_conn_name(ROOST_AGENT_CONN_OFFLINE), "offline");
    CHECK_STREQ(roost_agent_conn_name(ROOST_AGENT_CONN_STOPPED), "stopped");
    CHECK_STREQ(roost_agent_conn_name((enum roost_agent_conn)42), "unknown");
}

static void test_agent_stop_before_run(void)
{
    struct roost_agent_options o;
    struct roost_agent *a = NULL;
    opts_for(&o, "early");
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_OK);
    roost_agent_stop(a);
    roost_agent_stop(a); /* idempotent */
    CHECK_EQ(roost_agent_run(a), ROOST_OK);
    CHECK_EQ(roost_agent_run(a), ROOST_EINVAL); /* once only */
    struct roost_agent_status st;
    CHECK_EQ(roost_agent_status(a, &st), ROOST_OK);
    CHECK_EQ(st.conn, ROOST_AGENT_CONN_STOPPED);
    roost_agent_free(a);
}

struct conn_log {
    int seen[8];
};

static void on_conn(enum roost_agent_conn c, void *ctx)
{
    struct conn_log *l = ctx;
    if ((int)c >= 0 && (int)c < 8) {
        l->seen[c]++;
    }
}

static void *stopper(void *arg)
{
    usleep(1500 * 1000);
    roost_agent_stop(arg);
    return NULL;
}

static void test_agent_offline_then_stop(void)
{
    struct roost_agent_options o;
    struct roost_agent *a = NULL;
    struct conn_log log = {{0}};
    opts_for(&o, "offline");
    o.on_conn = on_conn;
    o.cb_ctx = &log;
    o.concurrency = 3;
    CHECK_EQ(roost_agent_new(&a, &o), ROOST_OK);
    pthread_t t;
    pthread_create(&t, NULL, stopper, a);
    CHECK_EQ(roost_agent_run(a), ROOST_OK);
    pthread_join(t, NULL);
    CHECK(log.seen[ROOST_AGENT_CONN_OFFLINE] >= 1);
    CHECK_EQ(log.seen[ROOST_AGENT_CONN_STOPPED], 1);
    CHECK_EQ(log.seen[ROOST_AGENT_CONN_STREAMING], 0);
    roost_agent_free(a);
    struct roost_agent_status st;
    CHECK_EQ(roost_agent_status_read(o.state_dir, &st), ROOST_OK);
    CHECK_EQ(st.conn, ROOST_AGENT_CONN_STOPPED);
    CHECK_EQ(st.last_sync_ms, 0);
    CHECK_EQ(st.outstanding_leases, 0);
}

int main(void)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(tmpdir, sizeof tmpdir, "%s/roost-unit-agent-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(tmpdir) == NULL) {
        return 2;
    }
    RUN(test_agent_options_are_checked);
    RUN(test_agent_state_dir_is_locked_and_owned);
    RUN(test_agent_state_dir_lock_outlives_a_killed_agent);
    RUN(test_agent_conn_names);
    RUN(test_agent_stop_before_run);
    RUN(test_agent_offline_then_stop);
    char cmd[320];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) {
        fprintf(stderr, "cannot remove %s\n", tmpdir);
    }
    return check_summary();
}
