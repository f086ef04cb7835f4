/* SPDX-License-Identifier: MIT */
/* The one driver of the peers (bench_peer.h): the producer and consumer loops and their counts. */
#include "bench_peer.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "common/banned.h"

#define MAX_REPORTS 10
#define PAYLOAD_CAP 1024

struct bench_agent *bench_agents;
int bench_n_agents;
atomic_bool bench_stop;

static const struct bench_backend *g_b;
static const struct bench_drive_opts *g_o;
static int64_t g_start_ns;
static atomic_int g_reports;
static int g_trace_fd = -1; /* BENCH_EVENT_TRACE */

/* With BENCH_EVENT_TRACE=FILE, one line per event in the window, for bench/event_stages.py:
 *   P <scheduled> <publish sent> <publish answered>
 *   A <scheduled> <claim sent> <claim answered> <ack sent> <ack answered> <index> <claimed>
 * (CLOCK_MONOTONIC ns; the scheduled time, unique per event when paced, joins the two). Each
 * line is one write(2) to an O_APPEND file, so threads never interleave within a line. */
static void trace(const char *fmt, ...)
{
    if (g_trace_fd < 0) {
        return;
    }
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0 && n < (int)sizeof line && write(g_trace_fd, line, (size_t)n) != n) {
        g_trace_fd = -1;
    }
}

