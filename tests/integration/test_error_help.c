/* SPDX-License-Identifier: MIT */
/* Errors that help (issue 14 item 12), from the real roostd and the real CLI: an expired token
 * says when it expired, a 403 names the scope it needed, a range error states the range, a
 * repeated query parameter has its own code, a 405 carries Allow (RFC 9110), and a second
 * `roost agent run` on a state dir in use names the dir and the pid holding it. Each is checked
 * in the JSON error body and in what the CLI prints. */
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/agent_proc.h"
#include "harness/harness.h"

#include "common/banned.h"

static struct roostd d;

/* Runs the CLI (args after the binary, shell syntax); *err gets what it printed on stderr
 * (caller frees). Returns the exit status, -1 when it did not run. */
static int cli_stderr(char **err, const char *args)
{
    char *cmd = h_fmt("'%s' %s 2>&1 >/dev/null </dev/null", ROOST_CLI_BIN, args);
    FILE *p = popen(cmd, "r");
    free(cmd);
    *err = h_fmt("%s", "");
    if (p == NULL) {
        return -1;
    }
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = '\0';
    int st = pclose(p);
    free(*err);
    *err = h_fmt("%s", buf);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *err_msg(const json_t *j)
{
    return h_str(json_object_get(j, "error"), "message");
}

static json_t *err_obj(const json_t *j)
{
    return json_object_get(j, "error");
}

static void test_expired_token_says_when(void)
{
    json_int_t now = (json_int_t)time(NULL);
    json_t *claims = json_pack("{s:s, s:s, s:s, s:I, s:I}", "tenant", "t1", "sub", "old", "scope",
                               "agent:*:consume", "iat", now - 3600, "exp", now - 600);
    char *old = h_token_claims(&d, claims);
    json_decref(claims);
    json_t *res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", old, NULL, &res, "/api/v1/agents/e1/state"), 401);
    CHECK_STREQ(h_error_code(res), "unauthenticated");
    const char *msg = err_msg(res);
    CHECK(msg != NULL && strstr(msg, "the token expired at ") != NULL && strstr(msg, "s ago"));
    json_int_t ago = h_int(err_obj(res), "expired_s_ago");
    CHECK(ago >= 600 && ago < 700);
    const char *at = h_str(err_obj(res), "expired_at");
    CHECK(at != NULL && strlen(at) >= 20 && at[4] == '-' && at[strlen(at) - 1] == 'Z');
    json_decref(res);
    /* A token that does not verify says nothing more than before. */
    res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", "e30.e30.AAAA", NULL, &res, "/api/v1/agents/e1/state"), 401);
    CHECK(h_int(err_obj(res), "expired_s_ago") == 0 && strstr(err_msg(res), "expired") == NULL);
    json_decref(res);

    char *out = NULL;
    char *args = h_fmt("state --agent e1 --server %s --token %s", d.url, old);
    CHECK_EQ(cli_stderr(&out, args), 1);
    CHECK(strstr(out, "the token expired at ") != NULL && strstr(out, "(unauthenticated)"));
    free(args);
    free(out);
    free(old);
}

static void test_forbidden_names_scope(void)
{
    char *tok = h_token(&d, "t1", "agent:other:read agent:other:publish");
    json_t *res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/agents/f1/state"), 403);
    CHECK_STREQ(h_str(err_obj(res), "required_scope"), "agent:f1:read");
    CHECK(strstr(err_msg(res), "agent:f1:read") != NULL);
    json_decref(res);
    res = NULL;
    CHECK_EQ(h_callj(d.http, "POST", tok, json_pack("{}"), &res, "/api/v1/agents/f1/inbox/claim"),
             403);
    CHECK_STREQ(h_str(err_obj(res), "required_scope"), "agent:f1:consume");
    json_decref(res);
    res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/admin/stats"), 403);
    CHECK_STREQ(h_str(err_obj(res), "required_scope"), "tenant:admin");
    json_decref(res);
    res = NULL;
    /* Publish names the first recipient the token may not publish to. */
    CHECK_EQ(h_callj(d.http, "POST", tok,
                     json_pack("{s:[s,s], s:{}}", "recipients", "other", "f2", "payload"), &res,
                     "/api/v1/events"),
             403);
    CHECK_STREQ(h_str(err_obj(res), "required_scope"), "agent:f2:publish");
    json_decref(res);

    char *out = NULL;
    char *args = h_fmt("claim --agent f1 --server %s --token %s", d.url, tok);
    CHECK_EQ(cli_stderr(&out, args), 1);
    CHECK(strstr(out, "the token lacks the scope agent:f1:consume (forbidden)") != NULL);
    CHECK(strstr(out, "'roost whoami' shows the token in use") != NULL);
    free(args);
    free(out);
    free(tok);
}

static void test_range_and_repeat(void)
{
    char *tok = h_token(&d, "t1", "agent:*:consume agent:*:publish tenant:admin");
    json_t *res = NULL;
    CHECK_EQ(h_callj(d.http, "POST", tok, json_pack("{s:i}", "lease_s", 99999), &res,
                     "/api/v1/agents/r1/inbox/claim"),
             400);
    CHECK_STREQ(h_error_code(res), "invalid_lease_s");
    CHECK_STREQ(err_msg(res), "lease_s must be an integer between 1 and 43200");
    CHECK_STREQ(h_str(err_obj(res), "param"), "lease_s");
    CHECK_EQ(h_int(err_obj(res), "min"), 1);
    CHECK_EQ(h_int(err_obj(res), "max"), 43200);
    json_decref(res);
    res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/agents/r1/inbox?limit=5000"), 400);
    CHECK_STREQ(err_msg(res), "limit must be an integer between 1 and 1000");
    json_decref(res);
    res = NULL;
    /* Inside a batch: the event's own code, its index and the rule. */
    CHECK_EQ(h_callj(d.http, "POST", tok,
                     json_pack("{s:[{s:[s]},{s:[s],s:i}]}", "events", "recipients", "r1",
                               "recipients", "r1", "priority", 101),
                     &res, "/api/v1/events"),
             400);
    CHECK_STREQ(h_error_code(res), "invalid_priority");
    CHECK_EQ(h_int(err_obj(res), "index"), 1);
    CHECK_STREQ(err_msg(res), "priority must be an integer between -100 and 100");
    json_decref(res);
    res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/agents/r1/inbox?limit=1&limit=2"),
             400);
    CHECK_STREQ(h_error_code(res), "repeated_query_parameter");
    CHECK_STREQ(h_str(err_obj(res), "param"), "limit");
    json_decref(res);
    res = NULL;
    CHECK_EQ(h_callj(d.http, "GET", tok, NULL, &res, "/api/v1/admin/quarantine?next=a&next=b"),
             400);
    CHECK_STREQ(h_error_code(res), "repeated_query_parameter");
    CHECK_STREQ(h_str(err_obj(res), "param"), "next");
    json_decref(res);

    char *out = NULL;
    char *args = h_fmt("claim --agent r1 --lease 99999 --server %s --token %s", d.url, tok);
    CHECK_EQ(cli_stderr(&out, args), 1);
    CHECK(strstr(out, "lease_s must be an integer between 1 and 43200 (invalid_lease_s)") != NULL);
    free(args);
    free(out);
    free(tok);
}

