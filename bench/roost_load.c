/* SPDX-License-Identifier: MIT */
/* roost_load: closed-loop load generator for BENCHMARKS.md scenario 1 ("full cycle").
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
#include "common/limits.h"

#include "common/banned.h"

#define MAX_ERROR_REPORTS 10
#define ID_MAX 64
#define MAX_NODES 64

struct opts {
    char urls[MAX_NODES][256];
    int n_urls;
    const char *data_dir;
    const char *key_file;
    const char *target;
    char prefix[96];
    int producers;
    int consumers;
    int agents;
    double seconds;
    double warmup;
    double rate;
    bool batch_ack;
    int limit;
    int lease_s;
    int wait_s;
    int payload_bytes;
};

static struct opts g;
static atomic_bool g_stop;
static int64_t g_start_ns;
static char *g_auth_header; /* "Authorization: Bearer …\r\n" */
static struct bench_node g_nodes[MAX_NODES];
static int g_n_nodes;
static atomic_int g_error_reports;

/* ---- workers ---- */

struct worker {
    pthread_t thread;
    int idx;
    struct bench_conn conn;
    struct bench_result res;
};

static void report_error(struct worker *w, const char *what, const char *path, int rc, int status,
                         const char *body, size_t body_len)
{
    w->res.errors++;
    if (atomic_fetch_add(&g_error_reports, 1) >= MAX_ERROR_REPORTS) {
        return;
    }
    while (body && body_len > 0 && (body[body_len - 1] == '\n' || body[body_len - 1] == '\r')) {
        body_len--;
    }
    if (rc != 0) {
        fprintf(stderr, "roost_load: %s %s: connection error (%s)\n", what, path,
                errno ? strerror(errno) : "closed");
    } else {
        fprintf(stderr, "roost_load: %s %s: HTTP %d %.*s\n", what, path, status,
                (int)(body_len > 300 ? 300 : body_len), body ? body : "");
    }
}

static void agent_name(char *out, size_t cap, int agent)
{
    snprintf(out, cap, "%s%d", g.prefix, agent);
}

static void *producer_main(void *arg)
{
    struct worker *w = arg;
    char agent[160], payload[1024], body[2048];
    int64_t period = g.rate > 0 ? (int64_t)(1e9 * g.producers / g.rate) : 0;
    int64_t next = g_start_ns + (period ? period * w->idx / g.producers : 0);
    for (uint64_t k = 0; !atomic_load_explicit(&g_stop, memory_order_relaxed); k++) {
        int64_t t0;
        if (period) {
            int64_t end = bench_window_end_ns();
            bench_sleep_until(next < end ? next : end);
            if (atomic_load_explicit(&g_stop, memory_order_relaxed)) {
                break;
            }
            t0 = next;
            next += period;
        } else {
            t0 = bench_now_ns();
        }
        agent_name(agent, sizeof agent, (int)((uint64_t)w->idx + k) % g.agents);
        int plen = bench_payload(payload, sizeof payload, t0, (size_t)g.payload_bytes);
        int blen = snprintf(body, sizeof body, "{\"recipients\":[\"%s\"],\"payload\":%.*s}", agent,
                            plen, payload);
        int status = 0;
        const char *resp = NULL;
        size_t resp_len = 0;
        int64_t s = bench_now_ns();
        int rc = bench_http_post(&w->conn, "/api/v1/events", body, (size_t)blen, &status, &resp,
                                 &resp_len);
        int64_t e = bench_now_ns();
        if (rc == 0 && status == 201) {
            if (bench_in_window(e)) {
                w->res.published++;
                hist_add(&w->res.publish_rtt, e - s);
            }
        } else {
            report_error(w, "publish", "/api/v1/events", rc, status, resp, resp_len);
            if (rc != 0) {
                usleep(10000);
            }
        }
    }
    return NULL;
}

struct claimed {
    char event_id[ID_MAX];
    char lease_token[ID_MAX];
    int64_t t_ns;
};

static bool copy_str(char *out, const json_t *v)
{
    if (!json_is_string(v) || json_string_length(v) >= ID_MAX) {
        return false;
    }
    memcpy(out, json_string_value(v), json_string_length(v) + 1);
    return true;
}

/* Parses a claim answer into `out`; returns the number of events or -1. */
static int parse_claim(const char *resp, size_t len, struct claimed *out, int max)
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
        if (!copy_str(out[n].event_id, json_object_get(ev, "event_id")) ||
            !copy_str(out[n].lease_token, json_object_get(ev, "lease_token")) ||
            !json_is_integer(t)) {
            json_decref(root);
            return -1;
        }
        out[n].t_ns = (int64_t)json_integer_value(t);
        n++;
    }
    json_decref(root);
    return n;
}

static void record_ack(struct worker *w, const struct claimed *ev, int64_t now)
{
    if (bench_in_window(now)) {
        w->res.acked++;
        hist_add(&w->res.latency, now - ev->t_ns);
    }
}

