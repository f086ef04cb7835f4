/* SPDX-License-Identifier: MIT */
/* roost_load: closed-loop load generator for BENCHMARKS.md scenario 1 ("full cycle"), the one
 * driver of roostd and of the peers it is compared with (bench_peer.h: the loops and the counts;
 * peers.h: Redis Streams for --url redis://HOST:PORT, beanstalkd for beanstalk://HOST:PORT, the
 * same producers, consumers, agents, payload and counting as against roostd).
 *
 * P producer threads each publish one ~100-byte event (POST /api/v1/events) and wait for the 201;
 * C consumer threads each claim up to --limit events (POST …/inbox/claim, long poll wait_s=1) and
 * ack each one (POST …/inbox/{event_id}/ack) or, with --batch-ack, all of them in one
 * POST …/inbox/ack. Producers and consumers share --agents agents (default one per consumer;
 * producers round-robin over them). Every thread owns one keep-alive HTTP/1.1 connection on a plain
 * blocking socket, so the driver spends as little CPU as possible per call.
 *
 * The publish time (CLOCK_MONOTONIC ns) travels inside the payload; latency is taken when the ack
 * succeeds. With --rate the producers are paced to N events/s in total and the embedded time is the
 * scheduled send time (no coordinated omission when a producer falls behind).
 *
 * With several servers (--url repeated, or a comma list: nodes of one cluster sharing a database
 * and a token key) producer i and consumer i talk to server i % n.
 *
 * Counts are taken inside the measurement window only (after --warmup, for --seconds); with
 * BENCH_WINDOW_FILE set, "begin" and "end" are written to it as the window opens and closes
 * (bench_window_run, with BENCH_WINDOW_ACK's handshake). Output: one "RESULT key=value …" line
 * on stdout; diagnostics on stderr. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "bench_common.h"
#include "bench_http.h"
#include "bench_peer.h"
#include "common/limits.h"
#include "peers.h"

#include "common/banned.h"

#define MAX_NODES 64

struct opts {
    char urls[MAX_NODES][256];
    int n_urls;
    const char *data_dir;
    const char *key_file;
    const char *target;
    char prefix[96];
    struct bench_drive_opts d; /* --producers … --payload-bytes */
    int lease_s;
    int wait_s;
};

static struct opts g;
static char *g_auth_header; /* "Authorization: Bearer …\r\n" */
static struct bench_node g_nodes[MAX_NODES];
static int g_n_nodes;

/* ---- roostd over HTTP: the backend of the driver (bench_peer.h) ---- */

struct hconn {
    struct bench_conn conn;
    char *batch_body;
    size_t batch_cap;
};

static void report_error(const char *what, const char *path, int rc, int status, const char *body,
                         size_t body_len)
{
    while (body && body_len > 0 && (body[body_len - 1] == '\n' || body[body_len - 1] == '\r')) {
        body_len--;
    }
    if (rc != 0) {
        bench_report("roost_load: %s %s: connection error (%s)", what, path,
                     errno ? strerror(errno) : "closed");
    } else {
        bench_report("roost_load: %s %s: HTTP %d %.*s", what, path, status,
                     (int)(body_len > 300 ? 300 : body_len), body ? body : "");
    }
}

static void *http_open(enum bench_role role, int idx)
{
    (void)role;
    struct hconn *h = calloc(1, sizeof *h);
    if (!h) {
        return NULL;
    }
    /* Long polls wait at most wait_s; anything far beyond that is a hung server. */
    bench_conn_init(&h->conn, &g_nodes[idx % g_n_nodes], g_auth_header, 30 + g.wait_s);
    return h;
}

static void http_close(void *c)
{
    struct hconn *h = c;
    bench_conn_free(&h->conn);
    free(h->batch_body);
    free(h);
}

static int http_publish(void *c, struct bench_agent *a, const char *payload, int len)
{
    struct hconn *h = c;
    char body[2048];
    int blen = snprintf(body, sizeof body, "{\"recipients\":[\"%s\"],\"payload\":%.*s}", a->name,
                        len, payload);
    int status = 0;
    const char *resp = NULL;
    size_t resp_len = 0;
    int rc =
        bench_http_post(&h->conn, "/api/v1/events", body, (size_t)blen, &status, &resp, &resp_len);
    if (rc == 0 && status == 201) {
        return BENCH_OK;
    }
    report_error("publish", "/api/v1/events", rc, status, resp, resp_len);
    return BENCH_FAIL;
}

