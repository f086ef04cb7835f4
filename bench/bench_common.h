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
/* The measurement window. bench_window_plan sets it to open `warmup_s` from now and last
 * `seconds`; bench_window_run (on one thread) sleeps through it while the workers ask
 * bench_in_window about the times of their events. When the environment names a file in
 * BENCH_WINDOW_FILE, "begin" is appended to it as the window opens and "end" as it closes, so a
 * script can sample server counters (SHOW GLOBAL STATUS, /metrics) over the very window the tool
 * counts cycles in. When it also names a FIFO in BENCH_WINDOW_ACK, the tool waits after each
 * mark for one line on it (at most 300 s): the window opens only once the script has taken its
 * first sample and closes only once it has taken its second, however long a sample takes on a
 * busy machine, so both cover the same stretch of the load (the window is then longer than
 * `seconds` by the second sample's time, and the rates are over its real length). */
void bench_window_plan(double warmup_s, double seconds);
void bench_window_run(void);
/* Is time t (bench_now_ns) inside the measurement window? Thread-safe. */
bool bench_in_window(int64_t t);
/* Where the window ends as planned, or once closed, where it ended. Thread-safe. */
int64_t bench_window_end_ns(void);
/* The window's real length once bench_window_run returned, else `planned_s`. */
double bench_window_seconds(double planned_s);

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
 * `extra` (may be NULL) is inserted verbatim after target. seconds= and the rates are over the
 * window's real length (bench_window_seconds(seconds)). */
void bench_print_result(const char *tool, const char *target, const char *extra, int producers,
                        int consumers, int agents, bool batch_ack, double rate, double warmup_s,
                        double seconds, const struct bench_result *r);

#endif
