/* SPDX-License-Identifier: MIT */
/* SIGHUP reloads the config: reloadable keys take effect for the next request, keys that need a
 * restart are named in the log and keep their value, and a broken file changes nothing. */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness/harness.h"

#include "common/banned.h"

static struct roostd d;
static char dir[256];

static int write_conf(const char *body)
{
    char *path = h_fmt("%s/roostd.conf", dir);
    FILE *f = fopen(path, "w");
    free(path);
    if (f == NULL) {
        return -1;
    }
    fputs(body, f);
    return fclose(f) == 0 ? 0 : -1;
}

/* The answer to publishing one event with `extra` fields (stolen): 200 or the error status. */
static long publish_with(const char *tok, json_t *extra)
{
    json_t *body = json_pack("{s:[s], s:{}}", "recipients", "r.a", "payload");
    if (extra != NULL) {
        json_object_update(body, extra);
        json_decref(extra);
    }
    return h_callj(d.http, "POST", tok, body, NULL, "/api/v1/events");
}

static void test_config_reload_applies_sighup(void)
{
    char *tok = h_token(&d, "t1", "agent:*:consume agent:*:publish");
    /* limits.max_recipients = 2 at start: three recipients are refused. */
    json_t *three = json_pack("{s:[s,s,s]}", "recipients", "r.a", "r.b", "r.c");
    CHECK_EQ(publish_with(tok, three), 400);

    /* A reloadable key changes, and one that needs a restart. */
    CHECK_EQ(write_conf("limits.max_recipients = 3\nhttp.timeout_s = 77\n"), 0);
    CHECK(roostd_hup_and_wait(&d, "config reloaded"));
    CHECK(roostd_log_count(&d, "changed=\"limits.max_recipients\"") == 1);
    CHECK(roostd_log_count(&d, "needs_restart=\"http.timeout_s\"") == 1);
    three = json_pack("{s:[s,s,s]}", "recipients", "r.a", "r.b", "r.c");
    CHECK_EQ(publish_with(tok, three), 201);

    /* A broken file: the reload fails, the previous values stay. */
    CHECK_EQ(write_conf("limits.max_recipients = banana\n"), 0);
    CHECK(roostd_hup_and_wait(&d, "config reload failed"));
    CHECK(roostd_alive(&d));
    three = json_pack("{s:[s,s,s]}", "recipients", "r.a", "r.b", "r.c");
    CHECK_EQ(publish_with(tok, three), 201);
    json_t *four = json_pack("{s:[s,s,s,s]}", "recipients", "r.a", "r.b", "r.c", "r.d");
    CHECK_EQ(publish_with(tok, four), 400);

    /* log.level is reloadable too: at warn, request lines (info) stop. */
    CHECK_EQ(write_conf("limits.max_recipients = 3\nlog.level = warn\n"), 0);
    CHECK(roostd_hup_and_wait(&d, "config reloaded"));
    int requests = roostd_log_count(&d, "msg=request");
    CHECK_EQ(publish_with(tok, NULL), 201);
    CHECK_EQ(roostd_log_count(&d, "msg=request"), requests);
    free(tok);
}

int main(void)
{
    h_init();
    const char *tmp = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/roost-reload-XXXXXX", tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL || write_conf("limits.max_recipients = 2\n") != 0) {
        CHECK(!"config dir");
        return h_summary();
    }
    char *conf = h_fmt("--config=%s/roostd.conf", dir);
    const char *sets[] = {conf, "store.synchronous=normal", NULL};
    if (roostd_start_checked(&d, NULL, sets)) {
        RUN(test_config_reload_applies_sighup);
        roostd_finish(&d);
    }
    free(conf);
    char *rm = h_fmt("rm -rf '%s'", dir);
    CHECK_EQ(system(rm), 0);
    free(rm);
    return h_summary();
}
