/* SPDX-License-Identifier: MIT */
/* The store tests of the dialects with several writers (MariaDB, PostgreSQL) that do not depend
 * on the dialect: several connections to one database at once. test_store_mysql and test_store_pg
 * run them on their own servers, each test on a fresh database or schema (url). */
#ifndef ROOST_TEST_SEVERAL_WRITERS_H
#define ROOST_TEST_SEVERAL_WRITERS_H

#include <stdbool.h>
#include <stdint.h>

#include "harness/check.h"
#include "store/store.h"

#define T0 1700000000000LL
#define TA "tenant-a"

/* A store call's return code, with the store's error detail on failure. */
#define CHECK_RC(st, expr, want)                                                                   \
    do {                                                                                           \
        int rc_ = (expr);                                                                          \
        if (rc_ == (want)) {                                                                       \
            check_pass();                                                                          \
        } else {                                                                                   \
            check_fail(__FILE__, __LINE__, "%s = %s, want %s (%s)", #expr, roost_err_name(rc_),    \
                       roost_err_name(want), (st)->ops->errmsg(st));                               \
        }                                                                                          \
    } while (0)

/* A store on its own connection (NULL, said why, when it cannot be opened). */
struct store *several_open(const char *url);
/* Publishes one event to one agent of TA in its own transaction, replaying it on ROOST_ERETRY as
 * the server's writer does. */
int several_publish_retry(struct store *st, const char *agent, const char *idem, int64_t now,
                          struct store_published *out);
/* t holds agent (of TA) at head (-1: at any head). */
bool several_touched(const struct store_touches *t, const char *agent, int64_t head);

/* 8 producers (half of them through publish_batch when batched) and a cursor reader on agent
 * "hot": the reader sees every event once, in seq order. */
void several_producers_no_gaps(const char *url, bool batched);
/* An application's publishes: n events to agent "hot" of TA on a connection of its own, each in
 * its own transaction through the database's roost_publish (retried on a deadlock); returns the
 * number that failed. */
#define SEVERAL_PER_APP 150
typedef int (*several_app_fn)(const char *url, int n);
/* 4 store producers and 4 applications publishing to "hot": no gap, every event once, and a
 * tailer ends at the final head. */
void several_mixed_producers_no_gaps(const char *url, several_app_fn app);
/* 4 claimers beside a producer still publishing: their claims are disjoint and cover every
 * event. */
void several_claimers_disjoint(const char *url);
/* Two nodes run retention at once: each row is archived once (the agents another node holds are
 * passed by). */
void several_retention_archives_once(const char *url);

#endif
