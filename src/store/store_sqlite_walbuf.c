/* SPDX-License-Identifier: MIT */
/* A VFS over SQLite's default one that writes a transaction's WAL frames with one system call.
 *
 * SQLite appends each WAL frame as two writes, its 24-byte header and then the page, and as a
 * 4 KiB page then starts 24 bytes into an OS page, each frame also costs the kernel three
 * page-cache updates instead of one. Here the writes to a WAL file are gathered in memory while
 * they arrive in order, and written out as one run once the commit frame (the frame whose header
 * carries the database size) is complete, or earlier, before anything else looks at or changes
 * the file: a sync, a read, a size query, a truncation, a lock change, a file control, a close, or
 * a write elsewhere. SQLite writes a transaction's commit frame last and names the new frames in
 * the wal-index only after that write has returned (wal.c, sqlite3WalFrames; under FULL after
 * the sync that follows it), so the run is in the file, in order, before any other connection can
 * be told about its frames, whatever the synchronous setting; a failed write of the run fails the
 * commit frame's write, and SQLite rolls the transaction back as it would have. Frames spilled
 * before the commit wait in memory until then (SQLite's own reads of them flush first). Measured
 * in doc/BENCHMARKS.md, "WAL frames in one write" and "Big publishes on SQLite". */
#include "store/store_sqlite_int.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define WALBUF_VFS "roost-walbuf"
#define WALBUF_MAX (4 << 20) /* a larger transaction writes through in runs of this size */
/* WAL frame headers are 24 bytes; bytes 4-7 hold the database size in pages after the commit in
 * a commit frame, 0 in every other frame. */
#define WAL_FRAME_HDR 24

/* The unix VFS writes less than 128 KiB per call (os_unix.c, seekAndWriteFd masks the length to
 * 17 bits): a run goes out in pieces of this size. */
#define XWRITE_MAX (124 * 1024)

struct walbuf_file {
    sqlite3_file base;
    sqlite3_file *real; /* the default VFS's file, in the bytes after this struct */
    bool gather;        /* a WAL file */
    bool commit_frame;  /* the last write was a commit frame's header: its page ends the run */
    unsigned char *buf;
    size_t len, cap;
    sqlite3_int64 off; /* file offset of buf[0] */
};

static sqlite3_vfs *real_vfs;

static int flush(struct walbuf_file *f)
{
    int rc = SQLITE_OK;
    for (size_t done = 0, n; done < f->len && rc == SQLITE_OK; done += n) {
        n = f->len - done < XWRITE_MAX ? f->len - done : XWRITE_MAX;
        rc =
            f->real->pMethods->xWrite(f->real, f->buf + done, (int)n, f->off + (sqlite3_int64)done);
    }
    f->len = 0;
    return rc;
}

/* Makes room for `need` bytes, up to WALBUF_MAX. */
static bool reserve(struct walbuf_file *f, size_t need)
{
    if (need <= f->cap) {
        return true;
    }
    size_t cap = f->cap > 0 ? f->cap : 64 * 1024;
    while (cap < need) {
        cap *= 2;
    }
    unsigned char *buf = cap <= WALBUF_MAX ? realloc(f->buf, cap) : NULL;
    if (buf == NULL) {
        return false;
    }
    f->buf = buf;
    f->cap = cap;
    return true;
}

static int wb_write(sqlite3_file *file, const void *data, int n, sqlite3_int64 off)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    int rc;
    bool ends_run = f->commit_frame;
    f->commit_frame = false;
    if (f->len > 0 && (off != f->off + (sqlite3_int64)f->len || !reserve(f, f->len + (size_t)n))) {
        if ((rc = flush(f)) != SQLITE_OK) {
            return rc;
        }
    }
    if (!f->gather || !reserve(f, (size_t)n)) {
        return f->real->pMethods->xWrite(f->real, data, n, off);
    }
    if (f->len == 0) {
        f->off = off;
    }
    memcpy(f->buf + f->len, data, (size_t)n);
    f->len += (size_t)n;
    if (ends_run) {
        return flush(f);
    }
    const unsigned char *h = data;
    f->commit_frame = n == WAL_FRAME_HDR && (h[4] | h[5] | h[6] | h[7]) != 0;
    return SQLITE_OK;
}