static bool copy_str(char *out, const json_t *v)
{
    if (!json_is_string(v) || json_string_length(v) >= BENCH_KEY_MAX) {
        return false;
    }
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return true;
}

/* Parses a claim answer into `out`; returns the number of events or -1. */
static int parse_claim(const char *resp, size_t len, struct bench_event *out, int max)
{
    json_error_t jerr;
    json_t *root = json_loadb(resp, len, 0, &jerr);
    json_t *events = root ? json_object_get(root, "events") : NULL;
    if (!json_is_array(events) || json_array_size(events) > (size_t)max) {
        json_decref(root);
        return -1;
    }
    int n = 0;
    size_t i;
    json_t *ev;
    json_array_foreach(events, i, ev)
    {
        json_t *t = json_object_get(json_object_get(ev, "payload"), "t");
        if (!copy_str(out[n].key, json_object_get(ev, "event_id")) ||
            !copy_str(out[n].token, json_object_get(ev, "lease_token")) || !json_is_integer(t)) {
            json_decref(root);
            return -1;
        }
        out[n].t_ns = (int64_t)json_integer_value(t);
        n++;
    }
    json_decref(root);
    return n;
}

static int http_claim(void *c, struct bench_agent *a, int limit, struct bench_event *out)
{
    struct hconn *h = c;
    char path[256], body[128];
    snprintf(path, sizeof path, "/api/v1/agents/%s/inbox/claim", a->name);
    int blen = snprintf(body, sizeof body, "{\"limit\":%d,\"lease_s\":%d,\"wait_s\":%d}", limit,
                        g.lease_s, g.wait_s);
    int status = 0;
    const char *resp = NULL;
    size_t resp_len = 0;
    int rc = bench_http_post(&h->conn, path, body, (size_t)blen, &status, &resp, &resp_len);
    if (rc != 0 || status != 200) {
        report_error("claim", path, rc, status, resp, resp_len);
        return BENCH_FAIL;
    }
    int n = parse_claim(resp, resp_len, out, limit);
    if (n < 0) {
        report_error("claim (unparsable answer)", path, 0, status, resp, resp_len);
        return BENCH_FAIL;
    }
    return n;
}

static int http_ack(void *c, struct bench_agent *a, const struct bench_event *ev)
{
    struct hconn *h = c;
    char path[512], body[160];
    snprintf(path, sizeof path, "/api/v1/agents/%s/inbox/%s/ack", a->name, ev->key);
    int blen = snprintf(body, sizeof body, "{\"lease_token\":\"%s\"}", ev->token);
    int status = 0;
    const char *resp = NULL;
    size_t resp_len = 0;
    int rc = bench_http_post(&h->conn, path, body, (size_t)blen, &status, &resp, &resp_len);
    if (rc == 0 && status == 200) {
        return BENCH_OK;
    }
    report_error("ack", path, rc, status, resp, resp_len);
    return BENCH_FAIL;
}

/* POST …/inbox/ack with every event of the claim; each result must say completed. */
static int http_ack_batch(void *c, struct bench_agent *a, const struct bench_event *evs, int n)
{
    struct hconn *h = c;
    size_t cap = (size_t)n * (2 * BENCH_KEY_MAX + 40) + 32;
    if (cap > h->batch_cap) {
        char *p = realloc(h->batch_body, cap);
        if (!p) {
            return BENCH_FAIL;
        }
        h->batch_body = p;
        h->batch_cap = cap;
    }
    size_t off = (size_t)snprintf(h->batch_body, cap, "{\"acks\":[");
    for (int i = 0; i < n; i++) {
        off += (size_t)snprintf(h->batch_body + off, cap - off,
                                "%s{\"event_id\":\"%s\",\"lease_token\":\"%s\"}", i ? "," : "",
                                evs[i].key, evs[i].token);
    }
    off += (size_t)snprintf(h->batch_body + off, cap - off, "]}");
    char path[256];
    snprintf(path, sizeof path, "/api/v1/agents/%s/inbox/ack", a->name);
    int status = 0;
    const char *resp = NULL;
    size_t resp_len = 0;
    int rc = bench_http_post(&h->conn, path, h->batch_body, off, &status, &resp, &resp_len);
    if (rc != 0 || status != 200) {
        report_error("batch ack", path, rc, status, resp, resp_len);
        return BENCH_FAIL;
    }
    json_t *root = json_loadb(resp, resp_len, 0, NULL);
    json_t *results = root ? json_object_get(root, "results") : NULL;
    int ok = json_is_array(results) && json_array_size(results) == (size_t)n;
    for (int i = 0; ok && i < n; i++) {
        const char *st =
            json_string_value(json_object_get(json_array_get(results, (size_t)i), "status"));
        ok = st && strcmp(st, "completed") == 0;
    }
    if (!ok) {
        report_error("batch ack (unexpected answer)", path, 0, status, resp, resp_len);
    }
    json_decref(root);
    return ok ? BENCH_OK : BENCH_FAIL;
}

