/* SPDX-License-Identifier: MIT */
/* Timed work on the loop: the scavenger tick (due delayed events → pending, expired leases →
 * pending or quarantine, expired messages, expired nonces) and retention (archive + delete +
 * watermark), each a write job; and, on backends with a change log (MySQL), the tailer, a read job
 * that pings for commits made by other nodes and applications. At most one of each is in flight;
 * a full batch re-arms at once. */
#ifndef ROOST_SCHEDULER_H
#define ROOST_SCHEDULER_H

struct runtime;
struct scheduler;
struct workers;

/* One scheduler per store (shard): its jobs run on that store's workers. */
struct scheduler *scheduler_start(struct runtime *rt, struct workers *workers);
/* Stops arming timers; a job in flight still completes (it is held in rt's in-flight count). */
void scheduler_stop(struct scheduler *s);
void scheduler_free(struct scheduler *s);

#endif