/* Every other method first writes out what is gathered. */
#define FLUSHED(f, call)                                                                           \
    do {                                                                                           \
        int rc_ = flush(f);                                                                        \
        return rc_ != SQLITE_OK ? rc_ : (call);                                                    \
    } while (0)

static int wb_close(sqlite3_file *file)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    int rc = flush(f);
    int rc2 = f->real->pMethods != NULL ? f->real->pMethods->xClose(f->real) : SQLITE_OK;
    free(f->buf);
    f->buf = NULL;
    return rc != SQLITE_OK ? rc : rc2;
}

static int wb_read(sqlite3_file *file, void *data, int n, sqlite3_int64 off)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    FLUSHED(f, f->real->pMethods->xRead(f->real, data, n, off));
}

static int wb_truncate(sqlite3_file *file, sqlite3_int64 size)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    FLUSHED(f, f->real->pMethods->xTruncate(f->real, size));
}

static int wb_sync(sqlite3_file *file, int flags)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    FLUSHED(f, f->real->pMethods->xSync(f->real, flags));
}

static int wb_file_size(sqlite3_file *file, sqlite3_int64 *size)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    FLUSHED(f, f->real->pMethods->xFileSize(f->real, size));
}

static int wb_lock(sqlite3_file *file, int lock)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    FLUSHED(f, f->real->pMethods->xLock(f->real, lock));
}

static int wb_unlock(sqlite3_file *file, int lock)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    FLUSHED(f, f->real->pMethods->xUnlock(f->real, lock));
}

static int wb_check_reserved(sqlite3_file *file, int *out)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    return f->real->pMethods->xCheckReservedLock(f->real, out);
}

static int wb_file_control(sqlite3_file *file, int op, void *arg)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    FLUSHED(f, f->real->pMethods->xFileControl(f->real, op, arg));
}

static int wb_sector_size(sqlite3_file *file)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    return f->real->pMethods->xSectorSize(f->real);
}

static int wb_device_characteristics(sqlite3_file *file)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    return f->real->pMethods->xDeviceCharacteristics(f->real);
}

static int wb_shm_map(sqlite3_file *file, int region, int size, int extend, void volatile **out)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    return f->real->pMethods->xShmMap(f->real, region, size, extend, out);
}

static int wb_shm_lock(sqlite3_file *file, int offset, int n, int flags)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    return f->real->pMethods->xShmLock(f->real, offset, n, flags);
}

static void wb_shm_barrier(sqlite3_file *file)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    f->real->pMethods->xShmBarrier(f->real);
}

static int wb_shm_unmap(sqlite3_file *file, int del)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    return f->real->pMethods->xShmUnmap(f->real, del);
}

static int wb_fetch(sqlite3_file *file, sqlite3_int64 off, int n, void **out)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    FLUSHED(f, f->real->pMethods->xFetch(f->real, off, n, out));
}

static int wb_unfetch(sqlite3_file *file, sqlite3_int64 off, void *p)
{
    struct walbuf_file *f = (struct walbuf_file *)file;
    return f->real->pMethods->xUnfetch(f->real, off, p);
}

static const sqlite3_io_methods walbuf_methods = {
    .iVersion = 3,
    .xClose = wb_close,
    .xRead = wb_read,
    .xWrite = wb_write,
    .xTruncate = wb_truncate,
    .xSync = wb_sync,
    .xFileSize = wb_file_size,
    .xLock = wb_lock,
    .xUnlock = wb_unlock,
    .xCheckReservedLock = wb_check_reserved,
    .xFileControl = wb_file_control,
    .xSectorSize = wb_sector_size,
    .xDeviceCharacteristics = wb_device_characteristics,
    .xShmMap = wb_shm_map,
    .xShmLock = wb_shm_lock,
    .xShmBarrier = wb_shm_barrier,
    .xShmUnmap = wb_shm_unmap,
    .xFetch = wb_fetch,
    .xUnfetch = wb_unfetch,
};

