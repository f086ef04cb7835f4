/* SPDX-License-Identifier: MIT */
/* Unit tests of the VFS that writes a transaction's WAL frames with one call
 * (store_sqlite_walbuf.c): a commit is one write system call; another connection sees every commit
 * as soon as it returns; a transaction larger than the buffer and than the page cache (so that
 * SQLite reads its own frames back before the commit) commits whole; a process killed in the middle
 * of a transaction keeps exactly the transactions that committed, as read through SQLite's default
 * VFS. */
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/check.h"
#include "store/store_sqlite_int.h"

#include "common/banned.h"

static char dir[256];
static const char *vfs;
/* Every test runs under synchronous=FULL, where SQLite syncs the WAL before a commit is named in
 * the wal-index, and again under NORMAL, where nothing syncs and the commit frame's write ends the
 * run. */
static const char *sync_mode = "FULL";

static sqlite3 *open_db(const char *name, const char *vfs_name)
{
    char path[320], pragmas[96];
    snprintf(path, sizeof path, "%s/%s-%s", dir, sync_mode, name);
    snprintf(pragmas, sizeof pragmas, "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s", sync_mode);
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs_name) !=
            SQLITE_OK ||
        sqlite3_exec(db, pragmas, NULL, NULL, NULL) != SQLITE_OK) {
        fprintf(stderr, "open %s: %s\n", path, sqlite3_errmsg(db));
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

static long long one_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    long long v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW) {
        v = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    return v;
}

static bool integrity_ok(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    bool ok = sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL) == SQLITE_OK &&
              sqlite3_step(st) == SQLITE_ROW &&
              strcmp((const char *)sqlite3_column_text(st, 0), "ok") == 0;
    sqlite3_finalize(st);
    return ok;
}

/* Write system calls of this process so far (/proc/self/io "syscw"). */
static long long write_calls(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    char line[128];
    long long n = -1;
    while (f != NULL && fgets(line, sizeof line, f) != NULL) {
        if (sscanf(line, "syscw: %lld", &n) == 1) {
            break;
        }
    }
    if (f != NULL) {
        fclose(f);
    }
    return n;
}

static void test_walbuf_commit_is_one_write(void)
{
    sqlite3 *db = open_db("one.db", vfs);
    CHECK(db != NULL);
    CHECK_EQ(sqlite3_exec(db, "CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)", NULL, NULL, NULL),
             SQLITE_OK);
    /* 40 rows of 3 KB: about 40 pages, 80 frame writes through the default VFS. */
    long long before = write_calls();
    CHECK_EQ(
        sqlite3_exec(db,
                     "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 40)"
                     " INSERT INTO t SELECT i, randomblob(3000) FROM n",
                     NULL, NULL, NULL),
        SQLITE_OK);
    long long calls = write_calls() - before;
    CHECK(calls >= 1 && calls <= 2);
    CHECK_EQ(one_int(db, "SELECT count(*) FROM t"), 40);
    sqlite3_close(db);
}

static void test_walbuf_reader_sees_every_commit(void)
{
    sqlite3 *w = open_db("read.db", vfs), *r = open_db("read.db", vfs);
    CHECK(w != NULL && r != NULL);
    CHECK_EQ(sqlite3_exec(w, "CREATE TABLE t (k INTEGER PRIMARY KEY, v TEXT)", NULL, NULL, NULL),
             SQLITE_OK);
    int seen = 0;
    for (int i = 1; i <= 300; i++) {
        char sql[128];
        snprintf(sql, sizeof sql, "INSERT INTO t VALUES (%d, printf('%%0500d', %d))", i, i);
        if (sqlite3_exec(w, sql, NULL, NULL, NULL) != SQLITE_OK) {
            break;
        }
        if (one_int(r, "SELECT count(*) FROM t") == i &&
            one_int(r, "SELECT CAST(v AS INTEGER) FROM t ORDER BY k DESC LIMIT 1") == i) {
            seen++;
        }
    }
    CHECK_EQ(seen, 300);
    CHECK(integrity_ok(r));
    sqlite3_close(r);
    sqlite3_close(w);
}

