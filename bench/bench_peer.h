/* SPDX-License-Identifier: MIT */
/* The one driver of every peer (doc/BENCHMARKS.md): P producer and C consumer threads over a set
 * of agents, a warm-up then a measurement window, and the full cycle counted the same way for
 * every system — publish one ~100-byte event and wait until it is durable; claim up to `limit`
 * events of the consumer's agent; ack each (or all at once) and wait until the ack is durable.
 * A system is a backend: its connection and its three calls. The driver owns the loops, the
 * pacing, the counting and the latencies (publish start → ack success, from the time inside the
 * payload), so a difference between two systems is theirs, not the tools'. Backends whose claim
 * does not wait for news itself (SQL tables) get a per-agent condition that the driver signals
 * after every publish, in-process notification as an application would have. */
#ifndef ROOST_BENCH_PEER_H
#define ROOST_BENCH_PEER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "bench_common.h"

struct bench_agent {
    pthread_mutex_t mu;
    pthread_cond_t cond;
    uint64_t version; /* bumped by every publish to this agent */
    char name[96];
    int idx;
};

struct bench_worker {
    pthread_t thread;
    int idx; /* producer or consumer number */
    struct bench_result res;
};

/* Shared by the threads of one run. */
extern struct bench_agent *bench_agents;
extern int bench_n_agents;
extern atomic_bool bench_stop;

/* An event a consumer holds: what its backend needs to ack it, and the time in its payload. */
#define BENCH_KEY_MAX 64
struct bench_event {
    int64_t id;                /* row or job id */
    char key[BENCH_KEY_MAX];   /* event id, stream entry id */
    char token[BENCH_KEY_MAX]; /* lease token */
    int64_t t_ns;
};

/* A backend call's outcome beside a count: done, retry at once (a deadlock, counted by the
 * backend, not an error), failed (an error: the driver counts it and pauses 10 ms). */
#define BENCH_OK 0
#define BENCH_RETRY (-1)
#define BENCH_FAIL (-2)

enum bench_role { BENCH_PRODUCER, BENCH_CONSUMER };

/* A system under test. Every call runs on the calling worker's own connection `c`. */
struct bench_backend {
    const char *tool; /* tool= of the result line */
    /* A worker's connection (idx: producer or consumer number), or NULL (reported). */
    void *(*open)(enum bench_role role, int idx);
    void (*close)(void *c);
    /* One event to agent a, durable on BENCH_OK. */
    int (*publish)(void *c, struct bench_agent *a, const char *payload, int len);
    /* Up to `limit` events of agent a into out: their count (0 when none came within the
     * backend's own wait), or BENCH_RETRY / BENCH_FAIL. */
    int (*claim)(void *c, struct bench_agent *a, int limit, struct bench_event *out);
    /* One event done, durable on BENCH_OK. */
    int (*ack)(void *c, struct bench_agent *a, const struct bench_event *ev);
    /* All n at once (--batch-ack); NULL when the system has no such call. */
    int (*ack_batch)(void *c, struct bench_agent *a, const struct bench_event *evs, int n);
    /* The claim itself waits for news (a long poll): no in-process condition needed. */
    bool claim_waits;
};

struct bench_drive_opts {
    int producers;
    int consumers;
    int agents;
    int limit;
    int payload_bytes;
    double warmup_s;
    double seconds;
    double rate; /* events/s over all producers, 0 = closed loop */
    bool batch_ack;
    const char *agent_prefix; /* agent names are <prefix><n> */
};

/* The options of bench_drive_opts that every tool takes, as getopt_long values above the tool's
 * own (BENCH_DRIVE_OPTIONS goes in its struct option table; --agent-prefix is
 * roost_load's alone). */
enum {
    BENCH_O_PRODUCERS = 512,
    BENCH_O_CONSUMERS,
    BENCH_O_AGENTS,
    BENCH_O_SECONDS,
    BENCH_O_WARMUP,
    BENCH_O_BATCH_ACK,
    BENCH_O_LIMIT,
    BENCH_O_PAYLOAD,
    BENCH_O_RATE,
};
// clang-format off
#define BENCH_DRIVE_OPTIONS                                        \
    {"producers", required_argument, NULL, BENCH_O_PRODUCERS},     \
    {"consumers", required_argument, NULL, BENCH_O_CONSUMERS},     \
    {"agents", required_argument, NULL, BENCH_O_AGENTS},           \
    {"seconds", required_argument, NULL, BENCH_O_SECONDS},         \
    {"warmup", required_argument, NULL, BENCH_O_WARMUP},           \
    {"batch-ack", no_argument, NULL, BENCH_O_BATCH_ACK},           \
    {"limit", required_argument, NULL, BENCH_O_LIMIT},             \
    {"payload-bytes", required_argument, NULL, BENCH_O_PAYLOAD},   \
    {"rate", required_argument, NULL, BENCH_O_RATE}
// clang-format on

/* Where a tool's bounds differ: the fewest producers, the most agents and the largest claim. */
struct bench_drive_bounds {
    int min_producers;
    int max_agents;
    int max_limit;
};

/* 2 producers, 2 consumers, 10 s measured after 2 s of warm-up, claims of 10, 100-byte payloads. */
void bench_drive_defaults(struct bench_drive_opts *o);
/* One getopt_long value into o: false when it is not one of BENCH_DRIVE_OPTIONS. A value out of
 * bounds exits 2 (bench_parse_num). */
bool bench_drive_option(struct bench_drive_opts *o, const struct bench_drive_bounds *b, int opt,
                        const char *arg);

/* Runs the backend under the options, merging the workers' counts into *total. 0, or -1 with a
 * message naming the backend's tool. */
int bench_drive(const struct bench_backend *b, const struct bench_drive_opts *o,
                struct bench_result *total);

/* A backend's message about an unexpected answer: the first 10 of a run go to stderr. */
void bench_report(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
