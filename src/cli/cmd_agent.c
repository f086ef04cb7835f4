/* SPDX-License-Identifier: MIT */
/* `roost agent run` (the libroost agent loop with a shell command as the handler) and
 * `roost agent status` (what a running or dead agent left in its state dir). */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

#include "common/banned.h"

extern char **environ;

static struct roost_agent *g_agent;

static void on_signal(int sig)
{
    (void)sig;
    roost_agent_stop(g_agent); /* async-signal-safe */
}

struct exec_ctx {
    const char *cmd;
    const char *agent_id;
    bool quiet;
};

static void log_line_cb(const char *line, void *ctx)
{
    const struct exec_ctx *x = ctx;
    /* Connection changes are routine; everything else the agent reports is worth seeing. */
    if (x->quiet && strncmp(line, "connection ", 11) == 0) {
        return;
    }
    char ts[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm);
    fprintf(stderr, "%s roost agent: %s\n", ts, line);
}

static void state_cb(const char *state_json, int64_t cursor, void *ctx)
{
    (void)ctx;
    fprintf(stderr,
            "roost agent: state resync after 410: continuing at cursor %lld, state %.200s\n",
            (long long)cursor, state_json);
}

/* "NAME=value" on the heap (NULL on ENOMEM). */
static char *env_entry(const char *name, const char *value)
{
    size_t n = strlen(name) + strlen(value) + 2;
    char *s = malloc(n);
    if (s != NULL) {
        snprintf(s, n, "%s=%s", name, value);
    }
    return s;
}

static bool is_ours(const char *entry)
{
    static const char *const names[] = {"ROOST_EVENT_ID=", "ROOST_AGENT_ID=", "ROOST_SEQUENCE=",
                                        "ROOST_ATTEMPT=", "ROOST_CORRELATION_ID="};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strncmp(entry, names[i], strlen(names[i])) == 0) {
            return true;
        }
    }
    return false;
}

/* Runs CMD for one event and maps its exit status. */
static int exec_handler(const struct roost_event *ev, void *ctx)
{
    const struct exec_ctx *x = ctx;
    char seq[32], att[32];
    snprintf(seq, sizeof seq, "%lld", (long long)ev->sequence_number);
    snprintf(att, sizeof att, "%d", ev->attempts);
    size_t n_env = 0;
    while (environ[n_env] != NULL) {
        n_env++;
    }
    /* The environment is built before fork: the child of a threaded process may only call
     * async-signal-safe functions (dup2, execve, _exit). */
    char **envp = calloc(n_env + 6, sizeof *envp);
    char *ours[5] = {
        env_entry("ROOST_EVENT_ID", ev->event_id),
        env_entry("ROOST_AGENT_ID", x->agent_id),
        env_entry("ROOST_SEQUENCE", seq),
        env_entry("ROOST_ATTEMPT", att),
        env_entry("ROOST_CORRELATION_ID", ev->correlation_id != NULL ? ev->correlation_id : ""),
    };
    int result = ROOST_AGENT_RELEASE;
    int pfd[2] = {-1, -1};
    bool ok = envp != NULL;
    for (int i = 0; i < 5; i++) {
        ok = ok && ours[i] != NULL;
    }
    if (!ok || pipe(pfd) != 0) {
        fprintf(stderr, "roost agent: cannot prepare the command for %s\n", ev->event_id);
        goto out;
    }
    fcntl(pfd[1], F_SETFD, FD_CLOEXEC);
    fcntl(pfd[0], F_SETFD, FD_CLOEXEC);
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++) {
        if (!is_ours(environ[i])) {
            envp[k++] = environ[i];
        }
    }
    for (int i = 0; i < 5; i++) {
        envp[k++] = ours[i];
    }
    envp[k] = NULL;
    char *const argv[] = {"sh", "-c", (char *)x->cmd, NULL};
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "roost agent: fork: %s\n", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        if (dup2(pfd[0], STDIN_FILENO) < 0) {
            _exit(127);
        }
        execve("/bin/sh", argv, envp);
        _exit(127);
    }
    close(pfd[0]);
    pfd[0] = -1;
    const char *payload = ev->payload != NULL ? ev->payload : "{}";
    size_t len = strlen(payload), off = 0;
    /* A command that does not read stdin closes the pipe: EPIPE is fine (SIGPIPE is ignored). */
    while (off < len) {
        ssize_t w = write(pfd[1], payload + off, len - off);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            break;
        }
        off += (size_t)w;
    }
    close(pfd[1]);
    pfd[1] = -1;
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (WIFEXITED(st)) {
        switch (WEXITSTATUS(st)) {
        case 0:
            result = ROOST_AGENT_ACK;
            break;
        case 75:
            result = ROOST_AGENT_RELEASE_NOW;
            break;
        case 65:
            result = ROOST_AGENT_QUARANTINE;
            break;
        default:
            fprintf(stderr, "roost agent: command failed for %s (exit %d): releasing\n",
                    ev->event_id, WEXITSTATUS(st));
            result = ROOST_AGENT_RELEASE;
        }
    } else {
        fprintf(stderr, "roost agent: command for %s killed by signal %d: releasing\n",
                ev->event_id, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    }
out:
    for (int i = 0; i < 2; i++) {
        if (pfd[i] >= 0) {
            close(pfd[i]);
        }
    }
    for (int i = 0; i < 5; i++) {
        free(ours[i]);
    }
    free(envp);
    return result;
}

