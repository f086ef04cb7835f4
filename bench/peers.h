/* SPDX-License-Identifier: MIT */
/* The systems roost_load drives besides roostd, chosen by the scheme of --url: each a backend of
 * the one driver (bench_peer.h). */
#ifndef ROOST_BENCH_PEERS_H
#define ROOST_BENCH_PEERS_H

#include "bench_peer.h"

/* Redis Streams (redis://HOST:PORT): a stream per agent, one consumer group; publish = XADD,
 * claim = XREADGROUP … COUNT limit BLOCK wait_s, ack = XACK. Durable as the server's
 * appendfsync says (scripts/bench_peers.sh: always). 0, or -1 on a bad URL. */
int bench_redis_init(const char *url, int wait_s);
extern const struct bench_backend bench_redis;

/* beanstalkd (beanstalk://HOST:PORT): a tube per agent; publish = use + put (one round trip),
 * claim = reserve-with-timeout wait_s (one job: beanstalkd has no batch reserve), ack = delete.
 * Durable as the server's -f says (scripts/bench_peers.sh: -f 0, an fsync per write). */
int bench_beanstalkd_init(const char *url, int wait_s);
extern const struct bench_backend bench_beanstalkd;

#endif
