/* SPDX-License-Identifier: MIT */
/* The retention archive writer (see archive.h). */
#include "server/archive.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/timeutil.h"
#include "server/api_json.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

static struct archive_file *archive_open(struct archive_batch *b, const char *tenant_id,
                                         const char *day)
{
    for (size_t i = 0; i < b->n; i++) {
        if (strcmp(b->files[i].tenant_id, tenant_id) == 0 && strcmp(b->files[i].day, day) == 0) {
            return &b->files[i];
        }
    }
    if (b->n == sizeof b->files / sizeof b->files[0]) {
        return NULL; /* the batch is cut short; the next one continues */
    }
    char dir[4096], path[4200];
    snprintf(dir, sizeof dir, "%s/archive/%s", b->data_dir, tenant_id);
    snprintf(path, sizeof path, "%s/%s.ndjson.gz", dir, day);
    if (fsutil_mkdir_p(dir, 0700) != 0) {
        return NULL;
    }
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
    if (fd < 0) {
        return NULL;
    }
    int gzfd = dup(fd);
    gzFile gz = gzfd >= 0 ? gzdopen(gzfd, "ab") : NULL;
    if (!gz) {
        if (gzfd >= 0) {
            close(gzfd);
        }
        close(fd);
        return NULL;
    }
    struct archive_file *f = &b->files[b->n++];
    snprintf(f->tenant_id, sizeof f->tenant_id, "%s", tenant_id);
    snprintf(f->day, sizeof f->day, "%s", day);
    f->fd = fd;
    f->gz = gz;
    return f;
}

int archive_row(void *ctx, const char *tenant_id, const struct store_event *ev)
{
    struct archive_batch *b = ctx;
    char day[11];
    time_format_day(ev->created_at_ms, day);
    struct archive_file *f = archive_open(b, tenant_id, day);
    if (!f) {
        b->failed = true;
        return -1;
    }
    json_t *o = event_to_json(ev, false, true);
    if (!o) {
        b->failed = true;
        return -1;
    }
    json_object_set_new(o, "tenant_id", json_string(tenant_id));
    char *line = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    int ok = line && gzputs(f->gz, line) >= 0 && gzputc(f->gz, '\n') >= 0;
    free(line);
    if (!ok) {
        b->failed = true;
        return -1;
    }
    return 0;
}

int archive_finish(struct archive_batch *b)
{
    int rc = b->failed ? -1 : 0;
    for (size_t i = 0; i < b->n; i++) {
        if (gzclose(b->files[i].gz) != Z_OK || fsync(b->files[i].fd) != 0) {
            rc = -1;
        }
        close(b->files[i].fd);
    }
    b->n = 0;
    return rc;
}
