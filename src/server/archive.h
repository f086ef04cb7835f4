/* SPDX-License-Identifier: MIT */
/* The retention archive writer: DATA_DIR/archive/<tenant>/<YYYY-MM-DD>.ndjson.gz (day of the
 * event's creation), one gzip member appended per batch and fsynced before the deleting
 * transaction commits. Runs on the writer thread that runs the retention job. */
#ifndef ROOST_SERVER_ARCHIVE_H
#define ROOST_SERVER_ARCHIVE_H

#include <stdbool.h>
#include <stddef.h>
#include <zlib.h>

#include "store/store.h"

/* One open archive file during a retention batch. */
struct archive_file {
    char tenant_id[STORE_ID_MAX + 1];
    char day[11];
    int fd;
    gzFile gz;
};

struct archive_batch {
    const char *data_dir;
    struct archive_file files[16];
    size_t n;
    bool failed;
};

/* The store's retention archive callback (store_retention_req.archive, ctx = the batch): appends
 * one event as an NDJSON line. 0, or -1 (the batch is marked failed). */
int archive_row(void *ctx, const char *tenant_id, const struct store_event *ev);

/* Closes every file of the batch; durable (fsynced) before the delete may commit. 0, or -1 when
 * a row or a file failed: the deletion must then roll back. */
int archive_finish(struct archive_batch *b);

#endif
