/* SPDX-License-Identifier: MIT */
/* The access log's batch and its flush timer (access_log.h). */
#include "server/access_log.h"

#include <event2/event.h>
#include <stdlib.h>

#include "common/banned.h"

struct access_log {
    struct event *flush; /* armed while lines wait */
    struct log_batch batch;
};

static void on_flush(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct access_log *al = arg;
    log_batch_flush(&al->batch);
}

struct access_log *access_log_new(struct event_base *base)
{
    struct access_log *al = calloc(1, sizeof *al);
    if (al && !(al->flush = evtimer_new(base, on_flush, al))) {
        free(al);
        al = NULL;
    }
    return al;
}

void access_log_add(struct access_log *al, enum log_level level, const char *fields, size_t len)
{
    static const struct timeval after = {.tv_usec = ACCESS_LOG_FLUSH_MS * 1000};
    if (log_batch_add(&al->batch, level, "request", fields, len) &&
        !evtimer_pending(al->flush, NULL)) {
        evtimer_add(al->flush, &after);
    }
}

void access_log_free(struct access_log *al)
{
    if (al) {
        log_batch_flush(&al->batch);
        event_free(al->flush);
        free(al);
    }
}
