/* SPDX-License-Identifier: MIT */
/* A failing fsync on the SQLite store (libfiu's POSIX preload, switched on and off with
 * fiu-ctrl, as the chaos suite does): publishes and acks answer 503 `unavailable` (retryable,
 * never 500), nothing they carried was written, the store recovers once fsync works again, and
 * every request answered 2xx is there after a restart. SQLite only (the fault is in roostd's
 * own file I/O); label noasan (an LD_PRELOAD library cannot come before the ASan runtime). */
#include <stdlib.h>

#include "harness/harness.h"

#include "common/banned.h"

#define FIU_LIB_DIR "/usr/lib/fiu"
#define N_FAULTED 8

static char fiu_prefix[300];

/* Switches both sync failure points of roostd on or off; false when fiu-ctrl failed. */
static bool fsync_fault(const struct roostd *d, bool on)
{
    static const char *const points[] = {"posix/io/sync/fsync", "posix/io/sync/fdatasync"};
    for (size_t i = 0; i < sizeof points / sizeof points[0]; i++) {
        char *cmd = h_fmt("fiu-ctrl -f '%s' -c '%s name=%s' %d", fiu_prefix,
                          on ? "enable" : "disable", points[i], (int)d->pid);
        int rc = system(cmd);
        free(cmd);
        if (rc != 0) {
            return false;
        }
    }
    return true;
}

/* Starts roostd under the libfiu preloads (what `fiu-run -x -f PREFIX` sets up). */
static int start_under_fiu(struct roostd *d, const char *dir)
{
    setenv("LD_PRELOAD", FIU_LIB_DIR "/fiu_run_preload.so " FIU_LIB_DIR "/fiu_posix_preload.so", 1);
    setenv("FIU_CTRL_FIFO", fiu_prefix, 1);
    int rc = roostd_start(d, dir, NULL);
    unsetenv("LD_PRELOAD");
    unsetenv("FIU_CTRL_FIFO");
    return rc;
}

/* Publishes one event with an idempotency key; returns the status, *code the error code. */
static long publish_keyed(struct roostd *d, const char *tok, const char *key, char *code,
                          size_t code_len, char *event_id)
{
    json_t *res = NULL;
    json_t *body = json_pack("{s:[s],s:{s:s},s:s}", "recipients", "fs.a", "payload", "k", key,
                             "idempotency_key", key);
    long st = h_callj(d->http, "POST", tok, body, &res, "/api/v1/events");
    const char *c = h_error_code(res);
    snprintf(code, code_len, "%s", c != NULL ? c : "");
    if (event_id != NULL) {
        const char *id = h_str(h_at(json_object_get(res, "events"), 0), "event_id");
        snprintf(event_id, 31, "%s", id != NULL ? id : "");
    }
    json_decref(res);
    return st;
}

static void test_store_fsync_fault_answers_503_and_recovers(void)
{
    char tmpl[] = "/tmp/roost-fsync-XXXXXX";
    if (mkdtemp(tmpl) == NULL) {
        CHECK(!"mkdtemp");
        return;
    }
    snprintf(fiu_prefix, sizeof fiu_prefix, "%s/fiu", tmpl);
    struct roostd d;
    if (start_under_fiu(&d, tmpl) != 0) {
        CHECK(!"roostd started under fiu");
        return;
    }
    char *tok = h_token(&d, "t1", "agent:*:consume agent:*:publish");
    char code[64], ids[4][31];
    for (int i = 0; i < 4; i++) {
        char *key = h_fmt("before-%d", i);
        CHECK_EQ(publish_keyed(&d, tok, key, code, sizeof code, ids[i]), 201);
        free(key);
    }
    json_t *claimed = h_claim(d.http, tok, "fs.a", 2, 600, "c1");
    CHECK_EQ(json_array_size(claimed), 2);

    /* Every write commits with an fsync of the WAL (synchronous=FULL): each one fails now. */
    CHECK(fsync_fault(&d, true));
    int n503 = 0;
    bool answered[N_FAULTED] = {0};
    for (int i = 0; i < N_FAULTED; i++) {
        char *key = h_fmt("during-%d", i);
        long st = publish_keyed(&d, tok, key, code, sizeof code, NULL);
        free(key);
        if (st == 503) {
            CHECK_STREQ(code, "unavailable");
            n503++;
        } else {
            CHECK_EQ(st, 201);
            answered[i] = st == 201;
        }
    }
    CHECK_EQ(n503, N_FAULTED);
    long ack_st = h_ack(d.http, tok, "fs.a", h_str(h_at(claimed, 0), "event_id"),
                        h_str(h_at(claimed, 0), "lease_token"));
    CHECK_EQ(ack_st, 503);
    CHECK(fsync_fault(&d, false));

    /* The store recovers: the next write commits. */
    bool ok = false;
    H_WAIT_UNTIL(ok, 5000, publish_keyed(&d, tok, "after-0", code, sizeof code, NULL) == 201);
    CHECK(ok);
    /* The 503 wrote nothing: the same key publishes anew (201, not a 200 duplicate). */
    for (int i = 0; i < N_FAULTED; i++) {
        char *key = h_fmt("during-%d", i);
        CHECK_EQ(publish_keyed(&d, tok, key, code, sizeof code, NULL), answered[i] ? 200 : 201);
        free(key);
    }
    /* The ack answered 503 did not complete the event: it is still held by its lease. */
    CHECK_EQ(h_ack(d.http, tok, "fs.a", h_str(h_at(claimed, 0), "event_id"),
                   h_str(h_at(claimed, 0), "lease_token")),
             200);
    CHECK_EQ(h_ack(d.http, tok, "fs.a", h_str(h_at(claimed, 1), "event_id"),
                   h_str(h_at(claimed, 1), "lease_token")),
             200);
    CHECK_EQ(roostd_stop(&d), 0);
    free(tok);

    /* Everything answered 2xx survives a restart: 4 + 1 + N_FAULTED rows (each key once), in
     * order. */
    if (roostd_start(&d, tmpl, NULL) != 0) {
        CHECK(!"roostd restarted");
        json_decref(claimed);
        return;
    }
    tok = h_token(&d, "t1", "agent:*:consume agent:*:publish");
    long st = 0;
    json_t *page = h_inbox(d.http, tok, "fs.a", 0, 100, &st);
    CHECK_EQ(st, 200);
    json_t *evs = json_object_get(page, "events");
    CHECK_EQ(json_array_size(evs), 5 + N_FAULTED);
    for (int i = 0; i < 4; i++) {
        CHECK_STREQ(h_str(h_at(evs, (size_t)i), "event_id"), ids[i]);
    }
    CHECK_STREQ(h_str(h_at(evs, 0), "status"), "completed");
    CHECK_STREQ(h_str(h_at(evs, 1), "status"), "completed");
    json_decref(page);
    json_decref(claimed);
    free(tok);
    CHECK_EQ(roostd_stop(&d), 0);
    roostd_remove_dir(&d);
}

int main(void)
{
    h_init();
    test_store_fsync_fault_answers_503_and_recovers();
    return h_summary();
}
