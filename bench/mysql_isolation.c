/* SPDX-License-Identifier: MIT */
/* mysql_isolation: does the claim path need READ COMMITTED? Runs the same mixed load through the
 * real MySQL store at READ COMMITTED and at REPEATABLE READ and prints one RESULT line per level.
 *
 *   producers: publish one event per transaction to agent "w" (a queue that never runs dry)
 *   claimers:  claim up to 10 (FOR UPDATE SKIP LOCKED) in one transaction, ack each in another
 *
 * At REPEATABLE READ the claimers' locking reads take next-key (gap) locks on the claim index,
 * which block the producers' inserts into the same (tenant, agent, status) range until the claim
 * commits; the numbers to compare are publish latency (p99/max), lock waits that timed out or
 * deadlocked (ROOST_ERETRY) and throughput.
 *
 *   mysql_isolation mysql://USER:PASS@HOST:PORT/ANYDB [seconds]
 *
 * Each level runs twice: with a backlog of 2000 events and with an empty queue.
 *
 * Creates (and drops) databases roost_bench_iso_rc / roost_bench_iso_rr on that server. */
#include <mysql.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_common.h"
#include "store/store.h"
#include "store/store_mysql.h"

#include "common/banned.h"

#define PRODUCERS 2
#define CLAIMERS 2

struct shared {
    const char *url;
    atomic_bool stop;
    atomic_long published, claimed, retries, errors;
};

struct worker {
    struct shared *sh;
    struct hist lat; /* publish transaction, µs */
};

static struct store *open_store(const char *url)
{
    struct store *st = NULL;
    const char *err = NULL;
    struct store_options opt = {.busy_timeout_ms = 5000};
    if (store_open(url, &opt, &st, &err) != ROOST_OK) {
        fprintf(stderr, "store_open: %s\n", err != NULL ? err : "?");
        return NULL;
    }
    return st;
}

static int publish_one(struct store *st, int64_t now_ms)
{
    const char *r[] = {"w"};
    struct store_publish_item item = {.recipients = r, .n_recipients = 1, .payload = "{}"};
    struct store_publish_req req = {
        .tenant_id = "t", .items = &item, .n_items = 1, .now_ms = now_ms};
    struct store_published out;
    int rc = st->ops->begin(st);
    if (rc == ROOST_OK) {
        rc = st->ops->publish(st, &req, &out, NULL);
        rc = rc == ROOST_OK ? st->ops->commit(st) : rc;
        if (rc != ROOST_OK) {
            st->ops->rollback(st);
        }
    }
    return rc;
}

static void *producer_main(void *p)
{
    struct worker *w = p;
    struct store *st = open_store(w->sh->url);
    while (st != NULL && !atomic_load(&w->sh->stop)) {
        int64_t t0 = bench_now_ns();
        int rc = publish_one(st, 1700000000000LL);
        if (rc == ROOST_OK) {
            hist_add(&w->lat, (bench_now_ns() - t0) / 1000);
            atomic_fetch_add(&w->sh->published, 1);
        } else if (rc == ROOST_ERETRY) {
            atomic_fetch_add(&w->sh->retries, 1);
        } else {
            atomic_fetch_add(&w->sh->errors, 1);
        }
    }
    store_close(st);
    return NULL;
}

static void *claimer_main(void *p)
{
    struct worker *w = p;
    struct store *st = open_store(w->sh->url);
    while (st != NULL && !atomic_load(&w->sh->stop)) {
        struct store_events evs = {0};
        int rc = st->ops->begin(st);
        if (rc == ROOST_OK) {
            rc = st->ops->claim(st, "t", "w", 10, 0, 60, "c", 1700000000000LL, &evs, NULL);
            rc = rc == ROOST_OK ? st->ops->commit(st) : rc;
            if (rc != ROOST_OK) {
                st->ops->rollback(st);
            }
        }
        if (rc == ROOST_OK && evs.len > 0 && (rc = st->ops->begin(st)) == ROOST_OK) {
            for (size_t i = 0; i < evs.len && rc == ROOST_OK; i++) {
                rc = st->ops->ack(st, "t", "w", evs.items[i].event_id, evs.items[i].lease_token,
                                  1700000000000LL, NULL);
            }
            rc = rc == ROOST_OK ? st->ops->commit(st) : rc;
            if (rc != ROOST_OK) {
                st->ops->rollback(st);
            }
        }
        if (rc == ROOST_OK) {
            atomic_fetch_add(&w->sh->claimed, (long)evs.len);
        } else if (rc == ROOST_ERETRY) {
            atomic_fetch_add(&w->sh->retries, 1);
        } else {
            atomic_fetch_add(&w->sh->errors, 1);
        }
        store_events_cleanup(&evs);
    }
    store_close(st);
    return NULL;
}