static const struct bench_backend roostd_backend = {
    .tool = "roost_load",
    .open = http_open,
    .close = http_close,
    .publish = http_publish,
    .claim = http_claim,
    .ack = http_ack,
    .ack_batch = http_ack_batch,
    .claim_waits = true,
};

/* ---- setup ---- */

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: roost_load [options]\n"
        "  --url http://HOST:PORT   server (default: read DATA_DIR/ready); repeat it or give a\n"
        "                           comma list for several nodes: producer/consumer i uses\n"
        "                           node i %% n (the nodes must share the token key);\n"
        "                           redis://HOST:PORT (Redis Streams) or beanstalk://HOST:PORT\n"
        "                           (beanstalkd) drive that peer the same way\n"
        "  --data-dir DIR           roostd data dir: ready file and " ROOST_TOKEN_KEY_FILE "\n"
        "  --key-file PEM           Ed25519 key to sign the token (default "
        "DATA_DIR/" ROOST_TOKEN_KEY_FILE ";\n"
        "                           without one an ephemeral key signs a same-sized token)\n"
        "  --producers P            publishing threads (default 2)\n"
        "  --consumers C            claiming threads (default 2)\n"
        "  --agents A               agents shared by both sides (default C)\n"
        "  --seconds S              measurement window (default 10)\n"
        "  --warmup W               warm-up before the window (default 2)\n"
        "  --rate N                 pace producers to N events/s in total (default: "
        "closed loop)\n"
        "  --batch-ack              ack a claimed batch with one POST …/inbox/ack\n"
        "  --limit L                claim limit (default 10)\n"
        "  --wait S                 claim long-poll wait_s (default 1)\n"
        "  --payload-bytes B        payload size (default 100)\n"
        "  --agent-prefix STR       agent names are STR<n> (default bench-agent-<pid>-)\n"
        "  --target NAME            label printed in the result line (default: roostd, redis or\n"
        "                           beanstalkd, by the URL)\n");
}

static int parse_url(const char *url)
{
    if (g_n_nodes >= MAX_NODES) {
        return -1;
    }
    struct bench_node *n = &g_nodes[g_n_nodes];
    if (bench_node_parse(url, n) != 0) {
        return -1;
    }
    g_n_nodes++;
    return 0;
}

/* Adds the URLs of one --url argument (a comma list). */
static void add_urls(const char *arg)
{
    const char *p = arg;
    while (*p) {
        size_t len = strcspn(p, ",");
        if (len > 0) {
            if (g.n_urls >= MAX_NODES || len >= sizeof g.urls[0]) {
                fprintf(stderr, "roost_load: too many or too long --url values\n");
                exit(2);
            }
            memcpy(g.urls[g.n_urls], p, len);
            g.urls[g.n_urls][len] = '\0';
            g.n_urls++;
        }
        p += len;
        if (*p == ',') {
            p++;
        }
    }
}

