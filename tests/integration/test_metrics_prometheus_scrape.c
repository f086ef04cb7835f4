/* SPDX-License-Identifier: MIT */
/* A real Prometheus server (Debian's `prometheus` binary) scrapes roostd every second on
 * loopback, and a series comes back through its HTTP API (/api/v1/query) with the value roostd
 * counted: the exposition is not only well-formed but ingested. A missing binary fails, never
 * skips (make test installs it). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/harness.h"

#include "common/banned.h"

#define PROMETHEUS_BIN "prometheus"

/* A loopback port free right now (Prometheus has no port-0 + ready-file mode). */
static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    int port = -1;
    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &sl) == 0) {
        port = ntohs(sa.sin_port);
    }
    if (fd >= 0) {
        close(fd);
    }
    return port;
}

static pid_t start_prometheus(const char *dir, int port, const struct roostd *target)
{
    char *conf = h_fmt("%s/prometheus.yml", dir);
    FILE *f = fopen(conf, "w");
    if (f == NULL) {
        free(conf);
        return -1;
    }
    fprintf(f,
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
            "scrape_configs:\n  - job_name: roost\n    metrics_path: /metrics\n"
            "    static_configs:\n      - targets: ['%s:%d']\n",
            target->host, target->port);
    fclose(f);
    char *storage = h_fmt("--storage.tsdb.path=%s/data", dir);
    char *cfg = h_fmt("--config.file=%s", conf);
    char *listen = h_fmt("--web.listen-address=127.0.0.1:%d", port);
    char *logp = h_fmt("%s/prometheus.log", dir);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *lf = freopen(logp, "w", stderr);
        (void)lf;
        dup2(2, 1);
        execlp(PROMETHEUS_BIN, PROMETHEUS_BIN, cfg, storage, listen, "--log.level=warn",
               (char *)NULL);
        fprintf(stderr, "exec %s: %s\n", PROMETHEUS_BIN, strerror(errno));
        _exit(127);
    }
    free(conf);
    free(storage);
    free(cfg);
    free(listen);
    free(logp);
    return pid;
}

static bool child_alive(pid_t pid)
{
    return waitpid(pid, NULL, WNOHANG) == 0;
}

/* The value of an instant query's first result as a string, or NULL. */
static char *query_value(struct h_client *c, const char *query_escaped)
{
    json_t *res = NULL;
    long st = 0;
    char *path = h_fmt("/api/v1/query?query=%s", query_escaped);
    char *out = NULL;
    if (http_request(c, "GET", path, NULL, NULL, &st, &res) == 0 && st == 200) {
        json_t *result = json_object_get(json_object_get(res, "data"), "result");
        json_t *value = json_object_get(h_at(result, 0), "value");
        const char *v = json_string_value(json_array_get(value, 1));
        if (v != NULL) {
            out = h_fmt("%s", v);
        }
    }
    free(path);
    json_decref(res);
    return out;
}

static void test_prometheus_scrapes_roostd(void)
{
    struct roostd d;
    static const char *const sets[] = {"metrics.refresh_ms=100", "store.synchronous=normal", NULL};
    if (!roostd_start_checked(&d, NULL, sets)) {
        return;
    }
    char *tok = h_token(&d, "t1", "agent:*:consume agent:*:publish");
    CHECK(h_publish(d.http, tok, "p.a", json_object(), NULL, NULL) > 0);
    CHECK(h_publish(d.http, tok, "p.a", json_object(), NULL, NULL) > 0);

    char dir[] = "/tmp/roost-prom-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    int port = free_port();
    CHECK(port > 0);
    pid_t pid = start_prometheus(dir, port, &d);
    CHECK(pid > 0);
    char *base = h_fmt("http://127.0.0.1:%d", port);
    struct h_client *c = h_client_new(base);
    char *publish = NULL, *depth = NULL, *up = NULL;
    bool ok = false;
    if (pid > 0) {
        /* Ingestion takes a scrape or two after startup; the deadline covers a slow machine. */
        H_WAIT_UNTIL(ok, 90000,
                     !child_alive(pid) ||
                         ((free(publish), publish = query_value(
                                              c, "roost_publish_total%7Bjob%3D%22roost%22%7D")) &&
                          strcmp(publish, "2") == 0));
        ok = ok && publish != NULL && strcmp(publish, "2") == 0;
        CHECK(ok);
        depth = query_value(c, "roost_inbox_depth%7Btenant%3D%22t1%22%2Cagent%3D%22p.a%22%7D");
        up = query_value(c, "up%7Bjob%3D%22roost%22%7D");
        CHECK(depth != NULL && strcmp(depth, "2") == 0);
        CHECK(up != NULL && strcmp(up, "1") == 0);
        if (!ok) {
            char *logp = h_fmt("%s/prometheus.log", dir), *log = NULL;
            size_t len = 0;
            if (h_read_file(logp, &log, &len) == 0) {
                fprintf(stderr, "--- prometheus log ---\n%s\n", log);
            }
            free(log);
            free(logp);
        }
        kill(pid, SIGTERM);
        int status = 0;
        waitpid(pid, &status, 0);
    }
    free(publish);
    free(depth);
    free(up);
    h_client_free(c);
    free(base);
    char *rm = h_fmt("rm -rf '%s'", dir);
    CHECK_EQ(system(rm), 0);
    free(rm);
    free(tok);
    roostd_finish(&d);
}

int main(void)
{
    h_init();
    RUN(test_prometheus_scrapes_roostd);
    return h_summary();
}
