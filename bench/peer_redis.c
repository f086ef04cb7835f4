/* SPDX-License-Identifier: MIT */
/* Redis Streams as a backend of the peers' driver (peers.h), over RESP2 on a plain socket. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_http.h"
#include "peers.h"

#include "common/banned.h"

#define GROUP "bench"

static struct bench_node g_node;
static int g_wait_s;

struct rconn {
    struct bench_conn conn;
    char consumer[32];
    char *cmd;
    size_t cmd_cap;
};

/* Sends one command as a RESP array of bulk strings. */
static int command(struct rconn *r, int argc, const char *const *argv, const size_t *lens)
{
    size_t need = 32;
    for (int i = 0; i < argc; i++) {
        need += lens[i] + 32;
    }
    if (need > r->cmd_cap) {
        char *p = realloc(r->cmd, need);
        if (!p) {
            return -1;
        }
        r->cmd = p;
        r->cmd_cap = need;
    }
    size_t off = (size_t)snprintf(r->cmd, r->cmd_cap, "*%d\r\n", argc);
    for (int i = 0; i < argc; i++) {
        off += (size_t)snprintf(r->cmd + off, r->cmd_cap - off, "$%zu\r\n", lens[i]);
        memcpy(r->cmd + off, argv[i], lens[i]);
        off += lens[i];
        r->cmd[off++] = '\r';
        r->cmd[off++] = '\n';
    }
    return bench_conn_send(&r->conn, r->cmd, off);
}

/* The next reply's first line; an error reply ("-…") is reported and fails. */
static int reply_line(struct rconn *r, const char *what, char **line)
{
    size_t len;
    if (bench_conn_line(&r->conn, line, &len) != 0) {
        bench_report("roost_load: redis %s: connection error (%s)", what,
                     errno ? strerror(errno) : "closed");
        return -1;
    }
    if ((*line)[0] == '-') {
        bench_report("roost_load: redis %s: %s", what, *line);
        return -1;
    }
    return 0;
}

/* An array header ("*N"; N = -1 for nil) or a bulk string ("$N" then N bytes, copied out). */
static int read_array(struct rconn *r, const char *what, long *n)
{
    char *line;
    if (reply_line(r, what, &line) != 0) {
        return -1;
    }
    if (line[0] != '*') {
        bench_report("roost_load: redis %s: expected an array, got %s", what, line);
        bench_conn_close(&r->conn);
        return -1;
    }
    *n = strtol(line + 1, NULL, 10);
    return 0;
}

static int read_bulk(struct rconn *r, const char *what, char **out, size_t *len)
{
    char *line;
    if (reply_line(r, what, &line) != 0) {
        return -1;
    }
    long n = line[0] == '$' ? strtol(line + 1, NULL, 10) : -1;
    if (n < 0 || bench_conn_bytes(&r->conn, (size_t)n, out) != 0) {
        bench_report("roost_load: redis %s: expected a bulk string", what);
        bench_conn_close(&r->conn);
        return -1;
    }
    *len = (size_t)n;
    return 0;
}

int bench_redis_init(const char *url, int wait_s)
{
    g_wait_s = wait_s;
    return bench_node_parse(url, &g_node);
}

static void *redis_open(enum bench_role role, int idx)
{
    struct rconn *r = calloc(1, sizeof *r);
    if (!r) {
        return NULL;
    }
    bench_conn_init(&r->conn, &g_node, NULL, 30 + g_wait_s);
    snprintf(r->consumer, sizeof r->consumer, "c%d", idx);
    if (role == BENCH_CONSUMER) {
        /* The group reads the stream from its start, so events published before it existed
         * count; another consumer of the agent may have made it already. */
        const char *key = bench_agents[idx % bench_n_agents].name;
        const char *argv[] = {"XGROUP", "CREATE", key, GROUP, "0", "MKSTREAM"};
        size_t lens[] = {6, 6, strlen(key), strlen(GROUP), 1, 8};
        char *line;
        size_t len;
        if (command(r, 6, argv, lens) != 0 || bench_conn_line(&r->conn, &line, &len) != 0 ||
            (strcmp(line, "+OK") != 0 && strncmp(line, "-BUSYGROUP", 10) != 0)) {
            fprintf(stderr, "roost_load: redis XGROUP CREATE %s failed\n", key);
            bench_conn_free(&r->conn);
            free(r);
            return NULL;
        }
    }
    return r;
}

static void redis_close(void *c)
{
    struct rconn *r = c;
    bench_conn_free(&r->conn);
    free(r->cmd);
    free(r);
}

