/* SPDX-License-Identifier: MIT */
/* Request logs in both formats: every request line carries ts, level, req_id, route, status,
 * duration_ms, tenant and agent, in logfmt by default and as one JSON object per line after a
 * SIGHUP switches log.format to json; tokens (header or ?access_token=) and payloads never
 * appear. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness/harness.h"

#include "common/banned.h"

#define MARKER "PAYLOAD-MARKER-7f3a"

static struct roostd d;
static char dir[256];

static char *read_log(void)
{
    char *path = h_fmt("%s/roostd.log", d.dir), *data = NULL;
    size_t len = 0;
    if (h_read_file(path, &data, &len) != 0) {
        data = NULL;
    }
    free(path);
    return data;
}

/* The last log line containing `needle` (caller frees), or NULL. */
static char *last_line_with(const char *needle)
{
    char *log = read_log(), *found = NULL;
    if (log == NULL) {
        return NULL;
    }
    for (char *line = log; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl) {
            *nl = '\0';
        }
        if (strstr(line, needle) != NULL) {
            free(found);
            found = h_fmt("%s", line);
        }
        line = nl ? nl + 1 : NULL;
    }
    free(log);
    return found;
}

/* last_line_with, waiting for the line: request lines are written in batches, up to
 * ACCESS_LOG_FLUSH_MS after their answer (server/access_log.h). */
static char *await_line_with(const char *needle)
{
    char *found = NULL;
    bool ok;
    H_WAIT_UNTIL(ok, 2000, (found = last_line_with(needle)) != NULL);
    (void)ok;
    return found;
}

/* Traffic whose secrets must stay out of the log: a bearer header, a query token, a payload. */
static void traffic(const char *tok, const char *agent)
{
    CHECK(h_publish(d.http, tok, agent, json_pack("{s:s}", "secret", MARKER), NULL, NULL) > 0);
    long st = 0;
    char *path = h_fmt("/api/v1/agents/%s/inbox?after_cursor=0&limit=5", agent);
    CHECK(http_request(d.http, "GET", path, tok, NULL, &st, NULL) == 0 && st == 200);
    free(path);
    /* An SSE handshake with ?access_token= that fails (unknown route method): logged, no token. */
    path = h_fmt("/api/v1/agents/%s/subscribe?access_token=%s", agent, tok);
    CHECK(http_request(d.http, "POST", path, NULL, NULL, &st, NULL) == 0 && st == 405);
    free(path);
}

static void check_no_secrets(const char *tok)
{
    char *log = read_log();
    CHECK(log != NULL);
    if (log != NULL) {
        /* The signature part of the JWT is enough to prove the token is absent. */
        const char *sig = strrchr(tok, '.');
        CHECK(sig != NULL && strstr(log, sig + 1) == NULL);
        CHECK(strstr(log, MARKER) == NULL);
        CHECK(strstr(log, "access_token") == NULL);
    }
    free(log);
}

static void test_log_logfmt_request_lines(void)
{
    char *tok = h_token(&d, "t1", "agent:*:consume agent:*:publish");
    traffic(tok, "log.a");
    char *line = await_line_with("route=inbox_read");
    CHECK(line != NULL);
    if (line != NULL) {
        CHECK(strncmp(line, "ts=", 3) == 0);
        const char *keys[] = {" level=info", " msg=\"request\"", " req_id=",   " route=inbox_read",
                              " status=200", " duration_ms=",    " tenant=t1", " agent=log.a"};
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            CHECK_CASE(keys[i], strstr(line, keys[i]) != NULL);
        }
    }
    free(line);
    check_no_secrets(tok);
    free(tok);
}

static void test_log_json_after_reload(void)
{
    char *conf = h_fmt("%s/roostd.conf", dir);
    FILE *f = fopen(conf, "w");
    free(conf);
    CHECK(f != NULL);
    if (f == NULL) {
        return;
    }
    fputs("log.format = json\n", f);
    fclose(f);
    CHECK(roostd_hup_and_wait(&d, "config reloaded"));
    char *tok = h_token(&d, "t1", "agent:*:consume agent:*:publish");
    traffic(tok, "log.b");
    char *line = await_line_with("\"route\":\"inbox_read\"");
    CHECK(line != NULL);
    json_t *j = line ? json_loads(line, 0, NULL) : NULL;
    CHECK(j != NULL);
    if (j != NULL) {
        CHECK(json_is_string(json_object_get(j, "ts")));
        CHECK_STREQ(h_str(j, "level"), "info");
        CHECK_STREQ(h_str(j, "msg"), "request");
        CHECK(json_is_string(json_object_get(j, "req_id")));
        CHECK_STREQ(h_str(j, "route"), "inbox_read");
        CHECK(json_is_integer(json_object_get(j, "status")) && h_int(j, "status") == 200);
        CHECK(json_is_number(json_object_get(j, "duration_ms")));
        CHECK_STREQ(h_str(j, "tenant"), "t1");
        CHECK_STREQ(h_str(j, "agent"), "log.b");
        CHECK_STREQ(h_str(j, "method"), "GET");
    }
    json_decref(j);
    free(line);
    /* Every line written after the switch is JSON, the non-request ones too. */
    line = await_line_with("\"route\":\"publish\"");
    CHECK(line != NULL && line[0] == '{');
    free(line);
    check_no_secrets(tok);
    free(tok);
}

int main(void)
{
    h_init();
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/roost-logs-XXXXXX", tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        CHECK(!"config dir");
        return h_summary();
    }
    char *conf = h_fmt("--config=%s/roostd.conf", dir);
    char *path = h_fmt("%s/roostd.conf", dir);
    FILE *f = fopen(path, "w");
    free(path);
    if (f != NULL) {
        fputs("log.format = logfmt\n", f);
        fclose(f);
    }
    const char *sets[] = {conf, "store.synchronous=normal", NULL};
    if (roostd_start_checked(&d, NULL, sets)) {
        RUN(test_log_logfmt_request_lines);
        RUN(test_log_json_after_reload);
        roostd_finish(&d);
    }
    free(conf);
    char *rm = h_fmt("rm -rf '%s'", dir);
    CHECK_EQ(system(rm), 0);
    free(rm);
    return h_summary();
}
