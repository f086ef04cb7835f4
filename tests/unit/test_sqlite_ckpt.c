/* SPDX-License-Identifier: MIT */
/* Unit tests of checkpoints off the committing thread (store_sqlite_ckpt.c): a commit that leaves
 * the WAL past SQLITE_CKPT_PAGES hands the checkpoint to the store's checkpoint thread, which
 * copies the whole WAL into the database file with no further call on the store; while a reader's
 * snapshot keeps the thread from copying, the WAL grows to SQLITE_CKPT_INLINE_PAGES and then the
 * committing connection checkpoints itself. */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "harness/check.h"
#include "store/store.h"
#include "store/store_sqlite_int.h"

#include "common/banned.h"

static char dir[256];

static struct store *open_store(const char *name, bool full)
{
    char url[340];
    snprintf(url, sizeof url, "sqlite://%s/%s", dir, name);
    struct store_options opt = {.synchronous_full = full};
    struct store *st = NULL;
    const char *why = NULL;
    if (store_open(url, &opt, &st, &why) != ROOST_OK) {
        fprintf(stderr, "open %s: %s\n", url, why ? why : "?");
        return NULL;
    }
    return st;
}

static bool exec(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fprintf(stderr, "%s: %s\n", sql, msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return false;
    }
    return true;
}

/* One transaction of `rows` rows of about 4 KiB each (about one WAL page a row). */
static bool write_rows(sqlite3 *db, int rows)
{
    char sql[160];
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) "
             "INSERT INTO t(v) SELECT randomblob(4000) FROM n",
             rows);
    return exec(db, "BEGIN IMMEDIATE") && exec(db, sql) && exec(db, "COMMIT");
}

static struct sqlite_ckpt_stats stats_of(struct store *st)
{
    struct sqlite_ckpt_stats s;
    store_sqlite_ckpt_stats(store_sqlite_backend(st), &s);
    return s;
}

/* PRAGMA wal_checkpoint(PASSIVE) on a connection of its own: the WAL's frames and how many of
 * them are in the database file (its own pass copies nothing new while `db` is idle). */
static void wal_frames(const char *name, int *log, int *done)
{
    char path[320];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    sqlite3 *db = NULL;
    *log = *done = -1;
    /* A first read opens the WAL (a connection reads the journal mode from the file). */
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
        exec(db, "SELECT count(*) FROM sqlite_master")) {
        sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, log, done);
    }
    sqlite3_close(db);
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void test_sqlite_ckpt_commit_hands_checkpoint_to_thread(void)
{
    const char *name = "normal.db";
    struct store *st = open_store(name, false);
    CHECK(st != NULL);
    if (st == NULL) {
        return;
    }
    sqlite3 *db = store_sqlite_backend(st)->db;
    CHECK(exec(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)"));
    CHECK(write_rows(db, 1500));
    struct sqlite_ckpt_stats s = stats_of(st);
    CHECK_EQ(s.inline_ckpts, 0);
    CHECK(s.handed >= 1);
    /* The thread copies the WAL into the database file by itself (a generous wait: a loaded
     * machine; nothing here is timed). */
    for (int i = 0; i < 600 && stats_of(st).background == 0; i++) {
        sleep_ms(100);
    }
    CHECK(stats_of(st).background >= 1);
    /* The rows are in the database file, copied there by the thread alone. */
    char path[320];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && sb.st_size >= 1500LL * 4000);
    int log = 0, done = 0;
    wal_frames(name, &log, &done);
    CHECK(log >= 1500);
    CHECK_EQ(done, log);
    /* The next write starts the WAL over, as after SQLite's own checkpoint. */
    CHECK(write_rows(db, 10));
    wal_frames(name, &log, &done);
    CHECK(log > 0 && log < 100);
    CHECK_EQ(stats_of(st).inline_ckpts, 0);
    store_close(st);
}

/* Under synchronous=FULL SQLite's automatic checkpoint stays: the COMMIT that passes 1,000 pages
 * has copied the WAL into the database file by the time it returns. */
static void test_sqlite_ckpt_full_sync_keeps_checkpoint_in_commit(void)
{
    struct store *st = open_store("full.db", true);
    CHECK(st != NULL);
    if (st == NULL) {
        return;
    }
    sqlite3 *db = store_sqlite_backend(st)->db;
    CHECK(exec(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)"));
    CHECK(write_rows(db, 1500));
    char path[320];
    snprintf(path, sizeof path, "%s/full.db", dir);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && sb.st_size >= 1500LL * 4000);
    struct sqlite_ckpt_stats s = stats_of(st);
    CHECK_EQ(s.handed + s.background + s.inline_ckpts, 0);
    store_close(st);
}

static void test_sqlite_ckpt_writer_checkpoints_at_the_bound(void)
{
    struct store *st = open_store("bound.db", false);
    CHECK(st != NULL);
    if (st == NULL) {
        return;
    }
    sqlite3 *db = store_sqlite_backend(st)->db;
    CHECK(exec(db, "CREATE TABLE t(k INTEGER PRIMARY KEY, v BLOB)"));
    /* A reader's snapshot taken before the writes: no checkpoint may copy what came after it,
     * so the WAL keeps growing whoever runs them. */
    char path[320];
    snprintf(path, sizeof path, "%s/bound.db", dir);
    sqlite3 *rd = NULL;
    CHECK(sqlite3_open_v2(path, &rd, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    CHECK(exec(rd, "BEGIN; SELECT count(*) FROM t"));
    for (int i = 0; i < 5; i++) {
        CHECK(write_rows(db, 1000));
    }
    CHECK_EQ(stats_of(st).inline_ckpts, 0);
    CHECK(stats_of(st).handed >= 1);
    for (int i = 0; i < 5; i++) {
        CHECK(write_rows(db, 1000));
    }
    /* Past SQLITE_CKPT_INLINE_PAGES the committing connection checkpoints itself. */
    CHECK(stats_of(st).inline_ckpts >= 1);
    CHECK(exec(rd, "COMMIT"));
    sqlite3_close(rd);
    store_close(st);
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/roost-ckpt-XXXXXX", t != NULL && t[0] != '\0' ? t : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    RUN(test_sqlite_ckpt_commit_hands_checkpoint_to_thread);
    RUN(test_sqlite_ckpt_full_sync_keeps_checkpoint_in_commit);
    RUN(test_sqlite_ckpt_writer_checkpoints_at_the_bound);
    char cmd[320];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", dir);
    }
    return check_summary();
}
