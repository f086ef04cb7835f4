/* SPDX-License-Identifier: MIT */
/* The physical bound of a durable writer on one disk (doc/BENCHMARKS.md, "The fsync bound"): how
 * long one durable commit takes in the directory under test, measured two ways, one after the
 * other, single-threaded: a 4 KiB write plus fdatasync of a preallocated file (the WAL once it
 * wraps), and a one-row SQLite transaction in WAL mode with synchronous=FULL (what roostd's writer
 * pays per group commit, less its statements). Prints one RESULT line: per second, p50 and p99 of
 * each (fdatasync_*, commit_*). */
#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/banned.h"

#define MAX_SAMPLES 1000000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The keys of the one RESULT line, filled by each probe. */
static char result[512];

static void report(const char *what, double *lat, size_t n, double seconds)
{
    qsort(lat, n, sizeof *lat, cmp_double);
    size_t len = strlen(result);
    snprintf(result + len, sizeof result - len, " %s_per_s=%.0f %s_p50_us=%.0f %s_p99_us=%.0f",
             what, (double)n / seconds, what, n ? lat[n / 2] * 1e6 : 0.0, what,
             n ? lat[n * 99 / 100] * 1e6 : 0.0);
}

static int probe_fdatasync(const char *dir, double seconds, double *lat)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/fsync_probe.dat", dir);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) {
        fprintf(stderr, "fsync_probe: %s: %s\n", path, strerror(errno));
        return -1;
    }
    static char page[4096];
    const size_t span = 1 << 20;
    memset(page, 'x', sizeof page);
    for (size_t off = 0; off < span; off += sizeof page) {
        if (pwrite(fd, page, sizeof page, (off_t)off) != (ssize_t)sizeof page) {
            break;
        }
    }
    fsync(fd);
    size_t n = 0, off = 0;
    double end = now_s() + seconds;
    while (n < MAX_SAMPLES && now_s() < end) {
        if (pwrite(fd, page, sizeof page, (off_t)off) != (ssize_t)sizeof page) {
            break;
        }
        off = (off + sizeof page) % span;
        double t = now_s();
        if (fdatasync(fd) != 0) {
            break;
        }
        lat[n++] = now_s() - t;
    }
    close(fd);
    unlink(path);
    report("fdatasync", lat, n, seconds);
    return 0;
}

static int probe_sqlite(const char *dir, double seconds, double *lat)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/fsync_probe.db", dir);
    sqlite3 *db = NULL;
    sqlite3_stmt *ins = NULL;
    int rc = sqlite3_open(path, &db);
    if (rc == SQLITE_OK) {
        rc = sqlite3_exec(db,
                          "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL;"
                          " CREATE TABLE IF NOT EXISTS t (id INTEGER PRIMARY KEY, p TEXT);",
                          NULL, NULL, NULL);
    }
    if (rc == SQLITE_OK) {
        rc = sqlite3_prepare_v2(db, "INSERT INTO t (p) VALUES (?1)", -1, &ins, NULL);
    }
    size_t n = 0;
    double end = now_s() + seconds;
    static const char payload[] =
        "{\"p\":\"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
        "xxxxxxxxxxxxxxxxxxxxxxxxxxxxx\"}";
    while (rc == SQLITE_OK && n < MAX_SAMPLES && now_s() < end) {
        double t = now_s();
        sqlite3_bind_text(ins, 1, payload, -1, SQLITE_STATIC);
        rc = sqlite3_step(ins) == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
        sqlite3_reset(ins);
        lat[n++] = now_s() - t;
    }
    if (rc != SQLITE_OK) {
        fprintf(stderr, "fsync_probe: sqlite: %s\n", db ? sqlite3_errmsg(db) : "cannot open");
    }
    sqlite3_finalize(ins);
    sqlite3_close(db);
    char side[4200];
    unlink(path);
    snprintf(side, sizeof side, "%s-wal", path);
    unlink(side);
    snprintf(side, sizeof side, "%s-shm", path);
    unlink(side);
    report("commit", lat, n, seconds);
    return rc == SQLITE_OK ? 0 : -1;
}

int main(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "--help") == 0) {
        fprintf(stderr, "usage: fsync_probe DIR [SECONDS]   (DIR on the disk under test)\n");
        return argc < 2 ? 2 : 0;
    }
    double seconds = argc > 2 ? strtod(argv[2], NULL) : 5.0;
    double *lat = malloc(MAX_SAMPLES * sizeof *lat);
    if (lat == NULL) {
        return 1;
    }
    int rc = probe_fdatasync(argv[1], seconds, lat);
    rc |= probe_sqlite(argv[1], seconds, lat);
    free(lat);
    printf("RESULT tool=fsync_probe seconds=%.1f%s\n", seconds, result);
    return rc == 0 ? 0 : 1;
}