static void test_walbuf_transaction_larger_than_buffer_and_cache(void)
{
    sqlite3 *w = open_db("big.db", vfs), *r = open_db("big.db", vfs);
    CHECK(w != NULL && r != NULL);
    /* 12 MB in one transaction with a 20-page cache: SQLite spills pages to the WAL before the
     * commit and reads them back, and the run outgrows the 4 MiB buffer. */
    CHECK_EQ(sqlite3_exec(w,
                          "PRAGMA cache_size=20; CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB);"
                          " BEGIN; WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n"
                          " WHERE i < 3000) INSERT INTO t SELECT i, printf('%04000d', i) FROM n",
                          NULL, NULL, NULL),
             SQLITE_OK);
    CHECK_EQ(one_int(w, "SELECT sum(CAST(v AS INTEGER)) FROM t"), 3000LL * 3001 / 2);
    CHECK_EQ(one_int(r, "SELECT count(*) FROM t"), 0);
    CHECK_EQ(sqlite3_exec(w, "COMMIT", NULL, NULL, NULL), SQLITE_OK);
    CHECK_EQ(one_int(r, "SELECT sum(CAST(v AS INTEGER)) FROM t"), 3000LL * 3001 / 2);
    CHECK(integrity_ok(r));
    sqlite3_close(r);
    sqlite3_close(w);
}

static void test_walbuf_killed_mid_transaction_keeps_the_commits(void)
{
    pid_t pid = fork();
    if (pid == 0) {
        sqlite3 *w = open_db("kill.db", vfs);
        if (w == NULL || sqlite3_exec(w, "CREATE TABLE t (k INTEGER PRIMARY KEY, v BLOB)", NULL,
                                      NULL, NULL) != SQLITE_OK) {
            _exit(1);
        }
        for (int i = 1; i <= 50; i++) {
            char sql[96];
            snprintf(sql, sizeof sql, "INSERT INTO t VALUES (%d, randomblob(2000))", i);
            if (sqlite3_exec(w, sql, NULL, NULL, NULL) != SQLITE_OK) {
                _exit(1);
            }
        }
        /* Frames of an open transaction sit in the buffer (and a spill put some on disk). */
        sqlite3_exec(w,
                     "PRAGMA cache_size=10; BEGIN; WITH RECURSIVE n(i) AS (SELECT 51 UNION ALL"
                     " SELECT i + 1 FROM n WHERE i < 400) INSERT INTO t SELECT i, randomblob(2000)"
                     " FROM n",
                     NULL, NULL, NULL);
        raise(SIGKILL);
    }
    int status = 0;
    CHECK(pid > 0 && waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
    sqlite3 *db = open_db("kill.db", NULL); /* the default VFS reads what the buffer wrote */
    CHECK(db != NULL);
    CHECK_EQ(one_int(db, "SELECT count(*) FROM t"), 50);
    CHECK_EQ(one_int(db, "SELECT max(k) FROM t"), 50);
    CHECK(integrity_ok(db));
    sqlite3_close(db);
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(dir, sizeof dir, "%s/roost-walbuf-XXXXXX", t != NULL && t[0] != '\0' ? t : "/tmp");
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    vfs = store_sqlite_walbuf_register();
    CHECK(vfs != NULL);
    static const char *const modes[] = {"FULL", "NORMAL"};
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        sync_mode = modes[m];
        printf("synchronous=%s\n", sync_mode);
        RUN(test_walbuf_commit_is_one_write);
        RUN(test_walbuf_reader_sees_every_commit);
        RUN(test_walbuf_transaction_larger_than_buffer_and_cache);
        RUN(test_walbuf_killed_mid_transaction_keeps_the_commits);
    }
    char cmd[320];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", dir);
    }
    return check_summary();
}
