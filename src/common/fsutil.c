/* SPDX-License-Identifier: MIT */
/* Files and directories (see fsutil.h). */
#include "common/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/banned.h"

/* mkdir that accepts an existing directory. Some systems answer EACCES or EROFS rather than
 * EEXIST for a directory that exists where the caller may not create one: that is fine too. */
static int mkdir_one(const char *path, mode_t mode)
{
    if (mkdir(path, mode) == 0) {
        return 0;
    }
    int saved = errno;
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode)) {
            return 0;
        }
        errno = ENOTDIR;
        return -1;
    }
    errno = saved;
    return -1;
}

int fsutil_mkdir_p(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);
    if (len == 0) {
        errno = ENOENT;
        return -1;
    }
    if (len >= sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i < len; i++) {
        if (buf[i] == '/' && buf[i - 1] != '/') {
            buf[i] = '\0';
            int rc = mkdir_one(buf, mode);
            buf[i] = '/';
            if (rc != 0) {
                return -1;
            }
        }
    }
    return mkdir_one(buf, mode);
}

int fsutil_read_bounded(const char *path, size_t max_bytes, char **out, size_t *out_len)
{
    *out = NULL;
    if (out_len != NULL) {
        *out_len = 0;
    }
    if (max_bytes > SIZE_MAX - 2) {
        errno = EINVAL;
        return -1;
    }
    FILE *fp = fopen(path, "rbe");
    if (fp == NULL) {
        return -1;
    }
    /* One byte past the cap tells a file exactly at the cap from a longer one. */
    char *b = malloc(max_bytes + 2);
    if (b == NULL) {
        fclose(fp);
        errno = ENOMEM;
        return -1;
    }
    size_t n = fread(b, 1, max_bytes + 1, fp);
    int read_error = ferror(fp);
    fclose(fp);
    if (read_error || n > max_bytes) {
        /* Callers read key files: what was read is wiped, not left in the freed heap. */
        OPENSSL_cleanse(b, n);
        free(b);
        errno = read_error ? EIO : EFBIG;
        return -1;
    }
    b[n] = '\0';
    *out = b;
    if (out_len != NULL) {
        *out_len = n;
    }
    return 0;
}

int fsutil_write_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
    char tmp[PATH_MAX];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd < 0) {
        return -1;
    }
    const char *p = data;
    size_t left = len;
    while (left > 0) {
        ssize_t w = write(fd, p, left);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            goto fail;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) != 0) {
        goto fail;
    }
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0) {
        goto fail;
    }
    return 0;
fail:;
    int saved = errno;
    if (fd >= 0) {
        close(fd);
    }
    unlink(tmp);
    errno = saved;
    return -1;
}
