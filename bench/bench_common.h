/* SPDX-License-Identifier: MIT */
/* Shared by the benchmark programs: monotonic clock, a log-linear latency histogram (about 1.5 %
 * resolution, mergeable across threads), the ~100-byte benchmark payload and the key=value result
 * line every tool prints. */
#ifndef ROOST_BENCH_COMMON_H
#define ROOST_BENCH_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Nanoseconds on CLOCK_MONOTONIC: comparable across the threads of one process. */
int64_t bench_now_ns(void);
/* Sleeps until `deadline_ns` (bench_now_ns() clock). */
void bench_sleep_until(int64_t deadline_ns);
/* Sleeps through the warm-up and the measurement window [start_ns, end_ns). When the environment
 * names a file in BENCH_WINDOW_FILE, appends "begin" to it as the window opens and "end" as it
 * closes, so a script can sample server counters (SHOW GLOBAL STATUS, /metrics) over the very
 * window the tool counts cycles in. */
void bench_window_sleep(int64_t start_ns, int64_t end_ns);

/* Values 0…127 are exact, larger ones keep 7 significant bits: 64 buckets per power of two. */
#define HIST_BUCKETS (64 * 64)
struct hist {
    uint64_t n;
    int64_t max;
    uint64_t counts[HIST_BUCKETS];
};

void hist_add(struct hist *h, int64_t v);
void hist_merge(struct hist *into, const struct hist *from);
/* The value at quantile q (0…1), or 0 when the histogram is empty. */
int64_t hist_quantile(const struct hist *h, double q);

/* Writes the payload object {"t":<t_ns>,"p":"xx…"} padded to `size` bytes (at least its minimum
 * length) into out. Returns its length or -1 when out is too small. */
int bench_payload(char *out, size_t cap, int64_t t_ns, size_t size);
/* Finds "t":<digits> in a payload text (as written by bench_payload). Returns 0 or -1. */
int bench_payload_time(const char *text, size_t len, int64_t *t_ns);

/* Parses a non-negative number option; exits with a message on bad input. */
double bench_parse_num(const char *opt, const char *s, double min, double max);

/* The measurement of one run: what the threads counted inside the measurement window. */
struct bench_result {
    uint64_t published;      /* publishes answered with success inside the window */
    uint64_t acked;          /* acks answered with success inside the window: full cycles */
    uint64_t claims;         /* claim calls that returned at least one event, inside the window */
    uint64_t errors;         /* unexpected answers over the whole run, warm-up included */
    struct hist latency;     /* publish start → ack success, per acked event */
    struct hist publish_rtt; /* one publish call */
    struct hist ack_rtt;     /* one ack call (or one batch ack) */
};

void bench_result_merge(struct bench_result *into, const struct bench_result *from);

/* Prints the machine-readable result line:
 *   RESULT tool=… target=… <extra> producers=P consumers=C … cycles_per_s=… lat_p99_ms=…
 * `extra` (may be NULL) is inserted verbatim after target. */
void bench_print_result(const char *tool, const char *target, const char *extra, int producers,
                        int consumers, int agents, bool batch_ack, double rate, double warmup_s,
                        double seconds, const struct bench_result *r);

#endif