static int redis_publish(void *c, struct bench_agent *a, const char *payload, int len)
{
    struct rconn *r = c;
    const char *argv[] = {"XADD", a->name, "*", "p", payload};
    size_t lens[] = {4, strlen(a->name), 1, 1, (size_t)len};
    char *id;
    size_t id_len;
    if (command(r, 5, argv, lens) != 0 || read_bulk(r, "XADD", &id, &id_len) != 0) {
        return BENCH_FAIL;
    }
    return BENCH_OK;
}

/* XREADGROUP's answer: nil (nothing within BLOCK) or [[key, [[id, [field, value…]]…]]]. */
static int redis_claim(void *c, struct bench_agent *a, int limit, struct bench_event *out)
{
    struct rconn *r = c;
    char count[16], block[16];
    snprintf(count, sizeof count, "%d", limit);
    snprintf(block, sizeof block, "%d", g_wait_s * 1000);
    const char *argv[] = {"XREADGROUP", "GROUP", GROUP,     r->consumer, "COUNT", count,
                          "BLOCK",      block,   "STREAMS", a->name,     ">"};
    size_t lens[11];
    for (int i = 0; i < 11; i++) {
        lens[i] = strlen(argv[i]);
    }
    long streams, entries, pair, fields;
    char *s;
    size_t len;
    if (command(r, 11, argv, lens) != 0 || read_array(r, "XREADGROUP", &streams) != 0) {
        return BENCH_FAIL;
    }
    if (streams <= 0) {
        return 0;
    }
    if (streams != 1 || read_array(r, "XREADGROUP", &pair) != 0 || pair != 2 ||
        read_bulk(r, "XREADGROUP", &s, &len) != 0 || read_array(r, "XREADGROUP", &entries) != 0 ||
        entries > limit) {
        bench_conn_close(&r->conn);
        return BENCH_FAIL;
    }
    for (long i = 0; i < entries; i++) {
        struct bench_event *ev = &out[i];
        if (read_array(r, "XREADGROUP", &pair) != 0 || pair != 2 ||
            read_bulk(r, "XREADGROUP", &s, &len) != 0 || len >= sizeof ev->key) {
            bench_conn_close(&r->conn);
            return BENCH_FAIL;
        }
        memcpy(ev->key, s, len + 1);
        if (read_array(r, "XREADGROUP", &fields) != 0 || fields != 2 ||
            read_bulk(r, "XREADGROUP", &s, &len) != 0 ||
            read_bulk(r, "XREADGROUP", &s, &len) != 0 ||
            bench_payload_time(s, len, &ev->t_ns) != 0) {
            bench_report("roost_load: redis XREADGROUP: an entry without the payload's time");
            bench_conn_close(&r->conn);
            return BENCH_FAIL;
        }
    }
    return (int)entries;
}

static int redis_ack(void *c, struct bench_agent *a, const struct bench_event *ev)
{
    struct rconn *r = c;
    const char *argv[] = {"XACK", a->name, GROUP, ev->key};
    size_t lens[] = {4, strlen(a->name), strlen(GROUP), strlen(ev->key)};
    char *line;
    if (command(r, 4, argv, lens) != 0 || reply_line(r, "XACK", &line) != 0) {
        return BENCH_FAIL;
    }
    if (strcmp(line, ":1") != 0) {
        bench_report("roost_load: redis XACK %s answered %s", ev->key, line);
        return BENCH_FAIL;
    }
    return BENCH_OK;
}

/* XACK takes every id of a claim at once. */
static int redis_ack_batch(void *c, struct bench_agent *a, const struct bench_event *evs, int n)
{
    struct rconn *r = c;
    const char **argv = calloc((size_t)n + 3, sizeof *argv);
    size_t *lens = calloc((size_t)n + 3, sizeof *lens);
    int rc = BENCH_FAIL;
    char *line;
    if (!argv || !lens) {
        goto out;
    }
    argv[0] = "XACK";
    argv[1] = a->name;
    argv[2] = GROUP;
    for (int i = 0; i < n; i++) {
        argv[3 + i] = evs[i].key;
    }
    for (int i = 0; i < 3 + n; i++) {
        lens[i] = strlen(argv[i]);
    }
    if (command(r, 3 + n, argv, lens) != 0 || reply_line(r, "XACK", &line) != 0) {
        goto out;
    }
    if (line[0] != ':' || strtol(line + 1, NULL, 10) != n) {
        bench_report("roost_load: redis XACK of %d answered %s", n, line);
        goto out;
    }
    rc = BENCH_OK;
out:
    free(argv);
    free(lens);
    return rc;
}

const struct bench_backend bench_redis = {
    .tool = "roost_load",
    .open = redis_open,
    .close = redis_close,
    .publish = redis_publish,
    .claim = redis_claim,
    .ack = redis_ack,
    .ack_batch = redis_ack_batch,
    .claim_waits = true,
};
