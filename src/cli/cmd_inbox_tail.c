/* SPDX-License-Identifier: MIT */
/* `roost inbox tail`: follows an agent's inbox from its head or a cursor — pull, then wait for the
 * SSE wake-up ping (or, while the stream is down, long-poll reads) and pull again — printing every
 * event once, in order, as NDJSON. Read-only. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "common/timeutil.h"

#include "common/banned.h"

struct tail {
    struct roost_client *reader;
    const char *agent;
    int64_t cursor;
    int rc; /* a fatal error seen while pulling */
};

/* Reads and prints everything after the cursor. wait_s > 0 long-polls the first read. */
static int pull(struct tail *t, int wait_s)
{
    for (int pages = 0; pages < 1000; pages++) {
        struct roost_events *evs = NULL;
        int rc = roost_inbox_read(t->reader, t->agent, t->cursor, 1000, wait_s, &evs);
        wait_s = 0;
        if (rc == ROOST_EGONE) {
            int64_t cur = 0;
            char *state = NULL;
            rc = roost_state_get(t->reader, t->agent, &state, &cur);
            roost_free(state);
            if (rc != ROOST_OK) {
                return rc;
            }
            fprintf(stderr,
                    "roost: inbox tail: cursor %lld expired (410): continuing at the state's "
                    "cursor %lld\n",
                    (long long)t->cursor, (long long)cur);
            t->cursor = cur;
            continue;
        }
        if (rc != ROOST_OK) {
            roost_events_free(evs);
            return rc;
        }
        int r = cli_print_ndjson(evs);
        t->cursor = evs->next_cursor;
        bool more = evs->has_more;
        roost_events_free(evs);
        if (r != CLI_EXIT_OK) {
            return ROOST_EIO;
        }
        if (!more) {
            break;
        }
    }
    return ROOST_OK;
}

static bool fatal(int rc)
{
    return rc == ROOST_EUNAUTHENTICATED || rc == ROOST_EFORBIDDEN || rc == ROOST_EAGENTID ||
           rc == ROOST_EIO || rc == ROOST_ECURSOR || rc == ROOST_ENOMEM;
}

static int on_ping(const char *event, int64_t hint, void *ctx)
{
    struct tail *t = ctx;
    (void)event;
    if (hint >= 0 && hint <= t->cursor) {
        return 0; /* nothing new for a reader (a release or a heartbeat) */
    }
    int rc = pull(t, 0);
    if (fatal(rc)) {
        t->rc = rc;
        return 1;
    }
    return 0;
}

int cmd_inbox_tail(struct cli_args *a)
{
    /* Like `tail -f`: from the head, unless a cursor is asked for (--from 0: all still kept). */
    struct tail t = {.agent = cli_str(a, "agent"), .cursor = cli_num(a, "from", 0)};
    bool from_head = !cli_given(a, "from");
    int r;
    struct roost_client *stream = NULL;
    if ((r = cli_connect(a, &t.reader)) != CLI_EXIT_OK) {
        return r;
    }
    if ((r = cli_connect(a, &stream)) != CLI_EXIT_OK) {
        roost_client_free(t.reader);
        return r;
    }
    int rc = ROOST_OK;
    if (from_head) {
        struct roost_events *evs = NULL;
        rc = roost_inbox_read(t.reader, t.agent, 0, 1, 0, &evs);
        if (rc == ROOST_OK && evs->head >= 0) {
            t.cursor = evs->head;
        }
        roost_events_free(evs);
        if (rc == ROOST_EGONE) {
            char *state = NULL;
            rc = roost_state_get(t.reader, t.agent, &state, &t.cursor);
            roost_free(state);
        }
    }
    int64_t backoff_ms = 1000;
    while (rc == ROOST_OK || !fatal(rc)) {
        /* Pull first, then stream: the stream's first event carries the head, so nothing
         * published in between is missed. */
        rc = pull(&t, 0);
        if (fatal(rc)) {
            break;
        }
        rc = roost_subscribe(stream, t.agent, on_ping, &t);
        if (t.rc != ROOST_OK) {
            rc = t.rc;
            break;
        }
        if (fatal(rc)) {
            cli_fail(a, stream, rc, "inbox tail (subscribe)");
            roost_client_free(stream);
            roost_client_free(t.reader);
            return cli_exit_code(rc, true);
        }
        /* Stream down: long-poll reads until it is time to try the stream again. */
        int64_t until = time_mono_ms() + backoff_ms;
        do {
            rc = pull(&t, 25 < backoff_ms / 1000 ? 25 : (int)(backoff_ms / 1000) + 1);
            if (rc == ROOST_ECONNECT) {
                time_sleep_ms(backoff_ms < 5000 ? backoff_ms : 5000);
            }
        } while (!fatal(rc) && time_mono_ms() < until);
        backoff_ms = backoff_ms * 2 < 30000 ? backoff_ms * 2 : 30000;
    }
    r = cli_fail(a, t.reader, rc, "inbox tail");
    roost_client_free(stream);
    roost_client_free(t.reader);
    return r;
}
