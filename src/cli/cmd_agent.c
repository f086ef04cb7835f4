/* SPDX-License-Identifier: MIT */
/* `roost agent run` (the libroost agent loop with a shell command as the handler) and
 * `roost agent status` (what a running or dead agent left in its state dir). */
#define _GNU_SOURCE /* pipe2: O_CLOEXEC at creation, as other workers fork at the same time */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
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

/* Bytes of a command's stderr kept for the event's last_error (its end, where the reason
 * usually is). */
#define EXEC_STDERR_TAIL 1024

struct exec_ctx {
    const char *cmd;
    const char *agent_id;
    char run_dir[4096]; /* STATE_DIR/exec: a file per running command, and the result files */
    bool quiet;
};

static void log_line_cb(const char *line, void *ctx)
{
    const struct exec_ctx *x = ctx;
    /* Connection changes and finished events are routine; everything else the agent reports is
     * worth seeing. */
    if (x->quiet && (strncmp(line, "connection ", 11) == 0 ||
                     (strncmp(line, "event ", 6) == 0 && strstr(line, ": ack after ") != NULL))) {
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

#define EXEC_N_ENV 6

static bool is_ours(const char *entry)
{
    static const char *const names[EXEC_N_ENV] = {
        "ROOST_EVENT_ID=", "ROOST_AGENT_ID=",       "ROOST_SEQUENCE=",
        "ROOST_ATTEMPT=",  "ROOST_CORRELATION_ID=", "ROOST_RESULT_FILE="};
    for (size_t i = 0; i < EXEC_N_ENV; i++) {
        if (strncmp(entry, names[i], strlen(names[i])) == 0) {
            return true;
        }
    }
    return false;
}

/* ---- the command's processes ------------------------------------------------------------ */

/* The start time of process pid (field 22 of /proc/PID/stat, clock ticks since boot): with the
 * pid it names one process, whatever pids were reused since. -1 when there is no such process. */
static long long proc_start_time(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) {
        return -1;
    }
    buf[n] = '\0';
    char *p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
    if (p == NULL) {
        return -1;
    }
    p++; /* at the space before field 3 */
    for (int field = 3; field < 22 && p != NULL; field++) {
        p = strchr(p + 1, ' ');
    }
    char *end = NULL;
    long long t = p != NULL ? strtoll(p + 1, &end, 10) : -1;
    return end != NULL && end != p + 1 ? t : -1;
}

/* The signal the supervisor gets when the agent dies (PR_SET_PDEATHSIG): a real-time one, which
 * nobody sends by accident. It comes when the agent's thread that forked the supervisor ends,
 * which happens only as the agent dies (workers end after their commands), and again each time
 * the supervisor is handed to another of the dying agent's threads. */
#define SUPERVISOR_DEATH_SIG (SIGRTMIN + 2)

/* The supervisor's copy (it is a process of its own) of the command's pid. */
static volatile sig_atomic_t g_sup_child;

/* In the supervisor: the agent died. The whole process group goes, the supervisor with it. */
static void supervisor_on_agent_death(int sig)
{
    (void)sig;
    kill(0, SIGKILL);
    _exit(128 + SIGKILL);
}

/* In the supervisor: anybody's SIGTERM (systemd stopping the service, say) is passed on to the
 * command, which may end as it sees fit while the agent waits for it. */
static void supervisor_on_term(int sig)
{
    if (g_sup_child > 0) {
        kill((pid_t)g_sup_child, sig);
    }
}

/* Closes every descriptor from 3 up but `keep1` and `keep2` (async-signal-safe). Workers fork
 * supervisors concurrently, and one that forks while another worker holds a command's pipes
 * inherits them; O_CLOEXEC ends them only at exec, which a supervisor never does. Holding
 * another command's stdin open, it would keep that command from ever reading end of input, and
 * two supervisors holding each other's stdin deadlock both commands (found by tests/chaos). */
static void close_inherited(int keep1, int keep2)
{
    unsigned lo = (unsigned)(keep1 < keep2 ? keep1 : keep2);
    unsigned hi = (unsigned)(keep1 < keep2 ? keep2 : keep1);
    unsigned from = 3;
    if (lo >= from) {
        if (lo > from) {
            close_range(from, lo - 1, 0);
        }
        from = lo + 1;
    }
    if (hi >= from) {
        if (hi > from) {
            close_range(from, hi - 1, 0);
        }
        from = hi + 1;
    }
    close_range(from, ~0u, 0);
}

/* The process between the agent and the command (forked from a threaded process: only
 * async-signal-safe calls here). It leads a process group of its own, so terminal signals meant
 * for the agent do not reach the command and the command's descendants can be ended together; it
 * dies with the agent (PR_SET_PDEATHSIG), taking the group with it; and it passes the command's
 * exit status on as its own. */
/* A command's pipes, each with the end the agent keeps. `go` is the agent's word that the
 * command's pid file is written: the command never starts before a restart could find it. */
struct supervisor_fds {
    int in, err, go;                      /* the supervisor's ends */
    int parent_in, parent_err, parent_go; /* the agent's, closed in the supervisor */
};

static _Noreturn void supervisor_main(pid_t agent_pid, const struct supervisor_fds *fds,
                                      char *const argv[], char *const envp[])
{
    int in_fd = fds->in, err_fd = fds->err;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sigemptyset(&sa.sa_mask);
    sa.sa_handler = supervisor_on_term;
    sigaction(SIGTERM, &sa, NULL);
    sa.sa_handler = supervisor_on_agent_death;
    sigaction(SUPERVISOR_DEATH_SIG, &sa, NULL);
    sa.sa_handler = SIG_DFL;
    sigaction(SIGINT, &sa, NULL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setpgid(0, 0);
    if (prctl(PR_SET_PDEATHSIG, SUPERVISOR_DEATH_SIG) != 0 || getppid() != agent_pid) {
        _exit(127); /* the agent is already gone */
    }
    close(fds->parent_in);
    close(fds->parent_err);
    close(fds->parent_go);
    char go;
    ssize_t r;
    while ((r = read(fds->go, &go, 1)) < 0 && errno == EINTR) {
    }
    if (r != 1) {
        _exit(127); /* the agent never said go: it is gone */
    }
    close(fds->go);
    close_inherited(in_fd, err_fd);
    pid_t pid = fork();
    if (pid < 0) {
        _exit(127);
    }
    if (pid == 0) {
        sigaction(SIGTERM, &sa, NULL);
        sigaction(SUPERVISOR_DEATH_SIG, &sa, NULL);
        sigaction(SIGPIPE, &sa, NULL); /* the agent ignores SIGPIPE; a shell pipeline must not */
        if (dup2(in_fd, STDIN_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0) {
            _exit(127);
        }
        execve("/bin/sh", argv, envp);
        _exit(127);
    }
    g_sup_child = pid;
    close(in_fd);
    close(err_fd);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0) {
        if (errno != EINTR) {
            _exit(127);
        }
    }
    if (WIFSIGNALED(st)) {
        sigaction(WTERMSIG(st), &sa, NULL);
        kill(getpid(), WTERMSIG(st));
        _exit(128 + WTERMSIG(st));
    }
    _exit(WEXITSTATUS(st));
}

/* The file naming a running command (its supervisor's pid and start time), so that a restart
 * after a SIGKILL can end what PR_SET_PDEATHSIG did not (a supervisor killed first). */
static void pid_file_path(const struct exec_ctx *x, pid_t pid, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%ld.pid", x->run_dir, (long)pid);
}

static void pid_file_write(const struct exec_ctx *x, pid_t pid)
{
    char path[4200];
    pid_file_path(x, pid, path, sizeof path);
    long long t = proc_start_time(pid);
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        fprintf(f, "%lld\n", t);
        fclose(f);
    }
}

/* Ends the process groups a killed agent's commands left (named by their pid files in run_dir):
 * a group whose leader is gone, or is still the process recorded (same start time), is
 * SIGKILLed; a pid now used by another process is left alone. */
static void exec_end_orphans(const struct exec_ctx *x)
{
    DIR *d = opendir(x->run_dir);
    if (d == NULL) {
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", x->run_dir, e->d_name);
        size_t nl = strlen(e->d_name);
        if (nl > 7 && strcmp(e->d_name + nl - 7, ".result") == 0) {
            unlink(path);
            continue;
        }
        char *end = NULL;
        long pid = strtol(e->d_name, &end, 10);
        if (end == e->d_name || strcmp(end, ".pid") != 0 || pid <= 1) {
            continue;
        }
        char *text = NULL;
        size_t len = 0;
        long long recorded = -2;
        if (cli_read_file(path, 64, &text, &len, NULL, 0) == 0) {
            recorded = strtoll(text, NULL, 10);
        }
        free(text);
        long long now = proc_start_time((pid_t)pid);
        /* The group id stays taken while any member lives, so a gone leader still names it. */
        if (now == -1 || now == recorded) {
            /* SIGKILL cannot be caught: once sent, no member runs another instruction of its
             * own, so nothing the restart claims can run beside it. */
            if (kill((pid_t)-pid, SIGKILL) == 0) {
                fprintf(stderr,
                        "roost agent: ended the command (process group %ld) a killed run left "
                        "behind\n",
                        pid);
            }
        }
        unlink(path);
    }
    closedir(d);
}

/* Reads the result file: `retry_after=SECONDS` lines (the last one counts). */
static int64_t result_file_read(const char *path)
{
    char *text = NULL;
    size_t len = 0;
    int64_t retry_after = 0;
    if (cli_read_file(path, 4096, &text, &len, NULL, 0) == 0) {
        for (char *p = text; p != NULL && *p != '\0';) {
            if (strncmp(p, "retry_after=", 12) == 0) {
                char *end = NULL;
                long long v = strtoll(p + 12, &end, 10);
                if (end != p + 12 && v > 0 && v <= 31536000) {
                    retry_after = v;
                }
            }
            p = strchr(p, '\n');
            p = p != NULL ? p + 1 : NULL;
        }
    }
    free(text);
    return retry_after;
}

/* Copies a chunk of the command's stderr to ours and keeps the last EXEC_STDERR_TAIL bytes. */
static void stderr_keep(const char *buf, size_t n, char *tail, size_t *tail_len)
{
    ssize_t wr = write(STDERR_FILENO, buf, n);
    (void)wr;
    if (n >= EXEC_STDERR_TAIL) {
        memcpy(tail, buf + n - EXEC_STDERR_TAIL, EXEC_STDERR_TAIL);
        *tail_len = EXEC_STDERR_TAIL;
        return;
    }
    size_t keep = *tail_len + n > EXEC_STDERR_TAIL ? EXEC_STDERR_TAIL - n : *tail_len;
    memmove(tail, tail + *tail_len - keep, keep);
    memcpy(tail + keep, buf, n);
    *tail_len = keep + n;
}

/* Feeds the payload to the command and relays its stderr until it exits; returns its wait
 * status. Both pipes are non-blocking, so neither side can stall the other; once both are done
 * the wait blocks. A background process the command left may hold stderr open for ever, so
 * the exit is checked as well, and after it only what is buffered is read. */
static int exec_pump(pid_t pid, int in_fd, int err_fd, const char *payload, char *tail,
                     size_t *tail_len)
{
    size_t len = strlen(payload), off = 0;
    int st = 0;
    bool reaped = false;
    char buf[4096];
    while (!reaped) {
        if (in_fd < 0 && err_fd < 0) {
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {
            }
            break;
        }
        struct pollfd pf[2] = {{in_fd, POLLOUT, 0}, {err_fd, POLLIN, 0}};
        poll(pf, 2, 100);
        if (in_fd >= 0 && pf[0].revents != 0) {
            ssize_t w = write(in_fd, payload + off, len - off);
            /* A command that does not read stdin closes the pipe: EPIPE is fine. */
            if (w > 0) {
                off += (size_t)w;
            }
            if ((w < 0 && errno != EAGAIN && errno != EINTR) || off == len) {
                close(in_fd);
                in_fd = -1;
            }
        }
        if (err_fd >= 0 && pf[1].revents != 0) {
            ssize_t r = read(err_fd, buf, sizeof buf);
            if (r > 0) {
                stderr_keep(buf, (size_t)r, tail, tail_len);
            } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
                close(err_fd);
                err_fd = -1;
            }
        }
        pid_t w = waitpid(pid, &st, WNOHANG);
        reaped = w == pid || (w < 0 && errno != EINTR);
    }
    while (err_fd >= 0) {
        ssize_t r = read(err_fd, buf, sizeof buf);
        if (r > 0) {
            stderr_keep(buf, (size_t)r, tail, tail_len);
        } else if (r == 0 || errno != EINTR) {
            close(err_fd);
            err_fd = -1;
        }
    }
    if (in_fd >= 0) {
        close(in_fd);
    }
    return st;
}

