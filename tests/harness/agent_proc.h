/* SPDX-License-Identifier: MIT */
/* `roost agent run --exec` as a child process of an integration test (agent_proc.c). */
#ifndef ROOST_TEST_AGENT_PROC_H
#define ROOST_TEST_AGENT_PROC_H

#include <stdbool.h>
#include <sys/types.h>

#include "harness/harness.h"
#include "roost/roost_agent.h"

struct agent_proc {
    pid_t pid;
    char dir[256];   /* test dir: state/, out.txt, agent.log */
    char state[300]; /* state dir */
    char out[300];   /* the handler appends ROOST_EVENT_ID lines here */
    char log[300];
};

/* Makes a fresh test dir (mkdtemp under TMPDIR) and names the files in it. */
void agent_proc_dirs(struct agent_proc *ap);
/* Starts `roost agent run` against url with the token in ROOST_TOKEN; the handler appends
 * ROOST_EVENT_ID to out.txt after `pre` (shell text, may be ""). `extra`: more arguments
 * (NULL-ended, may be NULL). */
void agent_proc_start_args(struct agent_proc *ap, const char *url, const char *token,
                           const char *agent, int concurrency, const char *pre, const char *lease,
                           const char *const *extra);
void agent_proc_start_lease(struct agent_proc *ap, const char *url, const char *token,
                            const char *agent, int concurrency, const char *pre, const char *lease);
/* With a 30 s lease. */
void agent_proc_start(struct agent_proc *ap, const char *url, const char *token, const char *agent,
                      int concurrency, const char *pre);
/* SIGKILL and reap. */
void agent_proc_kill9(struct agent_proc *ap);
/* SIGTERM; returns the exit status (-1: signal or timeout). */
int agent_proc_term(struct agent_proc *ap);
void agent_proc_print_log(const struct agent_proc *ap);
/* Removes the agent's dirs, printing its log first when a check failed. */
void agent_proc_cleanup(struct agent_proc *ap);
/* Lines of out.txt (0 when missing). */
int agent_proc_out_lines(const struct agent_proc *ap);
/* How many lines of out.txt equal id. */
int agent_proc_out_count(const struct agent_proc *ap, const char *id);
bool agent_proc_log_contains(const struct agent_proc *ap, const char *needle);
/* The agent's connection state as its state file tells it. */
bool agent_proc_status_is(const struct agent_proc *ap, enum roost_agent_conn conn);

/* The scope of the agent tests' token: consume and publish for every agent. */
#define AGENT_SCOPE "agent:*:consume agent:*:publish"

/* What an agent test starts from, so that the test states only what differs: roostd, a token of
 * tenant t1 with AGENT_SCOPE, and an agent's test dir (agent_proc_dirs; not started). */
struct agent_fixture {
    struct roostd d;
    char *tok;
    struct agent_proc ap;
};

/* Starts roostd with `sets` (NULL-ended, may be NULL) in a new data dir, mints the token and makes
 * the agent's dirs. false after a failed check when roostd did not start (nothing to clean up). */
bool agent_fixture_start(struct agent_fixture *f, const char *const *sets);
/* Removes the agent's dirs (agent_proc_cleanup: the agent must have ended), frees the token,
 * stops roostd (checked to exit with status 0) and removes its data dir. */
void agent_fixture_stop(struct agent_fixture *f);

/* Counts events of `agent` by status (reading the whole inbox, read-only); -1 on failure. */
int h_count_status(struct roostd *d, const char *token, const char *agent, const char *status);
/* Event `id` of the agent's inbox (read-only; new reference), or NULL when not found. */
json_t *h_inbox_event(struct roostd *d, const char *token, const char *agent, const char *id);
/* The status of event `id` ("(none)" when not found). Caller frees. */
char *h_event_status(struct roostd *d, const char *token, const char *agent, const char *id);
/* Whether event `id` has that status now. */
bool h_event_status_is(struct roostd *d, const char *token, const char *agent, const char *id,
                       const char *status);
/* Publishes n events in one batch; ids (may be NULL) gets their ids (31 bytes each). */
void h_publish_n(struct roostd *d, const char *token, const char *agent, int n, char (*ids)[31]);

#endif
