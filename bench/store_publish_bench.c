/* SPDX-License-Identifier: MIT */
/* store_publish_bench: what one big publish costs the store's writer, without HTTP (issue 33).
 *
 *   store_publish_bench [--store URL] [--agents N] [--count C] [--batch B] [--payload-bytes P]
 *                       [--full]
 *
 * Opens the store (default: a fresh SQLite file in a temp dir, synchronous=NORMAL as
 * scripts/bench_fairness.py runs roostd; --full: FULL), gives tenant "ta" N agents with one event
 * each, then runs C fan-outs (one event of P bytes to every agent) and C batches (B events of P
 * bytes to one agent, each its own item with its own payload text, as the API builds them), each
 * in a transaction of its own as roostd's writer runs a group of one: begin, the publish
 * operation, commit. Prints per kind the medians of the publish operation's time (the statements)
 * and of the COMMIT, in microseconds per row, wall clock and the writer thread's CPU. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "store/store.h"

#include "common/banned.h"

static int64_t wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t cpu_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_d);
    return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* One publish in a transaction of its own; the four times (us) of its statements and COMMIT. */
static int run_publish(struct store *st, const struct store_publish_req *req,
                       struct store_published *out, double t[4])
{
    struct store_touches touches = {0};
    int rc;
    while ((rc = store_call0(st, begin)) == ROOST_ERETRY) {
    }
    if (rc != ROOST_OK) {
        return rc;
    }
    struct store_publish_entry e = {.req = req, .out = out, .touches = &touches};
    int64_t w0 = wall_us(), c0 = cpu_us();
    rc = store_publish_batch(st, &e, 1);
    rc = rc != ROOST_OK ? rc : e.rc;
    int64_t w1 = wall_us(), c1 = cpu_us();
    if (rc != ROOST_OK) {
        store_call0(st, rollback);
        store_touches_cleanup(&touches);
        return rc;
    }
    rc = store_call0(st, commit);
    int64_t w2 = wall_us(), c2 = cpu_us();
    t[0] = (double)(w1 - w0);
    t[1] = (double)(c1 - c0);
    t[2] = (double)(w2 - w1);
    t[3] = (double)(c2 - c1);
    store_touches_cleanup(&touches);
    return rc;
}

static char *payload_text(size_t bytes, char fill)
{
    char *p = malloc(bytes + 16);
    if (p == NULL) {
        exit(1);
    }
    int n = snprintf(p, bytes + 16, "{\"b\":\"");
    memset(p + n, fill, bytes);
    snprintf(p + n + bytes, 16, "\"}");
    return p;
}