static int wb_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *file, int flags,
                   int *out_flags)
{
    (void)vfs;
    struct walbuf_file *f = (struct walbuf_file *)file;
    memset(f, 0, sizeof *f);
    f->real = (sqlite3_file *)(f + 1);
    int rc = real_vfs->xOpen(real_vfs, name, f->real, flags, out_flags);
    if (f->real->pMethods == NULL) {
        return rc; /* nothing opened: SQLite will not call xClose */
    }
    /* Without powersafe overwrite SQLite pads a commit to a sector boundary and writes the
     * padding's tail after the sync (wal.c); that tail must not wait in memory. */
    f->gather =
        (flags & SQLITE_OPEN_WAL) != 0 && (f->real->pMethods->xDeviceCharacteristics(f->real) &
                                           SQLITE_IOCAP_POWERSAFE_OVERWRITE) != 0;
    f->base.pMethods = &walbuf_methods;
    return rc;
}

/* The rest of the VFS is the default one's. */
static int wb_delete(sqlite3_vfs *v, const char *name, int sync_dir)
{
    (void)v;
    return real_vfs->xDelete(real_vfs, name, sync_dir);
}
static int wb_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
    (void)v;
    return real_vfs->xAccess(real_vfs, name, flags, out);
}
static int wb_full_pathname(sqlite3_vfs *v, const char *name, int n, char *out)
{
    (void)v;
    return real_vfs->xFullPathname(real_vfs, name, n, out);
}
static void *wb_dl_open(sqlite3_vfs *v, const char *name)
{
    (void)v;
    return real_vfs->xDlOpen(real_vfs, name);
}
static void wb_dl_error(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    real_vfs->xDlError(real_vfs, n, out);
}
static void (*wb_dl_sym(sqlite3_vfs *v, void *h, const char *sym))(void)
{
    (void)v;
    return real_vfs->xDlSym(real_vfs, h, sym);
}
static void wb_dl_close(sqlite3_vfs *v, void *h)
{
    (void)v;
    real_vfs->xDlClose(real_vfs, h);
}
static int wb_randomness(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return real_vfs->xRandomness(real_vfs, n, out);
}
static int wb_sleep(sqlite3_vfs *v, int us)
{
    (void)v;
    return real_vfs->xSleep(real_vfs, us);
}
static int wb_current_time(sqlite3_vfs *v, double *out)
{
    (void)v;
    return real_vfs->xCurrentTime(real_vfs, out);
}
static int wb_last_error(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return real_vfs->xGetLastError(real_vfs, n, out);
}
static int wb_current_time_int64(sqlite3_vfs *v, sqlite3_int64 *out)
{
    (void)v;
    return real_vfs->xCurrentTimeInt64(real_vfs, out);
}

static sqlite3_vfs walbuf_vfs = {
    .iVersion = 2,
    .zName = WALBUF_VFS,
    .xOpen = wb_open,
    .xDelete = wb_delete,
    .xAccess = wb_access,
    .xFullPathname = wb_full_pathname,
    .xDlOpen = wb_dl_open,
    .xDlError = wb_dl_error,
    .xDlSym = wb_dl_sym,
    .xDlClose = wb_dl_close,
    .xRandomness = wb_randomness,
    .xSleep = wb_sleep,
    .xCurrentTime = wb_current_time,
    .xGetLastError = wb_last_error,
    .xCurrentTimeInt64 = wb_current_time_int64,
};

const char *store_sqlite_walbuf_register(void)
{
    real_vfs = sqlite3_vfs_find(NULL);
    if (real_vfs == NULL || real_vfs->iVersion < 2) {
        return NULL;
    }
    walbuf_vfs.szOsFile = (int)sizeof(struct walbuf_file) + real_vfs->szOsFile;
    walbuf_vfs.mxPathname = real_vfs->mxPathname;
    return sqlite3_vfs_register(&walbuf_vfs, 0) == SQLITE_OK ? WALBUF_VFS : NULL;
}
