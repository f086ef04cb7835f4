/* SPDX-License-Identifier: MIT */
/* A failing fsync, then a failing write (a full disk), on the SQLite store (libfiu's POSIX
 * preload, switched on and off with fiu-ctrl, as the chaos suite does): publishes and acks answer
 * 503 `unavailable` (retryable, never 500), nothing they carried was written, the store recovers
 * once the disk works again, and every request answered 2xx is there after a restart. The write
 * fault hits the one write of a commit's WAL frames (store_sqlite_walbuf.c). SQLite only (the fault
 * is in roostd's own file I/O); label noasan (an LD_PRELOAD library cannot come before the ASan
 * runtime). */
#include <stdlib.h>

#include "harness/harness.h"

#include "common/banned.h"

#define FIU_LIB_DIR "/usr/lib/fiu"
#define N_FAULTED 8

static char fiu_prefix[300];

/* A disk fault: libfiu failure points (SQLite writes with pwrite64 only, which libfiu counts as
 * pwrite; roostd's other writes, to sockets and its wake-up eventfd, keep working), and what they
 * fail with (failinfo: the errno; libfiu picks
 * one at random without it, EINTR among them for writes, which SQLite retries forever). */
struct disk_fault {
    const char *points[2];
    const char *enable_args; /* after "enable name=POINT" */
};

static const struct disk_fault fsync_fails = {{"posix/io/sync/fsync", "posix/io/sync/fdatasync"},
                                              ""};
static const struct disk_fault write_fails = {{"posix/io/rw/pwrite", NULL},
                                              ",failinfo=28" /* ENOSPC */};

/* Switches the fault's points in roostd on or off; false when fiu-ctrl failed. */
static bool set_fault(const struct roostd *d, const struct disk_fault *f, bool on)
{
    for (size_t i = 0; i < sizeof f->points / sizeof f->points[0] && f->points[i] != NULL; i++) {
        char *what = on ? h_fmt("enable name=%s%s", f->points[i], f->enable_args)
                        : h_fmt("disable name=%s", f->points[i]);
        char *cmd = h_fmt("fiu-ctrl -f '%s' -c '%s' %d", fiu_prefix, what, (int)d->pid);
        free(what);
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

static void fault_answers_503_and_recovers(const struct disk_fault *fault)
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

    /* Every write commits with a write and an fsync of the WAL (synchronous=FULL): each one
     * fails now. */
    CHECK(set_fault(&d, fault, true));
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
    CHECK(set_fault(&d, fault, false));

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
    roostd_finish(&d);
}

static void test_store_fsync_fault_answers_503_and_recovers(void)
{
    fault_answers_503_and_recovers(&fsync_fails);
}

static void test_store_write_fault_answers_503_and_recovers(void)
{
    fault_answers_503_and_recovers(&write_fails);
}

int main(void)
{
    h_init();
    test_store_fsync_fault_answers_503_and_recovers();
    test_store_write_fault_answers_503_and_recovers();
    return h_summary();
}