int main(int argc, char **argv)
{
    const char *url = NULL;
    size_t agents = 10000, count = 10, batch = 1000, payload_bytes = 1024;
    bool full = false;
    static const struct option opts[] = {{"store", required_argument, NULL, 's'},
                                         {"agents", required_argument, NULL, 'a'},
                                         {"count", required_argument, NULL, 'c'},
                                         {"batch", required_argument, NULL, 'b'},
                                         {"payload-bytes", required_argument, NULL, 'p'},
                                         {"full", no_argument, NULL, 'f'},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            url = optarg;
            break;
        case 'a':
            agents = strtoul(optarg, NULL, 10);
            break;
        case 'c':
            count = strtoul(optarg, NULL, 10);
            break;
        case 'b':
            batch = strtoul(optarg, NULL, 10);
            break;
        case 'p':
            payload_bytes = strtoul(optarg, NULL, 10);
            break;
        case 'f':
            full = true;
            break;
        default:
            fprintf(stderr,
                    "usage: %s [--store URL] [--agents N] [--count C] [--batch B]"
                    " [--payload-bytes P] [--full]\n",
                    argv[0]);
            return 2;
        }
    }
    if (agents < 1 || count < 1 || batch < 1) {
        fprintf(stderr, "--agents, --count and --batch must be at least 1\n");
        return 2;
    }
    char dir[] = "/tmp/roost-pubbench-XXXXXX";
    char own_url[64];
    if (url == NULL) {
        if (mkdtemp(dir) == NULL) {
            perror("mkdtemp");
            return 1;
        }
        snprintf(own_url, sizeof own_url, "sqlite://%s/roost.db", dir);
        url = own_url;
    }
    struct store_options opt = {.busy_timeout_ms = 10000, .synchronous_full = full};
    struct store *st = NULL;
    const char *err = NULL;
    int rc = store_open(url, &opt, &st, &err);
    if (rc == ROOST_OK) {
        rc = st->ops->migrate(st);
    }
    if (rc != ROOST_OK) {
        fprintf(stderr, "store_open(%s): %s\n", url, err != NULL ? err : roost_err_name(rc));
        return 1;
    }

    char **names = calloc(agents, sizeof *names);
    struct store_published *out = calloc(agents > batch ? agents : batch, sizeof *out);
    struct store_publish_item *items = calloc(batch, sizeof *items);
    char **payloads = calloc(batch, sizeof *payloads);
    double *fan[4], *bat[4];
    for (int k = 0; k < 4; k++) {
        fan[k] = calloc(count, sizeof(double));
        bat[k] = calloc(count, sizeof(double));
    }
    for (size_t i = 0; i < agents; i++) {
        if (asprintf(&names[i], "fa.%06zu", i) < 0) {
            return 1;
        }
    }
    const char *pub[] = {"fa.pub"};
    char *fan_payload = payload_text(payload_bytes, 'y');
    for (size_t i = 0; i < batch; i++) {
        payloads[i] = payload_text(payload_bytes, 'y');
        items[i] = (struct store_publish_item){
            .recipients = pub, .n_recipients = 1, .payload = payloads[i]};
    }
    /* The agents, one event each (as bench_fairness.py gives tenant A). */
    struct store_publish_item seed = {
        .recipients = (const char *const *)names, .n_recipients = agents, .payload = "{\"n\":1}"};
    struct store_publish_req req = {.tenant_id = "ta", .items = &seed, .n_items = 1};
    double t[4];
    req.now_ms = now_ms();
    if ((rc = run_publish(st, &req, out, t)) != ROOST_OK) {
        fprintf(stderr, "seed publish: %s (%s)\n", roost_err_name(rc), st->ops->errmsg(st));
        return 1;
    }
    struct store_publish_item fan_item = {
        .recipients = (const char *const *)names, .n_recipients = agents, .payload = fan_payload};
    for (size_t i = 0; i < 2 * count; i++) {
        bool is_fan = i % 2 == 0;
        req = (struct store_publish_req){.tenant_id = "ta",
                                         .items = is_fan ? &fan_item : items,
                                         .n_items = is_fan ? 1 : batch,
                                         .now_ms = now_ms()};
        if ((rc = run_publish(st, &req, out, t)) != ROOST_OK) {
            fprintf(stderr, "publish: %s (%s)\n", roost_err_name(rc), st->ops->errmsg(st));
            return 1;
        }
        double rows = is_fan ? (double)agents : (double)batch;
        for (int k = 0; k < 4; k++) {
            (is_fan ? fan : bat)[k][i / 2] = t[k] / rows;
        }
    }
    double load[3] = {0};
    getloadavg(load, 3);
    printf("store %s, %zu agents, payload %zu bytes, %zu of each kind, load %.2f\n",
           url == own_url ? (full ? "sqlite (FULL)" : "sqlite (NORMAL)") : url, agents,
           payload_bytes, count, load[0]);
    printf("kind\trows\tstatements_us_row\tstatements_cpu_us_row\tcommit_us_row\tcommit_cpu_us_"
           "row\n");
    printf("fan-out\t%zu\t%.2f\t%.2f\t%.2f\t%.2f\n", agents, median(fan[0], count),
           median(fan[1], count), median(fan[2], count), median(fan[3], count));
    printf("batch\t%zu\t%.2f\t%.2f\t%.2f\t%.2f\n", batch, median(bat[0], count),
           median(bat[1], count), median(bat[2], count), median(bat[3], count));
    store_close(st);
    if (url == own_url) {
        static const char *const files[] = {"roost.db", "roost.db-wal", "roost.db-shm"};
        for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
            char path[96];
            snprintf(path, sizeof path, "%s/%s", dir, files[i]);
            unlink(path);
        }
        rmdir(dir);
    }
    return 0;
}