/* Runs CMD for one event and maps its exit status; the reason of a failure (exit status, end
 * of stderr) goes to out->error, a `retry_after=` from the result file to out->retry_after_s. */
static int exec_handler(const struct roost_event *ev, struct roost_agent_outcome *out, void *ctx)
{
    const struct exec_ctx *x = ctx;
    char seq[32], att[32], result_path[4200];
    snprintf(seq, sizeof seq, "%lld", (long long)ev->sequence_number);
    snprintf(att, sizeof att, "%d", ev->attempts);
    snprintf(result_path, sizeof result_path, "%s/%s.result", x->run_dir, ev->event_id);
    size_t n_env = 0;
    while (environ[n_env] != NULL) {
        n_env++;
    }
    /* Everything is prepared before fork: the child of a threaded process may only call
     * async-signal-safe functions. */
    char **envp = calloc(n_env + EXEC_N_ENV + 1, sizeof *envp);
    char *ours[EXEC_N_ENV] = {
        env_entry("ROOST_EVENT_ID", ev->event_id),
        env_entry("ROOST_AGENT_ID", x->agent_id),
        env_entry("ROOST_SEQUENCE", seq),
        env_entry("ROOST_ATTEMPT", att),
        env_entry("ROOST_CORRELATION_ID", ev->correlation_id != NULL ? ev->correlation_id : ""),
        env_entry("ROOST_RESULT_FILE", result_path),
    };
    int result = ROOST_AGENT_RELEASE;
    int in[2] = {-1, -1}, err[2] = {-1, -1}, go[2] = {-1, -1};
    bool ok = envp != NULL;
    for (int i = 0; i < EXEC_N_ENV; i++) {
        ok = ok && ours[i] != NULL;
    }
    int rfd = ok ? open(result_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600) : -1;
    if (rfd >= 0) {
        close(rfd);
    }
    if (rfd < 0 || pipe2(in, O_CLOEXEC) != 0 || pipe2(err, O_CLOEXEC) != 0 ||
        pipe2(go, O_CLOEXEC) != 0) {
        snprintf(out->error, sizeof out->error, "cannot prepare the command: %s", strerror(errno));
        goto out;
    }
    fcntl(in[1], F_SETFL, O_NONBLOCK);
    fcntl(err[0], F_SETFL, O_NONBLOCK);
    size_t k = 0;
    for (size_t i = 0; i < n_env; i++) {
        if (!is_ours(environ[i])) {
            envp[k++] = environ[i];
        }
    }
    for (int i = 0; i < EXEC_N_ENV; i++) {
        envp[k++] = ours[i];
    }
    envp[k] = NULL;
    char *const argv[] = {"sh", "-c", (char *)x->cmd, NULL};
    pid_t agent_pid = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(out->error, sizeof out->error, "fork: %s", strerror(errno));
        goto out;
    }
    if (pid == 0) {
        const struct supervisor_fds fds = {.in = in[0],
                                           .err = err[1],
                                           .go = go[0],
                                           .parent_in = in[1],
                                           .parent_err = err[0],
                                           .parent_go = go[1]};
        supervisor_main(agent_pid, &fds, argv, envp);
    }
    /* Also here, so that the agent never races the supervisor's own setpgid. */
    setpgid(pid, pid);
    pid_file_write(x, pid);
    /* Only now may the command start: an agent killed before this line leaves no command. */
    (void)write(go[1], "g", 1);
    close(go[0]);
    close(go[1]);
    go[0] = go[1] = -1;
    close(in[0]);
    close(err[1]);
    in[0] = err[1] = -1;
    char tail[EXEC_STDERR_TAIL];
    size_t tail_len = 0;
    int st =
        exec_pump(pid, in[1], err[0], ev->payload != NULL ? ev->payload : "{}", tail, &tail_len);
    in[1] = err[0] = -1; /* closed by exec_pump */
    char path[4200];
    pid_file_path(x, pid, path, sizeof path);
    unlink(path);
    out->retry_after_s = result_file_read(result_path);
    char status[64];
    if (WIFEXITED(st)) {
        switch (WEXITSTATUS(st)) {
        case 0:
            result = ROOST_AGENT_ACK;
            break;
        case 75:
            result = ROOST_AGENT_RETRY_LATER;
            break;
        case 65:
            result = ROOST_AGENT_QUARANTINE;
            break;
        default:
            result = ROOST_AGENT_RELEASE;
        }
        snprintf(status, sizeof status, "exit %d", WEXITSTATUS(st));
    } else {
        snprintf(status, sizeof status, "killed by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    }
    if (result != ROOST_AGENT_ACK) {
        snprintf(out->error, sizeof out->error, "%s%s%.*s", status,
                 tail_len > 0 ? "; stderr: " : "", (int)tail_len, tail);
    }
out:
    for (int i = 0; i < 2; i++) {
        if (in[i] >= 0) {
            close(in[i]);
        }
        if (err[i] >= 0) {
            close(err[i]);
        }
        if (go[i] >= 0) {
            close(go[i]);
        }
    }
    unlink(result_path);
    for (int i = 0; i < EXEC_N_ENV; i++) {
        free(ours[i]);
    }
    free(envp);
    return result;
}

static int run_agent(struct cli_args *a, const struct roost_agent_options *po, struct exec_ctx *x);

/* A token refresh failed: the agent goes on with the token it has. */
static void token_error_cb(void *ctx, const char *msg)
{
    const struct exec_ctx *x = ctx;
    if (!x->quiet) {
        fprintf(stderr, "roost agent: token refresh: %s\n", msg);
    }
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
    o.stream_resync_s = (int)cli_num(a, "resync", o.stream_resync_s);
    o.consumer = cli_str(a, "consumer");
    o.tempfail_max = (int)cli_num(a, "tempfail-max", o.tempfail_max);
    struct exec_ctx x = {.cmd = cli_str(a, "exec"), .quiet = cli_flag(a, "quiet")};
    int r;
    char *file_token = NULL;
    if ((r = cli_resolve_endpoint(a, &o.server_url, &o.token, &file_token)) != CLI_EXIT_OK) {
        return r;
    }
    x.agent_id = o.agent_id;
    /* A token from a file or a command follows its source for the agent's whole life. */
    struct cli_token_source ts;
    bool follow;
    if ((r = cli_token_source_follow(a, "agent run", &ts, &follow)) != CLI_EXIT_OK) {
        free(file_token);
        return r;
    }
    if (follow) {
        ts.on_error = token_error_cb;
        ts.on_error_ctx = &x;
        o.token_cb = cli_token_source_cb;
        o.token_cb_arg = &ts;
    }
    if (!follow && cli_device != NULL) {
        o.token_cb = roost_device_token; /* a logged-in device: refreshed for the agent's life */
        o.token_cb_arg = cli_device;
        o.signing_key_cb = roost_device_signing_key; /* and its key, rotated with each refresh */
        o.signing_key_cb_arg = cli_device;
    }
    r = run_agent(a, &o, &x);
    if (cli_device != NULL && roost_device_error(cli_device)[0] != '\0') {
        fprintf(stderr, "roost: agent run: the device login of agent %s was refused: %s\n",
                roost_device_agent(cli_device), roost_device_error(cli_device));
    }
    if (follow) {
        cli_token_source_cleanup(&ts);
    }
    free(file_token);
    return r;
}

/* Says why roost_agent_new refused the state dir (ROOST_ESTATE): another agent process holds its
 * lock (named by the pid it recorded), or the dir belongs to another agent id. */
static void explain_state_dir_refused(const char *dir, const char *agent_id)
{
    struct roost_agent_status st;
    bool known = roost_agent_status_read(dir, &st) == ROOST_OK;
    if (known && st.agent_id[0] != '\0' && strcmp(st.agent_id, agent_id) != 0) {
        fprintf(stderr,
                "roost: agent run: the state dir %s belongs to agent %s, not %s: give each agent "
                "its own --state-dir (invalid_state)\n",
                dir, st.agent_id, agent_id);
    } else if (known && st.pid > 0) {
        fprintf(stderr,
                "roost: agent run: the state dir %s is in use by another agent process (pid "
                "%lld): stop it, or give this one its own --state-dir (invalid_state)\n",
                dir, (long long)st.pid);
    } else {
        fprintf(stderr,
                "roost: agent run: the state dir %s is in use by another agent process: stop it, "
                "or give this one its own --state-dir (invalid_state)\n",
                dir);
    }
}

/* The rest of `agent run` once the token is settled: signing, the agent's life, its report. */
static int run_agent(struct cli_args *a, const struct roost_agent_options *po, struct exec_ctx *x)
{
    struct roost_agent_options o = *po;
    int r;
    o.ca_file = cli_str(a, "cacert");
    if ((r = cli_resolve_signing(a, &o.signing_key_file, &o.key_id, &o.key_alg)) != CLI_EXIT_OK) {
        return r;
    }
    if (o.signing_key_file != NULL) {
        o.signing_key_cb = NULL; /* a key given by the user signs, not the device's */
    }
    o.handler_ex = exec_handler;
    o.handler_ctx = x;
    o.on_state = state_cb;
    o.on_log = log_line_cb;
    o.cb_ctx = x;
    struct roost_agent *agent = NULL;
    int rc = roost_agent_new(&agent, &o);
    if (rc == ROOST_ESTATE) {
        explain_state_dir_refused(o.state_dir, o.agent_id);
    } else if (rc != ROOST_OK) {
        fprintf(stderr, "roost: agent run: %s (%s)\n", roost_strerror(rc), roost_err_code(rc));
    }
    if (rc != ROOST_OK) {
        return rc == ROOST_ESTATE ? CLI_EXIT_CONFLICT
               : (rc == ROOST_EINVAL || rc == ROOST_EAGENTID || rc == ROOST_ECONSUMER ||
                  rc == ROOST_EKEYID || rc == ROOST_EKEYALG || rc == ROOST_EKEYMATERIAL)
                   ? CLI_EXIT_USAGE
                   : CLI_EXIT_ERROR;
    }
    /* The state dir is ours now (roost_agent_new locked it): end what a killed run left running
     * before anything is claimed, so that two copies of one event never run at once. */
    snprintf(x->run_dir, sizeof x->run_dir, "%s/exec", o.state_dir);
    if (mkdir(x->run_dir, 0700) != 0 && errno != EEXIST) {
        fprintf(stderr, "roost: agent run: cannot create %s: %s\n", x->run_dir, strerror(errno));
        roost_agent_free(agent);
        return CLI_EXIT_ERROR;
    }
    exec_end_orphans(x);
    g_agent = agent;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (!x->quiet) {
        struct roost_agent_status st;
        roost_agent_status(agent, &st);
        fprintf(stderr, "roost agent: agent %s, consumer %s, state %s/agent.db\n", o.agent_id,
                st.consumer, o.state_dir);
    }
    rc = roost_agent_run(agent);
    struct roost_agent_status st;
    roost_agent_status(agent, &st);
    if (!x->quiet) {
        fprintf(stderr,
                "roost agent: stopped: %lld handled, %lld acked, %lld released, %lld "
                "quarantined\n",
                (long long)st.handled, (long long)st.acked, (long long)st.released,
                (long long)st.quarantined);
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
