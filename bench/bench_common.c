/* SPDX-License-Identifier: MIT */
#include "bench_common.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/banned.h"

int64_t bench_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void bench_sleep_until(int64_t deadline_ns)
{
    struct timespec ts = {.tv_sec = deadline_ns / 1000000000, .tv_nsec = deadline_ns % 1000000000};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

/* The window [start, end) on the bench_now_ns() clock. start stays INT64_MAX until the window
 * opens, so nothing counts while the script samples its counters. */
static _Atomic int64_t win_start_ns = INT64_MAX;
static _Atomic int64_t win_end_ns = INT64_MAX;
static int64_t plan_start_ns, plan_len_ns, win_len_ns;

/* Waits for one line on the FIFO named by BENCH_WINDOW_ACK: the script's "sampled". */
static void window_ack(const char *what)
{
    const char *path = getenv("BENCH_WINDOW_ACK");
    if (path == NULL || *path == '\0') {
        return;
    }
    /* The script holds the FIFO open read-write, so this open never blocks. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        fprintf(stderr, "bench: cannot open BENCH_WINDOW_ACK %s: %s\n", path, strerror(errno));
        return;
    }
    int64_t deadline = bench_now_ns() + (int64_t)300 * 1000000000;
    for (;;) {
        char c;
        ssize_t n = read(fd, &c, 1); /* byte by byte: the next mark's line stays in the FIFO */
        if (n == 1 && c == '\n') {
            break;
        }
        if (n == 1) {
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            fprintf(stderr, "bench: reading BENCH_WINDOW_ACK: %s\n", strerror(errno));
            break;
        }
        int64_t left_ms = (deadline - bench_now_ns()) / 1000000;
        if (left_ms <= 0) {
            fprintf(stderr, "bench: no answer to \"%s\" on BENCH_WINDOW_ACK in 300 s\n", what);
            break;
        }
        struct pollfd p = {.fd = fd, .events = POLLIN};
        (void)poll(&p, 1, left_ms > 1000 ? 1000 : (int)left_ms);
    }
    close(fd);
}

static void window_mark(const char *what)
{
    const char *path = getenv("BENCH_WINDOW_FILE");
    if (path == NULL || *path == '\0') {
        return;
    }
    FILE *f = fopen(path, "a");
    if (f == NULL) {
        fprintf(stderr, "bench: cannot open BENCH_WINDOW_FILE %s\n", path);
        return;
    }
    fprintf(f, "%s\n", what);
    fclose(f);
    window_ack(what);
}

void bench_window_plan(double warmup_s, double seconds)
{
    plan_start_ns = bench_now_ns() + (int64_t)(warmup_s * 1e9);
    plan_len_ns = (int64_t)(seconds * 1e9);
    win_len_ns = 0;
    atomic_store(&win_start_ns, INT64_MAX);
    atomic_store(&win_end_ns, plan_start_ns + plan_len_ns);
}

void bench_window_run(void)
{
    bench_sleep_until(plan_start_ns);
    window_mark("begin");
    int64_t start = bench_now_ns();
    atomic_store(&win_end_ns, start + plan_len_ns);
    atomic_store(&win_start_ns, start);
    bench_sleep_until(start + plan_len_ns);
    window_mark("end");
    int64_t end = bench_now_ns();
    atomic_store(&win_end_ns, end);
    win_len_ns = end - start;
}

bool bench_in_window(int64_t t)
{
    return t >= atomic_load_explicit(&win_start_ns, memory_order_relaxed) &&
           t < atomic_load_explicit(&win_end_ns, memory_order_relaxed);
}

int64_t bench_window_end_ns(void)
{
    return atomic_load_explicit(&win_end_ns, memory_order_relaxed);
}

double bench_window_seconds(double planned_s)
{
    return win_len_ns > 0 ? (double)win_len_ns / 1e9 : planned_s;
}

static size_t hist_index(int64_t v)
{
    if (v < 0) {
        v = 0;
    }
    uint64_t u = (uint64_t)v;
    if (u < 128) {
        return (size_t)u;
    }
    unsigned e = (unsigned)(63 - __builtin_clzll(u)) - 6; /* u >> e is in [64, 128) */
    size_t idx = (size_t)e * 64 + (size_t)(u >> e);
    return idx < HIST_BUCKETS ? idx : HIST_BUCKETS - 1;
}

static int64_t hist_value(size_t idx)
{
    if (idx < 128) {
        return (int64_t)idx;
    }
    unsigned e = (unsigned)(idx / 64) - 1;
    uint64_t m = idx - (size_t)e * 64;
    return (int64_t)((m << e) + (((uint64_t)1 << e) >> 1)); /* middle of the bucket */
}