/* url with its database replaced by db and the isolation parameter added. */
static int level_url(const char *base, const char *db, const char *level, char *out, size_t cap)
{
    const char *host = strstr(base, "://");
    const char *at = host != NULL ? strrchr(host, '@') : NULL;
    const char *slash = strchr(at != NULL ? at : host != NULL ? host + 3 : base, '/');
    if (slash == NULL) {
        return -1;
    }
    const char *query = strchr(slash, '?');
    int n = snprintf(out, cap, "%.*s/%s%s%sisolation=%s", (int)(slash - base), base, db,
                     query != NULL ? query : "", query != NULL ? "&" : "?", level);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

static int admin_exec(const char *base, const char *sql)
{
    struct store_mysql_url u;
    if (store_mysql_url_parse(base, &u) != ROOST_OK) {
        return -1;
    }
    MYSQL *db = mysql_init(NULL);
    bool sock = u.socket[0] != '\0';
    int rc = -1;
    if (db != NULL && mysql_real_connect(db, sock ? NULL : u.hosts[0].name, u.user, u.pass, NULL,
                                         u.hosts[0].port, sock ? u.socket : NULL, 0) != NULL) {
        rc = mysql_query(db, sql) == 0 ? 0 : -1;
        if (rc != 0) {
            fprintf(stderr, "%s: %s\n", sql, mysql_error(db));
        }
    }
    mysql_close(db);
    return rc;
}

static int run_level(const char *base, const char *level, const char *tag, double seconds,
                     int preload)
{
    char db[64], url[1200], sql[160];
    snprintf(db, sizeof db, "roost_bench_iso_%s", tag);
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", db);
    admin_exec(base, sql);
    snprintf(sql, sizeof sql, "CREATE DATABASE %s", db);
    if (admin_exec(base, sql) != 0 || level_url(base, db, level, url, sizeof url) != 0) {
        return -1;
    }
    struct store *st = open_store(url);
    if (st == NULL || st->ops->migrate(st) != ROOST_OK) {
        store_close(st);
        return -1;
    }
    for (int i = 0; i < preload; i++) {
        publish_one(st, 1700000000000LL);
    }
    store_close(st);

    struct shared sh = {.url = url};
    struct worker ws[PRODUCERS + CLAIMERS];
    pthread_t th[PRODUCERS + CLAIMERS];
    memset(ws, 0, sizeof ws);
    for (int i = 0; i < PRODUCERS + CLAIMERS; i++) {
        ws[i].sh = &sh;
        pthread_create(&th[i], NULL, i < PRODUCERS ? producer_main : claimer_main, &ws[i]);
    }
    bench_sleep_until(bench_now_ns() + (int64_t)(seconds * 1e9));
    atomic_store(&sh.stop, true);
    struct hist lat;
    memset(&lat, 0, sizeof lat);
    for (int i = 0; i < PRODUCERS + CLAIMERS; i++) {
        pthread_join(th[i], NULL);
        hist_merge(&lat, &ws[i].lat);
    }
    printf("RESULT isolation=%s preload=%d seconds=%.1f publish_per_s=%.0f claim_ack_per_s=%.0f "
           "publish_p50_us=%lld publish_p99_us=%lld publish_max_us=%lld retries=%ld errors=%ld\n",
           level, preload, seconds, (double)atomic_load(&sh.published) / seconds,
           (double)atomic_load(&sh.claimed) / seconds, (long long)hist_quantile(&lat, 0.5),
           (long long)hist_quantile(&lat, 0.99), (long long)lat.max, atomic_load(&sh.retries),
           atomic_load(&sh.errors));
    snprintf(sql, sizeof sql, "DROP DATABASE IF EXISTS %s", db);
    admin_exec(base, sql);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s mysql://USER:PASS@HOST:PORT/DB [seconds]\n", argv[0]);
        return 2;
    }
    double seconds = argc > 2 ? strtod(argv[2], NULL) : 5.0;
    int rc = 0;
    /* A backlog (claims stop short of the inserts) and a drained queue (claims scan up to where
     * producers insert, the case gap locks hurt). */
    static const int preloads[] = {2000, 0};
    for (size_t i = 0; i < sizeof preloads / sizeof preloads[0]; i++) {
        rc |= run_level(argv[1], "read-committed", "rc", seconds, preloads[i]);
        rc |= run_level(argv[1], "repeatable-read", "rr", seconds, preloads[i]);
    }
    return rc != 0 ? 1 : 0;
}