void bench_report(const char *fmt, ...)
{
    if (atomic_fetch_add(&g_reports, 1) >= MAX_REPORTS) {
        return;
    }
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

static bool stopping(void)
{
    return atomic_load_explicit(&bench_stop, memory_order_relaxed);
}

static void failed(struct bench_worker *w)
{
    w->res.errors++;
    usleep(10000);
}

static void *producer_main(void *arg)
{
    struct bench_worker *w = arg;
    void *c = g_b->open(BENCH_PRODUCER, w->idx);
    if (!c) {
        w->res.errors++;
        return NULL;
    }
    char payload[PAYLOAD_CAP];
    int64_t period = g_o->rate > 0 ? (int64_t)(1e9 * g_o->producers / g_o->rate) : 0;
    int64_t next = g_start_ns + (period ? period * w->idx / g_o->producers : 0);
    for (uint64_t k = 0; !stopping(); k++) {
        struct bench_agent *a = &bench_agents[((uint64_t)w->idx + k) % (uint64_t)bench_n_agents];
        int64_t t0;
        if (period) {
            /* The time in the payload is the scheduled one: a producer that falls behind
             * shows it as latency (no coordinated omission). */
            int64_t end = bench_window_end_ns();
            bench_sleep_until(next < end ? next : end);
            if (stopping()) {
                break;
            }
            t0 = next;
            next += period;
        } else {
            t0 = bench_now_ns();
        }
        int len = bench_payload(payload, sizeof payload, t0, (size_t)g_o->payload_bytes);
        int64_t s = bench_now_ns();
        int rc;
        while ((rc = g_b->publish(c, a, payload, len)) == BENCH_RETRY && !stopping()) {
        }
        int64_t e = bench_now_ns();
        if (rc != BENCH_OK) {
            if (rc == BENCH_FAIL) {
                failed(w);
            }
            continue;
        }
        if (!g_b->claim_waits) {
            pthread_mutex_lock(&a->mu);
            a->version++;
            pthread_cond_broadcast(&a->cond);
            pthread_mutex_unlock(&a->mu);
        }
        if (bench_in_window(e)) {
            w->res.published++;
            hist_add(&w->res.publish_rtt, e - s);
            trace("P %lld %lld %lld\n", (long long)t0, (long long)s, (long long)e);
        }
    }
    g_b->close(c);
    return NULL;
}

/* Up to 100 ms for a publish to agent a after `seen`: idle consumers of a table sleep here. */
static void wait_for_publish(struct bench_agent *a, uint64_t seen)
{
    struct timespec dl;
    clock_gettime(CLOCK_REALTIME, &dl);
    dl.tv_nsec += 100 * 1000 * 1000;
    if (dl.tv_nsec >= 1000000000) {
        dl.tv_sec++;
        dl.tv_nsec -= 1000000000;
    }
    pthread_mutex_lock(&a->mu);
    while (a->version == seen && !stopping()) {
        if (pthread_cond_timedwait(&a->cond, &a->mu, &dl) == ETIMEDOUT) {
            break;
        }
    }
    pthread_mutex_unlock(&a->mu);
}

static void acked(struct bench_worker *w, const struct bench_event *ev, int64_t s, int64_t e)
{
    if (bench_in_window(e)) {
        w->res.acked++;
        hist_add(&w->res.latency, e - ev->t_ns);
        if (s) {
            hist_add(&w->res.ack_rtt, e - s);
        }
    }
}

static void *consumer_main(void *arg)
{
    struct bench_worker *w = arg;
    struct bench_agent *a = &bench_agents[w->idx % bench_n_agents];
    struct bench_event *evs = calloc((size_t)g_o->limit, sizeof *evs);
    void *c = evs ? g_b->open(BENCH_CONSUMER, w->idx) : NULL;
    if (!c) {
        w->res.errors++;
        free(evs);
        return NULL;
    }
    while (!stopping()) {
        uint64_t seen = 0;
        if (!g_b->claim_waits) {
            pthread_mutex_lock(&a->mu);
            seen = a->version;
            pthread_mutex_unlock(&a->mu);
        }
        int64_t cs = bench_now_ns();
        int n = g_b->claim(c, a, g_o->limit, evs);
        int64_t ce = bench_now_ns();
        if (n == BENCH_RETRY) {
            continue;
        }
        if (n < 0) {
            failed(w);
            continue;
        }
        if (n == 0) {
            if (!g_b->claim_waits) {
                wait_for_publish(a, seen);
            }
            continue;
        }
        if (bench_in_window(bench_now_ns())) {
            w->res.claims++;
        }
        if (g_o->batch_ack && g_b->ack_batch) {
            int64_t s = bench_now_ns();
            int rc;
            while ((rc = g_b->ack_batch(c, a, evs, n)) == BENCH_RETRY && !stopping()) {
            }
            int64_t e = bench_now_ns();
            if (rc != BENCH_OK) {
                if (rc == BENCH_FAIL) {
                    failed(w);
                }
                continue;
            }
            if (bench_in_window(e)) {
                hist_add(&w->res.ack_rtt, e - s);
            }
            for (int i = 0; i < n; i++) {
                acked(w, &evs[i], 0, e);
            }
            continue;
        }
        for (int i = 0; i < n; i++) {
            int64_t s = bench_now_ns();
            int rc;
            while ((rc = g_b->ack(c, a, &evs[i])) == BENCH_RETRY && !stopping()) {
            }
            int64_t e = bench_now_ns();
            if (rc == BENCH_OK) {
                acked(w, &evs[i], s, e);
                if (bench_in_window(e)) {
                    trace("A %lld %lld %lld %lld %lld %d %d\n", (long long)evs[i].t_ns,
                          (long long)cs, (long long)ce, (long long)s, (long long)e, i, n);
                }
            } else if (rc == BENCH_FAIL) {
                failed(w);
            }
        }
    }
    g_b->close(c);
    free(evs);
    return NULL;
}

void bench_drive_defaults(struct bench_drive_opts *o)
{
    o->producers = 2;
    o->consumers = 2;
    o->seconds = 10;
    o->warmup_s = 2;
    o->limit = 10;
    o->payload_bytes = 100;
}

bool bench_drive_option(struct bench_drive_opts *o, const struct bench_drive_bounds *b, int opt,
                        const char *arg)
{
    switch (opt) {
    case BENCH_O_PRODUCERS:
        o->producers = (int)bench_parse_num("--producers", arg, b->min_producers, 1024);
        return true;
    case BENCH_O_CONSUMERS:
        o->consumers = (int)bench_parse_num("--consumers", arg, 1, 1024);
        return true;
    case BENCH_O_AGENTS:
        o->agents = (int)bench_parse_num("--agents", arg, 1, b->max_agents);
        return true;
    case BENCH_O_SECONDS:
        o->seconds = bench_parse_num("--seconds", arg, 0.1, 86400);
        return true;
    case BENCH_O_WARMUP:
        o->warmup_s = bench_parse_num("--warmup", arg, 0, 86400);
        return true;
    case BENCH_O_BATCH_ACK:
        o->batch_ack = true;
        return true;
    case BENCH_O_LIMIT:
        o->limit = (int)bench_parse_num("--limit", arg, 1, b->max_limit);
        return true;
    case BENCH_O_PAYLOAD:
        o->payload_bytes = (int)bench_parse_num("--payload-bytes", arg, 16, 900);
        return true;
    case BENCH_O_RATE:
        o->rate = bench_parse_num("--rate", arg, 0, 1e7);
        return true;
    default:
        return false;
    }
}

int bench_drive(const struct bench_backend *b, const struct bench_drive_opts *o,
                struct bench_result *total)
{
    if (o->batch_ack && !b->ack_batch) {
        fprintf(stderr, "%s: this system has no batch ack\n", b->tool);
        return -1;
    }
    g_b = b;
    g_o = o;
    int nw = o->producers + o->consumers;
    bench_agents = calloc((size_t)o->agents, sizeof *bench_agents);
    struct bench_worker *ws = calloc((size_t)nw, sizeof *ws);
    if (!bench_agents || !ws) {
        fprintf(stderr, "%s: out of memory\n", b->tool);
        return -1;
    }
    bench_n_agents = o->agents;
    for (int i = 0; i < o->agents; i++) {
        pthread_mutex_init(&bench_agents[i].mu, NULL);
        pthread_cond_init(&bench_agents[i].cond, NULL);
        snprintf(bench_agents[i].name, sizeof bench_agents[i].name, "%s%d",
                 o->agent_prefix ? o->agent_prefix : "bench-agent-", i);
        bench_agents[i].idx = i;
    }
    const char *trace_path = getenv("BENCH_EVENT_TRACE");
    if (trace_path != NULL && trace_path[0] != '\0') {
        g_trace_fd = open(trace_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    }
    g_start_ns = bench_now_ns();
    bench_window_plan(o->warmup_s, o->seconds);
    for (int i = 0; i < nw; i++) {
        ws[i].idx = i < o->producers ? i : i - o->producers;
        if (pthread_create(&ws[i].thread, NULL, i < o->producers ? producer_main : consumer_main,
                           &ws[i]) != 0) {
            fprintf(stderr, "%s: cannot start thread %d\n", b->tool, i);
            return -1;
        }
    }
    bench_window_run();
    atomic_store(&bench_stop, true);
    /* Consumers waiting for a publish would otherwise sleep on. */
    for (int i = 0; i < o->agents; i++) {
        pthread_mutex_lock(&bench_agents[i].mu);
        pthread_cond_broadcast(&bench_agents[i].cond);
        pthread_mutex_unlock(&bench_agents[i].mu);
    }
    for (int i = 0; i < nw; i++) {
        pthread_join(ws[i].thread, NULL);
        bench_result_merge(total, &ws[i].res);
    }
    free(ws);
    for (int i = 0; i < o->agents; i++) {
        pthread_mutex_destroy(&bench_agents[i].mu);
        pthread_cond_destroy(&bench_agents[i].cond);
    }
    free(bench_agents);
    bench_agents = NULL;
    return 0;
}