static void test_method_not_allowed_has_allow(void)
{
    char *tok = h_token(&d, "t1", "agent:*:consume tenant:admin");
    static const struct {
        const char *method, *path, *allow;
    } cases[] = {
        {"DELETE", "/api/v1/agents/m1/inbox", "GET"},
        {"PUT", "/api/v1/events", "POST"},
        {"DELETE", "/api/v1/admin/keys", "POST, GET"},
        {"POST", "/api/v1/keys/server", "GET"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct h_response r = {0};
        CHECK_EQ(h_request(d.http, cases[i].method, cases[i].path, tok, NULL, 0, NULL, &r), 0);
        CHECK_EQ(r.status, 405);
        char allow[64];
        CHECK_STREQ(h_header(&r, "Allow", allow, sizeof allow), cases[i].allow);
        CHECK_STREQ(h_str(err_obj(r.json), "allow"), cases[i].allow);
        h_response_cleanup(&r);
    }
    free(tok);
}

static void test_state_dir_in_use(void)
{
    char *tok = h_token(&d, "t1", "agent:*:consume");
    struct agent_proc ap;
    agent_proc_dirs(&ap);
    agent_proc_start(&ap, d.url, tok, "s1", 1, "");
    bool ok;
    H_WAIT_UNTIL(ok, 10000, agent_proc_status_is(&ap, ROOST_AGENT_CONN_STREAMING));
    CHECK(ok);
    char *out = NULL;
    char *args = h_fmt("agent run --agent s1 --state-dir '%s' --exec true --server %s --token %s",
                       ap.state, d.url, tok);
    CHECK_EQ(cli_stderr(&out, args), 3);
    char *want = h_fmt("the state dir %s is in use by another agent process (pid %ld)", ap.state,
                       (long)ap.pid);
    CHECK(strstr(out, want) != NULL);
    if (strstr(out, want) == NULL) {
        fprintf(stderr, "got: %s", out);
    }
    free(want);
    free(args);
    free(out);
    CHECK_EQ(agent_proc_term(&ap), 0);
    /* Stopped, the dir still belongs to s1. */
    args = h_fmt("agent run --agent s2 --state-dir '%s' --exec true --server %s --token %s",
                 ap.state, d.url, tok);
    CHECK_EQ(cli_stderr(&out, args), 3);
    want = h_fmt("the state dir %s belongs to agent s1, not s2", ap.state);
    CHECK(strstr(out, want) != NULL);
    free(want);
    free(args);
    free(out);
    agent_proc_cleanup(&ap);
    free(tok);
}

int main(void)
{
    h_init();
    if (!roostd_start_checked(&d, NULL, NULL)) {
        return h_summary();
    }
    RUN(test_expired_token_says_when);
    RUN(test_forbidden_names_scope);
    RUN(test_range_and_repeat);
    RUN(test_method_not_allowed_has_allow);
    RUN(test_state_dir_in_use);
    roostd_finish(&d);
    return h_summary();
}
