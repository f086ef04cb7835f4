/* SPDX-License-Identifier: MIT */
/* null_durable: answers of the null server held until a durable write covers them, the
 * "ideal durable server" of doc/BENCHMARKS.md. Every answer's own bytes (the least a durable
 * server could write: no statements, no pages, no index) go into a group write; the answers are
 * sent once the write is durable. Three shapes:
 *
 *   inline  FILE  the loop thread itself writes and fdatasyncs FILE after each pass over the
 *                 ready sockets: group commit with no thread hand-off at all
 *   thread  FILE  a syncer thread writes and fdatasyncs while the loop goes on (roostd's shape:
 *                 the loop hands a group over and is told when it is durable)
 *   mysql   URL   N syncer threads, each with its own connection, INSERT a group's bytes as one
 *                 row, autocommit (innodb_flush_log_at_trx_commit=1 makes it one redo fsync)
 *
 * Not in the product: a measuring tool for the bound a store-less server reaches in front of the
 * same HTTP code and disk. */
#ifndef ROOST_BENCH_NULL_DURABLE_H
#define ROOST_BENCH_NULL_DURABLE_H

#include <event2/event.h>
#include <event2/http.h>
#include <stdbool.h>
#include <stddef.h>

/* Parses "inline:FILE", "thread:FILE" or "mysql:URL", sets up the file or the connections and
 * starts the syncers (syncers > 1 only for mysql). The thread shapes need evthread_use_pthreads()
 * before `base` was made. Returns 0, or -1 with a message in err. */
int null_durable_start(struct event_base *base, const char *spec, int syncers, char *err,
                       size_t errlen);

/* Takes the answer over when durability is on (sends it later, frees buf) and returns true;
 * false when it is off, and the caller sends the answer itself. Loop thread only. */
bool null_durable_hold(struct evhttp_request *req, int status, struct evbuffer *buf);

/* "N answers in M durable writes" on stderr, when on. */
void null_durable_report(void);

#endif
