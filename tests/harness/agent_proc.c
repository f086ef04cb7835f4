/* SPDX-License-Identifier: MIT */
/* `roost agent run --exec` as a child process of an integration test (so that a test can
 * SIGKILL it), what its handler left (out.txt: one ROOST_EVENT_ID line per run), its log, and
 * the roostd-side views the agent tests check (event status by id, counts by status). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/agent_proc.h"

#include "common/banned.h"

void agent_proc_dirs(struct agent_proc *ap)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(ap->dir, sizeof ap->dir, "%s/roost-agent-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (mkdtemp(ap->dir) == NULL) {
        fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
        abort();
    }
    snprintf(ap->state, sizeof ap->state, "%s/state", ap->dir);
    snprintf(ap->out, sizeof ap->out, "%s/out.txt", ap->dir);
    snprintf(ap->log, sizeof ap->log, "%s/agent.log", ap->dir);
}

bool agent_fixture_start(struct agent_fixture *f, const char *const *sets)
{
    if (!roostd_start_checked(&f->d, NULL, sets)) {
        return false;
    }
    f->tok = h_token(&f->d, "t1", AGENT_SCOPE);
    agent_proc_dirs(&f->ap);
    return true;
}

void agent_fixture_stop(struct agent_fixture *f)
{
    agent_proc_cleanup(&f->ap);
    free(f->tok);
    f->tok = NULL;
    roostd_finish(&f->d);
}

void agent_proc_start_args(struct agent_proc *ap, const char *url, const char *token,
                           const char *agent, int concurrency, const char *pre, const char *lease,
                           const char *const *extra)
{
    char *cmd = h_fmt("%s echo \"$ROOST_EVENT_ID\" >> '%s'", pre, ap->out);
    char conc[16];
    snprintf(conc, sizeof conc, "%d", concurrency);
    const char *argv[40] = {"roost",   "agent",         "run",         "--server", url,
                            "--agent", agent,           "--state-dir", ap->state,  "--exec",
                            cmd,       "--concurrency", conc,          "--lease",  lease};
    size_t n = 15;
    for (size_t i = 0; extra != NULL && extra[i] != NULL && n < 39; i++) {
        argv[n++] = extra[i];
    }
    argv[n] = NULL;
    setenv("ROOST_TOKEN", token, 1);
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(ap->log, O_WRONLY | O_CREAT | O_APPEND, 0600);
        if (fd >= 0) {
            dup2(fd, 2);
            dup2(fd, 1);
        }
        execv(ROOST_CLI_BIN, (char *const *)argv);
        _exit(127);
    }
    ap->pid = pid;
    free(cmd);
}

void agent_proc_start_lease(struct agent_proc *ap, const char *url, const char *token,
                            const char *agent, int concurrency, const char *pre, const char *lease)
{
    agent_proc_start_args(ap, url, token, agent, concurrency, pre, lease, NULL);
}

void agent_proc_start(struct agent_proc *ap, const char *url, const char *token, const char *agent,
                      int concurrency, const char *pre)
{
    agent_proc_start_lease(ap, url, token, agent, concurrency, pre, "30s");
}

void agent_proc_kill9(struct agent_proc *ap)
{
    if (ap->pid > 0) {
        kill(ap->pid, SIGKILL);
        waitpid(ap->pid, NULL, 0);
        ap->pid = 0;
    }
}

/* SIGTERM; returns the exit status (-1: signal or timeout). */
int agent_proc_term(struct agent_proc *ap)
{
    if (ap->pid <= 0) {
        return -1;
    }
    kill(ap->pid, SIGTERM);
    int st = 0;
    int64_t deadline = h_now_ms() + h_patience(20000);
    while (waitpid(ap->pid, &st, WNOHANG) == 0) {
        if (h_now_ms() > deadline) {
            kill(ap->pid, SIGKILL);
            waitpid(ap->pid, &st, 0);
            ap->pid = 0;
            return -1;
        }
        h_sleep_ms(10);
    }
    ap->pid = 0;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

void agent_proc_print_log(const struct agent_proc *ap)
{
    char *data = NULL;
    size_t len = 0;
    if (h_read_file(ap->log, &data, &len) == 0) {
        size_t from = len > 4000 ? len - 4000 : 0;
        fprintf(stderr, "---- agent log (%s) ----\n%s\n----\n", ap->log, data + from);
    }
    free(data);
}

/* Removes the agent's dirs, printing its log first when a check failed. */
void agent_proc_cleanup(struct agent_proc *ap)
{
    if (check_failed > 0) {
        agent_proc_print_log(ap);
    }
    char *cmd = h_fmt("rm -rf '%s'", ap->dir);
    int r = system(cmd);
    (void)r;
    free(cmd);
}

/* Lines of out.txt (0 when missing). */
int agent_proc_out_lines(const struct agent_proc *ap)
{
    char *data = NULL;
    size_t len = 0;
    int n = 0;
    if (h_read_file(ap->out, &data, &len) == 0) {
        for (size_t i = 0; i < len; i++) {
            n += data[i] == '\n';
        }
    }
    free(data);
    return n;
}

/* How many lines of out.txt equal id. */
int agent_proc_out_count(const struct agent_proc *ap, const char *id)
{
    char *data = NULL;
    size_t len = 0;
    int n = 0;
    if (h_read_file(ap->out, &data, &len) == 0) {
        size_t idlen = strlen(id);
        for (char *p = data; p != NULL && *p != '\0';) {
            char *nl = strchr(p, '\n');
            size_t l = nl != NULL ? (size_t)(nl - p) : strlen(p);
            n += l == idlen && memcmp(p, id, l) == 0;
            p = nl != NULL ? nl + 1 : NULL;
        }
    }
    free(data);
    return n;
}

bool agent_proc_log_contains(const struct agent_proc *ap, const char *needle)
{
    char *data = NULL;
    size_t len = 0;
    bool found = h_read_file(ap->log, &data, &len) == 0 && strstr(data, needle) != NULL;
    free(data);
    return found;
}

/* Counts events of `agent` by status (reading the whole inbox, read-only). */
int h_count_status(struct roostd *d, const char *token, const char *agent, const char *status)
{
    long st = 0;
    json_t *r = h_inbox(d->http, token, agent, 0, 1000, &st);
    int n = 0;
    json_t *evs = json_object_get(r, "events");
    for (size_t i = 0; i < json_array_size(evs); i++) {
        n += strcmp(h_str(h_at(evs, i), "status"), status) == 0;
    }
    json_decref(r);
    return st == 200 ? n : -1;
}

json_t *h_inbox_event(struct roostd *d, const char *token, const char *agent, const char *id)
{
    long st = 0;
    json_t *r = h_inbox(d->http, token, agent, 0, 1000, &st);
    json_t *out = NULL;
    json_t *evs = json_object_get(r, "events");
    for (size_t i = 0; i < json_array_size(evs); i++) {
        if (strcmp(h_str(h_at(evs, i), "event_id"), id) == 0) {
            out = json_incref(h_at(evs, i));
        }
    }
    json_decref(r);
    return out;
}

char *h_event_status(struct roostd *d, const char *token, const char *agent, const char *id)
{
    json_t *ev = h_inbox_event(d, token, agent, id);
    char *out = h_fmt("%s", ev != NULL ? h_str(ev, "status") : "(none)");
    json_decref(ev);
    return out;
}

bool h_event_status_is(struct roostd *d, const char *token, const char *agent, const char *id,
                       const char *status)
{
    char *s = h_event_status(d, token, agent, id);
    bool is = strcmp(s, status) == 0;
    free(s);
    return is;
}

bool agent_proc_status_is(const struct agent_proc *ap, enum roost_agent_conn conn)
{
    struct roost_agent_status st;
    return roost_agent_status_read(ap->state, &st) == ROOST_OK && st.conn == conn;
}

/* Publishes n events in one batch; ids (may be NULL) gets their ids (31 bytes each). */
void h_publish_n(struct roostd *d, const char *token, const char *agent, int n, char (*ids)[31])
{
    json_t *events = json_array();
    for (int i = 0; i < n; i++) {
        json_array_append_new(events,
                              json_pack("{s:[s],s:{s:i}}", "recipients", agent, "payload", "i", i));
    }
    json_t *res = NULL;
    long st = h_callj(d->http, "POST", token, json_pack("{s:o}", "events", events), &res,
                      "/api/v1/events");
    CHECK_EQ(st, 201);
    json_t *arr = json_object_get(res, "events");
    for (int i = 0; ids != NULL && i < n && i < (int)json_array_size(arr); i++) {
        snprintf(ids[i], 31, "%s", h_str(h_at(arr, (size_t)i), "event_id"));
    }
    json_decref(res);
}