int cmd_agent_run(struct cli_args *a)
{
    struct roost_agent_options o;
    roost_agent_options_init(&o);
    o.agent_id = cli_str(a, "agent");
    o.state_dir = cli_str(a, "state-dir");
    o.concurrency = (int)cli_num(a, "concurrency", o.concurrency);
    o.lease_s = (int)cli_num(a, "lease", o.lease_s);
    o.poll_ceiling_s = (int)cli_num(a, "poll-ceiling", o.poll_ceiling_s);
    o.consumer = cli_str(a, "consumer");
    struct exec_ctx x = {.cmd = cli_str(a, "exec"), .quiet = cli_flag(a, "quiet")};
    int r;
    char *file_token = NULL;
    if ((r = cli_resolve_endpoint(a, &o.server_url, &o.token, &file_token)) != CLI_EXIT_OK) {
        return r;
    }
    x.agent_id = o.agent_id;
    o.ca_file = cli_str(a, "cacert");
    if ((r = cli_resolve_signing(a, &o.signing_key_file, &o.key_id, &o.key_alg)) != CLI_EXIT_OK) {
        free(file_token);
        return r;
    }
    o.handler = exec_handler;
    o.handler_ctx = &x;
    o.on_state = state_cb;
    o.on_log = log_line_cb;
    o.cb_ctx = &x;
    struct roost_agent *agent = NULL;
    int rc = roost_agent_new(&agent, &o);
    free(file_token);
    if (rc != ROOST_OK) {
        fprintf(stderr, "roost: agent run: %s (%s)%s\n", roost_strerror(rc), roost_err_code(rc),
                rc == ROOST_ESTATE ? ": the state dir is in use by another agent process, or "
                                     "belongs to another agent id"
                                   : "");
        return rc == ROOST_ESTATE ? CLI_EXIT_CONFLICT
               : (rc == ROOST_EINVAL || rc == ROOST_EAGENTID || rc == ROOST_ECONSUMER ||
                  rc == ROOST_EKEYID || rc == ROOST_EKEYALG || rc == ROOST_EKEYMATERIAL)
                   ? CLI_EXIT_USAGE
                   : CLI_EXIT_ERROR;
    }
    g_agent = agent;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (!x.quiet) {
        struct roost_agent_status st;
        roost_agent_status(agent, &st);
        fprintf(stderr, "roost agent: agent %s, consumer %s, state %s/agent.db\n", o.agent_id,
                st.consumer, o.state_dir);
    }
    rc = roost_agent_run(agent);
    struct roost_agent_status st;
    roost_agent_status(agent, &st);
    if (!x.quiet) {
        fprintf(stderr, "roost agent: stopped: %lld handled, %lld acked, %lld released\n",
                (long long)st.handled, (long long)st.acked, (long long)st.released);
    }
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    g_agent = NULL;
    roost_agent_free(agent);
    if (rc != ROOST_OK) {
        fprintf(stderr, "roost: agent run: %s (%s)\n", roost_strerror(rc), roost_err_code(rc));
        return cli_exit_code(rc, true);
    }
    return CLI_EXIT_OK;
}

int cmd_agent_status(struct cli_args *a)
{
    const char *dir = cli_str(a, "state-dir");
    struct roost_agent_status st;
    int rc = roost_agent_status_read(dir, &st);
    if (rc != ROOST_OK) {
        fprintf(stderr, "roost: agent status: no agent state in %s (%s)\n", dir,
                roost_err_code(rc));
        return CLI_EXIT_ERROR;
    }
    char last[40] = "";
    if (st.last_sync_ms > 0) {
        time_t secs = (time_t)(st.last_sync_ms / 1000);
        struct tm tm;
        gmtime_r(&secs, &tm);
        char base[24];
        strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
        snprintf(last, sizeof last, "%s.%03dZ", base, (int)(st.last_sync_ms % 1000));
    }
    json_t *j = json_pack(
        "{s:s, s:b, s:I, s:s, s:s, s:I, s:o, s:I, s:I}", "agent_id", st.agent_id, "running",
        st.running, "pid", (json_int_t)st.pid, "consumer", st.consumer, "connection",
        roost_agent_conn_name(st.conn), "cursor", (json_int_t)st.cursor, "last_sync",
        last[0] != '\0' ? json_string(last) : json_null(), "outstanding_leases",
        (json_int_t)st.outstanding_leases, "processed_ids", (json_int_t)st.processed_ids);
    char *text = j != NULL ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (text == NULL) {
        fprintf(stderr, "roost: agent status: out of memory\n");
        return CLI_EXIT_ERROR;
    }
    int r = cli_print_json(a, text, strlen(text));
    free(text);
    return r;
}