static void *consumer_main(void *arg)
{
    struct worker *w = arg;
    char agent[160], claim_path[256], ack_path[512], claim_body[128], single_body[160];
    struct claimed *evs = calloc((size_t)g.limit, sizeof *evs);
    size_t batch_cap = (size_t)g.limit * (2 * ID_MAX + 40) + 32;
    char *batch_body = malloc(batch_cap);
    if (!evs || !batch_body) {
        fprintf(stderr, "roost_load: out of memory\n");
        exit(1);
    }
    agent_name(agent, sizeof agent, w->idx % g.agents);
    snprintf(claim_path, sizeof claim_path, "/api/v1/agents/%s/inbox/claim", agent);
    int claim_len =
        snprintf(claim_body, sizeof claim_body, "{\"limit\":%d,\"lease_s\":%d,\"wait_s\":%d}",
                 g.limit, g.lease_s, g.wait_s);
    while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
        int status = 0;
        const char *resp = NULL;
        size_t resp_len = 0;
        int rc = bench_http_post(&w->conn, claim_path, claim_body, (size_t)claim_len, &status,
                                 &resp, &resp_len);
        if (rc != 0 || status != 200) {
            report_error(w, "claim", claim_path, rc, status, resp, resp_len);
            usleep(10000);
            continue;
        }
        int n = parse_claim(resp, resp_len, evs, g.limit);
        if (n < 0) {
            report_error(w, "claim (unparsable answer)", claim_path, 0, status, resp, resp_len);
            continue;
        }
        if (n == 0) {
            continue;
        }
        if (bench_in_window(bench_now_ns())) {
            w->res.claims++;
        }
        if (g.batch_ack) {
            size_t off = (size_t)snprintf(batch_body, batch_cap, "{\"acks\":[");
            for (int i = 0; i < n; i++) {
                off += (size_t)snprintf(batch_body + off, batch_cap - off,
                                        "%s{\"event_id\":\"%s\",\"lease_token\":\"%s\"}",
                                        i ? "," : "", evs[i].event_id, evs[i].lease_token);
            }
            off += (size_t)snprintf(batch_body + off, batch_cap - off, "]}");
            snprintf(ack_path, sizeof ack_path, "/api/v1/agents/%s/inbox/ack", agent);
            int64_t s = bench_now_ns();
            rc = bench_http_post(&w->conn, ack_path, batch_body, off, &status, &resp, &resp_len);
            int64_t e = bench_now_ns();
            if (rc != 0 || status != 200) {
                report_error(w, "batch ack", ack_path, rc, status, resp, resp_len);
                continue;
            }
            if (bench_in_window(e)) {
                hist_add(&w->res.ack_rtt, e - s);
            }
            json_t *root = json_loadb(resp, resp_len, 0, NULL);
            json_t *results = root ? json_object_get(root, "results") : NULL;
            if (!json_is_array(results) || json_array_size(results) != (size_t)n) {
                report_error(w, "batch ack (unexpected answer)", ack_path, 0, status, resp,
                             resp_len);
                json_decref(root);
                continue;
            }
            for (int i = 0; i < n; i++) {
                const char *st = json_string_value(
                    json_object_get(json_array_get(results, (size_t)i), "status"));
                if (st && strcmp(st, "completed") == 0) {
                    record_ack(w, &evs[i], e);
                } else {
                    report_error(w, "batch ack item", ack_path, 0, status, resp, resp_len);
                }
            }
            json_decref(root);
        } else {
            for (int i = 0; i < n; i++) {
                snprintf(ack_path, sizeof ack_path, "/api/v1/agents/%s/inbox/%s/ack", agent,
                         evs[i].event_id);
                int blen = snprintf(single_body, sizeof single_body, "{\"lease_token\":\"%s\"}",
                                    evs[i].lease_token);
                int64_t s = bench_now_ns();
                rc = bench_http_post(&w->conn, ack_path, single_body, (size_t)blen, &status, &resp,
                                     &resp_len);
                int64_t e = bench_now_ns();
                if (rc == 0 && status == 200) {
                    if (bench_in_window(e)) {
                        hist_add(&w->res.ack_rtt, e - s);
                    }
                    record_ack(w, &evs[i], e);
                } else {
                    report_error(w, "ack", ack_path, rc, status, resp, resp_len);
                }
            }
        }
    }
    free(evs);
    free(batch_body);
    return NULL;
}

/* ---- setup ---- */