void hist_add(struct hist *h, int64_t v)
{
    h->counts[hist_index(v)]++;
    h->n++;
    if (v > h->max) {
        h->max = v;
    }
}

void hist_merge(struct hist *into, const struct hist *from)
{
    for (size_t i = 0; i < HIST_BUCKETS; i++) {
        into->counts[i] += from->counts[i];
    }
    into->n += from->n;
    if (from->max > into->max) {
        into->max = from->max;
    }
}

int64_t hist_quantile(const struct hist *h, double q)
{
    if (h->n == 0) {
        return 0;
    }
    uint64_t rank = (uint64_t)(q * (double)h->n + 0.999999);
    if (rank < 1) {
        rank = 1;
    }
    uint64_t seen = 0;
    for (size_t i = 0; i < HIST_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen >= rank) {
            int64_t v = hist_value(i);
            return v < h->max ? v : h->max;
        }
    }
    return h->max;
}

int bench_payload(char *out, size_t cap, int64_t t_ns, size_t size)
{
    int n = snprintf(out, cap, "{\"t\":%" PRId64 ",\"p\":\"", t_ns);
    if (n < 0 || (size_t)n + 3 > cap) {
        return -1;
    }
    size_t len = (size_t)n;
    while (len + 2 < size && len + 3 < cap) {
        out[len] = (char)('a' + len % 26);
        len++;
    }
    out[len++] = '"';
    out[len++] = '}';
    out[len] = '\0';
    return (int)len;
}

int bench_payload_time(const char *text, size_t len, int64_t *t_ns)
{
    static const char key[] = "\"t\":";
    for (size_t i = 0; i + sizeof key - 1 < len; i++) {
        if (memcmp(text + i, key, sizeof key - 1) != 0) {
            continue;
        }
        size_t j = i + sizeof key - 1;
        int64_t v = 0;
        size_t digits = 0;
        while (j < len && text[j] >= '0' && text[j] <= '9' && digits < 19) {
            v = v * 10 + (text[j] - '0');
            j++;
            digits++;
        }
        if (digits == 0) {
            return -1;
        }
        *t_ns = v;
        return 0;
    }
    return -1;
}

double bench_parse_num(const char *opt, const char *s, double min, double max)
{
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\0' || v < min || v > max) {
        fprintf(stderr, "%s: expected a number in [%g, %g], got '%s'\n", opt, min, max, s);
        exit(2);
    }
    return v;
}

void bench_result_merge(struct bench_result *into, const struct bench_result *from)
{
    into->published += from->published;
    into->acked += from->acked;
    into->claims += from->claims;
    into->errors += from->errors;
    hist_merge(&into->latency, &from->latency);
    hist_merge(&into->publish_rtt, &from->publish_rtt);
    hist_merge(&into->ack_rtt, &from->ack_rtt);
}

static double ms(int64_t ns)
{
    return (double)ns / 1e6;
}

void bench_print_result(const char *tool, const char *target, const char *extra, int producers,
                        int consumers, int agents, bool batch_ack, double rate, double warmup_s,
                        double seconds, const struct bench_result *r)
{
    double secs = bench_window_seconds(seconds);
    printf("RESULT tool=%s target=%s%s%s producers=%d consumers=%d agents=%d batch_ack=%d "
           "rate=%.0f warmup_s=%.1f seconds=%.1f published=%" PRIu64 " acked=%" PRIu64
           " cycles_per_s=%.0f publish_per_s=%.0f events_per_claim=%.2f lat_p50_ms=%.3f "
           "lat_p99_ms=%.3f lat_max_ms=%.3f publish_p50_ms=%.3f publish_p99_ms=%.3f "
           "ack_p50_ms=%.3f ack_p99_ms=%.3f errors=%" PRIu64 "\n",
           tool, target, extra ? " " : "", extra ? extra : "", producers, consumers, agents,
           batch_ack ? 1 : 0, rate, warmup_s, secs, r->published, r->acked, (double)r->acked / secs,
           (double)r->published / secs, r->claims ? (double)r->acked / (double)r->claims : 0.0,
           ms(hist_quantile(&r->latency, 0.50)), ms(hist_quantile(&r->latency, 0.99)),
           ms(r->latency.max), ms(hist_quantile(&r->publish_rtt, 0.50)),
           ms(hist_quantile(&r->publish_rtt, 0.99)), ms(hist_quantile(&r->ack_rtt, 0.50)),
           ms(hist_quantile(&r->ack_rtt, 0.99)), r->errors);
    fflush(stdout);
}