int main(int argc, char **argv)
{
    enum { O_URL = 256, O_DATA, O_KEY, O_WAIT, O_PREFIX, O_TARGET };
    static const struct option opts[] = {
        {"url", required_argument, NULL, O_URL},
        {"data-dir", required_argument, NULL, O_DATA},
        {"key-file", required_argument, NULL, O_KEY},
        {"wait", required_argument, NULL, O_WAIT},
        {"agent-prefix", required_argument, NULL, O_PREFIX},
        {"target", required_argument, NULL, O_TARGET},
        BENCH_DRIVE_OPTIONS, /* --producers … --payload-bytes */
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    bench_drive_defaults(&g.d);
    g.lease_s = 60;
    g.wait_s = 1;
    g.target = NULL; /* default: the system's name */
    snprintf(g.prefix, sizeof g.prefix, "bench-agent-%ld-", (long)getpid());
    const struct bench_drive_bounds bounds = {0, 1000000, 1000};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        if (bench_drive_option(&g.d, &bounds, c, optarg)) {
            continue;
        }
        switch (c) {
        case O_URL:
            add_urls(optarg);
            break;
        case O_DATA:
            g.data_dir = optarg;
            break;
        case O_KEY:
            g.key_file = optarg;
            break;
        case O_WAIT:
            g.wait_s = (int)bench_parse_num("--wait", optarg, 0, 30);
            break;
        case O_PREFIX:
            snprintf(g.prefix, sizeof g.prefix, "%s", optarg);
            break;
        case O_TARGET:
            g.target = optarg;
            break;
        case 'h':
            usage(stdout);
            return 0;
        default:
            usage(stderr);
            return 2;
        }
    }
    if (optind < argc) {
        usage(stderr);
        return 2;
    }
    if (g.d.agents == 0) {
        g.d.agents = g.d.consumers;
    }

    char path[4096];
    if (g.n_urls == 0 && g.data_dir) {
        snprintf(path, sizeof path, "%s/ready", g.data_dir);
        char *url = bench_read_line(path);
        if (!url) {
            fprintf(stderr, "roost_load: cannot read the URL from %s\n", path);
            return 2;
        }
        add_urls(url);
        free(url);
    }
    if (g.n_urls == 0) {
        fprintf(stderr, "roost_load: need --url http://HOST:PORT or --data-dir\n");
        return 2;
    }
    /* The scheme names the system; only roostd takes several nodes and a token. */
    const struct bench_backend *backend = &roostd_backend;
    int bad = 0;
    if (strncmp(g.urls[0], "redis://", 8) == 0) {
        backend = &bench_redis;
        bad = g.n_urls != 1 || bench_redis_init(g.urls[0], g.wait_s) != 0;
        g.target = g.target ? g.target : "redis";
    } else if (strncmp(g.urls[0], "beanstalk://", 12) == 0) {
        backend = &bench_beanstalkd;
        bad = g.n_urls != 1 || bench_beanstalkd_init(g.urls[0], g.wait_s) != 0;
        g.target = g.target ? g.target : "beanstalkd";
    } else {
        for (int i = 0; i < g.n_urls && !bad; i++) {
            bad = strncmp(g.urls[i], "http://", 7) != 0 || parse_url(g.urls[i]) != 0;
        }
    }
    if (bad) {
        fprintf(stderr,
                "roost_load: bad --url '%s' (http://HOST:PORT[,…], redis://HOST:PORT or "
                "beanstalk://HOST:PORT)\n",
                g.urls[0]);
        return 2;
    }
    if (backend == &roostd_backend) {
        g.target = g.target ? g.target : "roostd";
        const char *key_file = g.key_file;
        if (!key_file && g.data_dir) {
            snprintf(path, sizeof path, "%s/" ROOST_TOKEN_KEY_FILE, g.data_dir);
            key_file = path;
        }
        g_auth_header = bench_auth_header("roost_load", key_file, "roost-load",
                                          "agent:*:publish agent:*:consume");
        if (!g_auth_header) {
            return 1;
        }
    }

    g.d.agent_prefix = g.prefix;
    struct bench_result *total = calloc(1, sizeof *total);
    if (!total || bench_drive(backend, &g.d, total) != 0) {
        return 1;
    }
    char extra[32];
    snprintf(extra, sizeof extra, "nodes=%d", g.n_urls);
    bench_print_result("roost_load", g.target, extra, g.d.producers, g.d.consumers, g.d.agents,
                       g.d.batch_ack, g.d.rate, g.d.warmup_s, g.d.seconds, total);
    free(total);
    free(g_auth_header);
    return 0;
}
