/* SPDX-License-Identifier: MIT */
/* Files and directories: mkdir -p, reading a whole file under a size cap, and replacing a file
 * atomically. POSIX style: 0, or -1 with errno set, so that callers word their own messages. */
#ifndef ROOST_FSUTIL_H
#define ROOST_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

/* Creates the directory `path` and its missing parents with `mode`; directories that exist
 * already are fine. 0, or -1 with errno (ENAMETOOLONG for a path of PATH_MAX bytes or more,
 * ENOTDIR when a component is a file, or mkdir's own). */
int fsutil_mkdir_p(const char *path, mode_t mode);

/* Reads the whole file at `path` when it holds at most max_bytes: more is an error (EFBIG), never
 * a silent truncation. *out (the caller frees it) is NUL-terminated; *out_len (may be NULL)
 * excludes the NUL. 0, or -1 with errno (fopen's, EIO, EFBIG, ENOMEM) and *out NULL. */
int fsutil_read_bounded(const char *path, size_t max_bytes, char **out, size_t *out_len);

/* Replaces `path` with data[0..len) so that a reader sees the old file or the new one, never a
 * part: writes "path.tmp.PID" with `mode`, fsyncs it and renames it over `path`. 0, or -1 with
 * errno (the temporary file is removed). */
int fsutil_write_atomic(const char *path, const void *data, size_t len, mode_t mode);

#endif