static void usage(FILE *out)
{
    fprintf(
        out,
        "usage: roost_load [options]\n"
        "  --url http://HOST:PORT   server (default: read DATA_DIR/ready); repeat it or give a\n"
        "                           comma list for several nodes: producer/consumer i uses\n"
        "                           node i %% n (the nodes must share the token key)\n"
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
        "  --target NAME            label printed in the result line (default roostd)\n");
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

static char *mint_token(const char *key_file)
{
    return bench_mint_token("roost_load", key_file, "roost-load",
                            "agent:*:publish agent:*:consume");
}

int main(int argc, char **argv)
{
    enum {
        O_URL = 256,
        O_DATA,
        O_KEY,
        O_P,
        O_C,
        O_A,
        O_SEC,
        O_WARM,
        O_RATE,
        O_BATCH,
        O_LIMIT,
        O_WAIT,
        O_PAYLOAD,
        O_PREFIX,
        O_TARGET
    };
    static const struct option opts[] = {
        {"url", required_argument, NULL, O_URL},
        {"data-dir", required_argument, NULL, O_DATA},
        {"key-file", required_argument, NULL, O_KEY},
        {"producers", required_argument, NULL, O_P},
        {"consumers", required_argument, NULL, O_C},
        {"agents", required_argument, NULL, O_A},
        {"seconds", required_argument, NULL, O_SEC},
        {"warmup", required_argument, NULL, O_WARM},
        {"rate", required_argument, NULL, O_RATE},
        {"batch-ack", no_argument, NULL, O_BATCH},
        {"limit", required_argument, NULL, O_LIMIT},
        {"wait", required_argument, NULL, O_WAIT},
        {"payload-bytes", required_argument, NULL, O_PAYLOAD},
        {"agent-prefix", required_argument, NULL, O_PREFIX},
        {"target", required_argument, NULL, O_TARGET},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    g.producers = 2;
    g.consumers = 2;
    g.seconds = 10;
    g.warmup = 2;
    g.limit = 10;
    g.lease_s = 60;
    g.wait_s = 1;
    g.payload_bytes = 100;
    g.target = "roostd";
    snprintf(g.prefix, sizeof g.prefix, "bench-agent-%ld-", (long)getpid());
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
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
        case O_P:
            g.producers = (int)bench_parse_num("--producers", optarg, 0, 1024);
            break;
        case O_C:
            g.consumers = (int)bench_parse_num("--consumers", optarg, 1, 1024);
            break;
        case O_A:
            g.agents = (int)bench_parse_num("--agents", optarg, 1, 1000000);
            break;
        case O_SEC:
            g.seconds = bench_parse_num("--seconds", optarg, 0.1, 86400);
            break;
        case O_WARM:
            g.warmup = bench_parse_num("--warmup", optarg, 0, 86400);
            break;
        case O_RATE:
            g.rate = bench_parse_num("--rate", optarg, 0, 1e7);
            break;
        case O_BATCH:
            g.batch_ack = true;
            break;
        case O_LIMIT:
            g.limit = (int)bench_parse_num("--limit", optarg, 1, 1000);
            break;
        case O_WAIT:
            g.wait_s = (int)bench_parse_num("--wait", optarg, 0, 30);
            break;
        case O_PAYLOAD:
            g.payload_bytes = (int)bench_parse_num("--payload-bytes", optarg, 16, 900);
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
    if (g.agents == 0) {
        g.agents = g.consumers;
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
    for (int i = 0; i < g.n_urls; i++) {
        if (parse_url(g.urls[i]) != 0) {
            fprintf(stderr, "roost_load: bad URL '%s' (http://HOST:PORT)\n", g.urls[i]);
            return 2;
        }
    }
    const char *key_file = g.key_file;
    if (!key_file && g.data_dir) {
        snprintf(path, sizeof path, "%s/" ROOST_TOKEN_KEY_FILE, g.data_dir);
        key_file = path;
    }
    char *token = mint_token(key_file);
    if (!token) {
        return 1;
    }
    size_t hlen = strlen(token) + 40;
    g_auth_header = malloc(hlen);
    if (!g_auth_header) {
        return 1;
    }
    snprintf(g_auth_header, hlen, "Authorization: Bearer %s\r\n", token);
    free(token);

    int nw = g.producers + g.consumers;
    struct worker *ws = calloc((size_t)nw, sizeof *ws);
    if (!ws) {
        return 1;
    }
    g_start_ns = bench_now_ns();
    bench_window_plan(g.warmup, g.seconds);
    for (int i = 0; i < nw; i++) {
        ws[i].idx = i < g.producers ? i : i - g.producers;
        /* Long polls wait at most wait_s; anything far beyond that is a hung server. */
        bench_conn_init(&ws[i].conn, &g_nodes[ws[i].idx % g_n_nodes], g_auth_header, 30 + g.wait_s);
        if (pthread_create(&ws[i].thread, NULL, i < g.producers ? producer_main : consumer_main,
                           &ws[i]) != 0) {
            fprintf(stderr, "roost_load: cannot start thread %d\n", i);
            return 1;
        }
    }
    bench_window_run();
    atomic_store(&g_stop, true);
    struct bench_result *total = calloc(1, sizeof *total);
    if (!total) {
        return 1;
    }
    for (int i = 0; i < nw; i++) {
        pthread_join(ws[i].thread, NULL);
        bench_result_merge(total, &ws[i].res);
        bench_conn_free(&ws[i].conn);
    }
    char extra[32];
    snprintf(extra, sizeof extra, "nodes=%d", g_n_nodes);
    bench_print_result("roost_load", g.target, extra, g.producers, g.consumers, g.agents,
                       g.batch_ack, g.rate, g.warmup, g.seconds, total);
    free(total);
    free(ws);
    free(g_auth_header);
    return 0;
}
