/* SPDX-License-Identifier: MIT */
/* The direct peers' thread skeleton (bench_peer.h). */
#include "bench_peer.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/banned.h"

struct bench_agent *bench_agents;
int bench_n_agents;
atomic_bool bench_stop;

int bench_peer_run(const char *tool, int producers, int consumers, int agents, double warmup_s,
                   double seconds, void *(*producer)(void *), void *(*consumer)(void *),
                   struct bench_result *total)
{
    int nw = producers + consumers;
    bench_agents = calloc((size_t)agents, sizeof *bench_agents);
    struct bench_worker *ws = calloc((size_t)nw, sizeof *ws);
    if (!bench_agents || !ws) {
        fprintf(stderr, "%s: out of memory\n", tool);
        return -1;
    }
    bench_n_agents = agents;
    for (int i = 0; i < agents; i++) {
        pthread_mutex_init(&bench_agents[i].mu, NULL);
        pthread_cond_init(&bench_agents[i].cond, NULL);
        snprintf(bench_agents[i].name, sizeof bench_agents[i].name, "bench-agent-%d", i);
    }
    bench_window_plan(warmup_s, seconds);
    for (int i = 0; i < nw; i++) {
        ws[i].idx = i < producers ? i : i - producers;
        if (pthread_create(&ws[i].thread, NULL, i < producers ? producer : consumer, &ws[i]) != 0) {
            fprintf(stderr, "%s: cannot start thread %d\n", tool, i);
            return -1;
        }
    }
    bench_window_run();
    atomic_store(&bench_stop, true);
    /* Consumers waiting for a commit would otherwise sleep on. */
    for (int i = 0; i < agents; i++) {
        pthread_mutex_lock(&bench_agents[i].mu);
        pthread_cond_broadcast(&bench_agents[i].cond);
        pthread_mutex_unlock(&bench_agents[i].mu);
    }
    for (int i = 0; i < nw; i++) {
        pthread_join(ws[i].thread, NULL);
        bench_result_merge(total, &ws[i].res);
    }
    free(ws);
    for (int i = 0; i < agents; i++) {
        pthread_mutex_destroy(&bench_agents[i].mu);
        pthread_cond_destroy(&bench_agents[i].cond);
    }
    free(bench_agents);
    bench_agents = NULL;
    return 0;
}
