/* SPDX-License-Identifier: MIT */
/* Unit tests of src/common/fsutil.c on a private temp dir: mkdir -p over existing and missing
 * parents, a file in the way, reads at and past the cap, and atomic replacement. */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "harness/check.h"

#include "common/banned.h"

static char g_dir[512];

static const char *path_in(char *buf, size_t cap, const char *rel)
{
    snprintf(buf, cap, "%s/%s", g_dir, rel);
    return buf;
}

static bool is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static void test_fsutil_mkdir_p_creates_missing_parents(void)
{
    char p[PATH_MAX], q[PATH_MAX];
    CHECK(fsutil_mkdir_p(path_in(p, sizeof p, "a/b//c/"), 0700) == 0);
    CHECK(is_dir(path_in(q, sizeof q, "a/b/c")));
    struct stat st;
    CHECK(stat(q, &st) == 0 && (st.st_mode & 0777) == 0700);
    /* Again: everything exists, which is fine. */
    CHECK(fsutil_mkdir_p(p, 0700) == 0);
    CHECK(fsutil_mkdir_p(g_dir, 0700) == 0);
}

static void test_fsutil_mkdir_p_refuses_a_file_in_the_way(void)
{
    char f[PATH_MAX], p[PATH_MAX];
    CHECK(fsutil_write_atomic(path_in(f, sizeof f, "file"), "x", 1, 0600) == 0);
    errno = 0;
    CHECK(fsutil_mkdir_p(path_in(p, sizeof p, "file/sub"), 0700) == -1 && errno == ENOTDIR);
    errno = 0;
    CHECK(fsutil_mkdir_p(f, 0700) == -1 && errno == ENOTDIR);
    errno = 0;
    CHECK(fsutil_mkdir_p("", 0700) == -1 && errno == ENOENT);
    static char huge[PATH_MAX + 10];
    memset(huge, 'a', sizeof huge - 1);
    errno = 0;
    CHECK(fsutil_mkdir_p(huge, 0700) == -1 && errno == ENAMETOOLONG);
}

static void test_fsutil_read_bounded_reads_up_to_the_cap_only(void)
{
    char f[PATH_MAX];
    path_in(f, sizeof f, "ten");
    CHECK(fsutil_write_atomic(f, "0123456789", 10, 0600) == 0);
    char *buf = NULL;
    size_t n = 0;
    CHECK(fsutil_read_bounded(f, 10, &buf, &n) == 0 && n == 10);
    CHECK_STREQ(buf, "0123456789");
    free(buf);
    buf = (char *)"poison";
    errno = 0;
    CHECK(fsutil_read_bounded(f, 9, &buf, &n) == -1 && errno == EFBIG && buf == NULL);
    errno = 0;
    CHECK(fsutil_read_bounded(path_in(f, sizeof f, "missing"), 10, &buf, NULL) == -1 &&
          errno == ENOENT && buf == NULL);
    /* An empty file is an empty string, not NULL. */
    CHECK(fsutil_write_atomic(path_in(f, sizeof f, "empty"), "", 0, 0600) == 0);
    CHECK(fsutil_read_bounded(f, 0, &buf, &n) == 0 && buf != NULL && n == 0 && buf[0] == '\0');
    free(buf);
}

static void test_fsutil_write_atomic_replaces_and_leaves_no_temp(void)
{
    char f[PATH_MAX], tmp[PATH_MAX + 32];
    path_in(f, sizeof f, "state");
    CHECK(fsutil_write_atomic(f, "old", 3, 0640) == 0);
    CHECK(fsutil_write_atomic(f, "new contents", 12, 0640) == 0);
    char *buf = NULL;
    CHECK(fsutil_read_bounded(f, 100, &buf, NULL) == 0);
    CHECK_STREQ(buf, "new contents");
    free(buf);
    struct stat st;
    CHECK(stat(f, &st) == 0 && (st.st_mode & 0777) == 0640);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", f, (long)getpid());
    CHECK(access(tmp, F_OK) != 0);
    /* A directory that does not exist: the error, and no stray temporary file. */
    errno = 0;
    CHECK(fsutil_write_atomic(path_in(f, sizeof f, "nodir/x"), "x", 1, 0600) == -1 &&
          errno == ENOENT);
}

int main(void)
{
    const char *t = getenv("TMPDIR");
    snprintf(g_dir, sizeof g_dir, "%s/roost-fsutil-XXXXXX", t != NULL && t[0] != '\0' ? t : "/tmp");
    if (mkdtemp(g_dir) == NULL) {
        perror("mkdtemp");
        return 2;
    }
    umask(022);
    RUN(test_fsutil_mkdir_p_creates_missing_parents);
    RUN(test_fsutil_mkdir_p_refuses_a_file_in_the_way);
    RUN(test_fsutil_read_bounded_reads_up_to_the_cap_only);
    RUN(test_fsutil_write_atomic_replaces_and_leaves_no_temp);
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_dir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", g_dir);
    }
    return check_summary();
}
