/* SPDX-License-Identifier: MIT */
/* beanstalkd as a backend of the peers' driver (peers.h), over its text protocol. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_http.h"
#include "peers.h"

#include "common/banned.h"

#define TTR_S 60

static struct bench_node g_node;
static int g_wait_s;

struct bconn {
    struct bench_conn conn;
    const struct bench_agent *tube; /* the tube `use`d, NULL for default */
};

int bench_beanstalkd_init(const char *url, int wait_s)
{
    g_wait_s = wait_s;
    return bench_node_parse(url, &g_node);
}

static int answer(struct bconn *b, const char *what, char **line)
{
    size_t len;
    if (bench_conn_line(&b->conn, line, &len) != 0) {
        bench_report("roost_load: beanstalkd %s: connection error (%s)", what,
                     errno ? strerror(errno) : "closed");
        return -1;
    }
    return 0;
}

/* Sends `cmd` and checks that the answer starts with `want`. */
static int simple(struct bconn *b, const char *cmd, const char *want)
{
    char *line;
    if (bench_conn_send(&b->conn, cmd, strlen(cmd)) != 0 || answer(b, cmd, &line) != 0) {
        return -1;
    }
    if (strncmp(line, want, strlen(want)) != 0) {
        bench_report("roost_load: beanstalkd %.*s: %s", (int)strcspn(cmd, "\r"), cmd, line);
        return -1;
    }
    return 0;
}

static void *bs_open(enum bench_role role, int idx)
{
    struct bconn *b = calloc(1, sizeof *b);
    if (!b) {
        return NULL;
    }
    bench_conn_init(&b->conn, &g_node, NULL, 30 + g_wait_s);
    if (role == BENCH_CONSUMER) {
        char cmd[160];
        snprintf(cmd, sizeof cmd, "watch %s\r\n", bench_agents[idx % bench_n_agents].name);
        if (simple(b, cmd, "WATCHING 2") != 0 ||
            simple(b, "ignore default\r\n", "WATCHING 1") != 0) {
            bench_conn_free(&b->conn);
            free(b);
            return NULL;
        }
    }
    return b;
}

static void bs_close(void *c)
{
    struct bconn *b = c;
    bench_conn_free(&b->conn);
    free(b);
}

/* `use` travels with the put when the agent changes: one round trip either way. */
static int bs_publish(void *c, struct bench_agent *a, const char *payload, int len)
{
    struct bconn *b = c;
    char cmd[1400];
    int off = 0;
    bool use = b->tube != a;
    if (use) {
        off = snprintf(cmd, sizeof cmd, "use %s\r\n", a->name);
    }
    off += snprintf(cmd + off, sizeof cmd - (size_t)off, "put 0 0 %d %d\r\n%.*s\r\n", TTR_S, len,
                    len, payload);
    if ((size_t)off >= sizeof cmd) {
        return BENCH_FAIL;
    }
    char *line;
    if (bench_conn_send(&b->conn, cmd, (size_t)off) != 0) {
        b->tube = NULL; /* a new connection uses default */
        return BENCH_FAIL;
    }
    if (use) {
        if (answer(b, "use", &line) != 0 || strncmp(line, "USING ", 6) != 0) {
            b->tube = NULL;
            bench_conn_close(&b->conn);
            return BENCH_FAIL;
        }
        b->tube = a;
    }
    if (answer(b, "put", &line) != 0) {
        b->tube = NULL;
        return BENCH_FAIL;
    }
    if (strncmp(line, "INSERTED ", 9) != 0) {
        bench_report("roost_load: beanstalkd put: %s", line);
        return BENCH_FAIL;
    }
    return BENCH_OK;
}

static int bs_claim(void *c, struct bench_agent *a, int limit, struct bench_event *out)
{
    struct bconn *b = c;
    (void)a;
    (void)limit;
    char cmd[64], *line, *data;
    snprintf(cmd, sizeof cmd, "reserve-with-timeout %d\r\n", g_wait_s);
    if (bench_conn_send(&b->conn, cmd, strlen(cmd)) != 0 || answer(b, "reserve", &line) != 0) {
        return BENCH_FAIL;
    }
    if (strcmp(line, "TIMED_OUT") == 0 || strcmp(line, "DEADLINE_SOON") == 0) {
        return 0;
    }
    long long id;
    size_t bytes;
    if (sscanf(line, "RESERVED %lld %zu", &id, &bytes) != 2) {
        bench_report("roost_load: beanstalkd reserve: %s", line);
        bench_conn_close(&b->conn);
        return BENCH_FAIL;
    }
    if (bench_conn_bytes(&b->conn, bytes, &data) != 0 ||
        bench_payload_time(data, bytes, &out[0].t_ns) != 0) {
        bench_report("roost_load: beanstalkd reserve: a job without the payload's time");
        bench_conn_close(&b->conn);
        return BENCH_FAIL;
    }
    out[0].id = id;
    return 1;
}

static int bs_ack(void *c, struct bench_agent *a, const struct bench_event *ev)
{
    (void)a;
    char cmd[64];
    snprintf(cmd, sizeof cmd, "delete %lld\r\n", (long long)ev->id);
    return simple(c, cmd, "DELETED") == 0 ? BENCH_OK : BENCH_FAIL;
}

const struct bench_backend bench_beanstalkd = {
    .tool = "roost_load",
    .open = bs_open,
    .close = bs_close,
    .publish = bs_publish,
    .claim = bs_claim,
    .ack = bs_ack,
    .claim_waits = true,
};
