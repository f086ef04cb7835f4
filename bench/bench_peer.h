/* SPDX-License-Identifier: MIT */
/* The skeleton shared by the direct peers (sqlite_direct, mysql_direct): P producer and C
 * consumer threads over a set of agents, a warm-up then a measurement window, and a per-agent
 * condition so idle consumers wait for the next commit instead of spinning. Each peer supplies
 * only its database code (the producer and consumer thread bodies). */
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
    uint64_t version; /* bumped by every commit that adds a row for this agent */
    char name[64];
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

/* Starts the threads, waits out warm-up + window, stops and joins them, merges their results
 * into *total. 0, or -1 with a message naming `tool`. */
int bench_peer_run(const char *tool, int producers, int consumers, int agents, double warmup_s,
                   double seconds, void *(*producer)(void *), void *(*consumer)(void *),
                   struct bench_result *total);

#endif
