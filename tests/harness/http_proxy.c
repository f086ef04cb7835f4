/* SPDX-License-Identifier: MIT */
/* The fault-injecting HTTP proxy of the integration tests (proxy.h). */
#include "harness/http_proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness/harness.h"

#include "common/banned.h"

struct proxy_conn {
    struct http_proxy *p;
    int cfd;
};

static bool write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t w = send(fd, buf, len, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return false;
        }
        buf += w;
        len -= (size_t)w;
    }
    return true;
}

/* The rule for a request line (HTTP_PROXY_PASS when none matches); counts the hit. */
static enum http_proxy_action rule_for(struct http_proxy *p, const char *line, int *delay_ms)
{
    enum http_proxy_action act = HTTP_PROXY_PASS;
    pthread_mutex_lock(&p->mu);
    for (int i = 0; i < HTTP_PROXY_MAX_RULES; i++) {
        struct http_proxy_rule *r = &p->rules[i];
        if (r->match[0] != '\0' && strstr(line, r->match) != NULL &&
            (r->except[0] == '\0' || strstr(line, r->except) == NULL)) {
            act = r->action;
            *delay_ms = r->delay_ms;
            atomic_fetch_add(&r->hits, 1);
            break;
        }
    }
    pthread_mutex_unlock(&p->mu);
    return act;
}

/* Sleeps ms in slices, returning early when the proxy stops. */
static void nap(struct http_proxy *p, int ms)
{
    int64_t until = h_now_ms() + ms;
    while (!atomic_load(&p->stop) && h_now_ms() < until) {
        h_sleep_ms(10);
    }
}

static void *proxy_conn_main(void *arg)
{
    struct proxy_conn *pc = arg;
    struct http_proxy *p = pc->p;
    int cfd = pc->cfd, ufd = -1;
    free(pc);
    char head[65536];
    size_t len = 0;
    char *end = NULL;
    /* Read the request head (bounded; 10 s at most, stopping with the proxy). */
    int64_t head_deadline = h_now_ms() + 10000;
    while (end == NULL && len < sizeof head - 1) {
        struct pollfd pf = {cfd, POLLIN, 0};
        int pr = poll(&pf, 1, 200);
        if (atomic_load(&p->stop) || h_now_ms() > head_deadline || pr < 0) {
            goto out;
        }
        if (pr == 0) {
            continue;
        }
        ssize_t r = recv(cfd, head + len, sizeof head - 1 - len, 0);
        if (r <= 0) {
            goto out;
        }
        len += (size_t)r;
        head[len] = '\0';
        end = strstr(head, "\r\n\r\n");
    }
    if (end == NULL) {
        goto out;
    }
    char *eol = strstr(head, "\r\n");
    char line[512];
    snprintf(line, sizeof line, "%.*s", (int)(eol - head), head);
    int delay_ms = 0;
    enum http_proxy_action act = rule_for(p, line, &delay_ms);
    if (act == HTTP_PROXY_DROP) {
        goto out;
    }
    if (act == HTTP_PROXY_FAIL_503) {
        static const char body[] =
            "{\"error\":{\"code\":\"unavailable\",\"message\":\"test proxy outage\"}}";
        char resp[256];
        int n = snprintf(resp, sizeof resp,
                         "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                         "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                         sizeof body - 1, body);
        write_all(cfd, resp, (size_t)n);
        goto out;
    }
    ufd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    sa.sin_port = htons((uint16_t)atomic_load(&p->upstream_port));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (ufd < 0 || connect(ufd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        goto out;
    }
    size_t first = (size_t)(eol - head) + 2;
    if (!write_all(ufd, head, first) || !write_all(ufd, "Connection: close\r\n", 19) ||
        !write_all(ufd, head + first, len - first)) {
        goto out;
    }
    bool held = act != HTTP_PROXY_DELAY;
    for (;;) {
        struct pollfd pf[2] = {{cfd, POLLIN, 0}, {ufd, POLLIN, 0}};
        if (poll(pf, 2, 200) < 0 && errno != EINTR) {
            break;
        }
        if (atomic_load(&p->stop)) {
            break;
        }
        char buf[16384];
        if (pf[0].revents != 0) {
            ssize_t r = recv(cfd, buf, sizeof buf, 0);
            if (r <= 0 || !write_all(ufd, buf, (size_t)r)) {
                break;
            }
        }
        if (pf[1].revents != 0) {
            if (!held) {
                /* The answer has begun (roostd has done the work): hold it back. */
                nap(p, delay_ms);
                held = true;
            }
            ssize_t r = recv(ufd, buf, sizeof buf, 0);
            if (r <= 0 || !write_all(cfd, buf, (size_t)r)) {
                break;
            }
        }
    }
out:
    if (ufd >= 0) {
        close(ufd);
    }
    close(cfd);
    atomic_fetch_sub(&p->n_live, 1); /* last touch of *p */
    return NULL;
}

static void *proxy_main(void *arg)
{
    struct http_proxy *p = arg;
    while (!atomic_load(&p->stop)) {
        struct pollfd pf = {p->lfd, POLLIN, 0};
        if (poll(&pf, 1, 100) <= 0) {
            continue;
        }
        int cfd = accept(p->lfd, NULL, NULL);
        if (cfd < 0) {
            continue;
        }
        struct proxy_conn *pc = malloc(sizeof *pc);
        pthread_t t;
        if (pc == NULL) {
            close(cfd);
            continue;
        }
        pc->p = p;
        pc->cfd = cfd;
        atomic_fetch_add(&p->n_live, 1);
        if (pthread_create(&t, NULL, proxy_conn_main, pc) != 0) {
            atomic_fetch_sub(&p->n_live, 1);
            close(cfd);
            free(pc);
            continue;
        }
        pthread_detach(t);
    }
    return NULL;
}

int http_proxy_start(struct http_proxy *p, int upstream_port)
{
    memset(p, 0, sizeof *p);
    pthread_mutex_init(&p->mu, NULL);
    atomic_store(&p->upstream_port, upstream_port);
    p->lfd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = 0};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (p->lfd < 0 || bind(p->lfd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(p->lfd, 64) != 0 || getsockname(p->lfd, (struct sockaddr *)&sa, &sl) != 0) {
        return -1;
    }
    p->port = ntohs(sa.sin_port);
    return pthread_create(&p->th, NULL, proxy_main, p) == 0 ? 0 : -1;
}

void http_proxy_stop(struct http_proxy *p)
{
    atomic_store(&p->stop, 1);
    pthread_join(p->th, NULL);
    close(p->lfd);
    /* Connection threads notice the stop flag within 200 ms; *p must outlive them. */
    bool ok;
    H_WAIT_UNTIL(ok, 5000, atomic_load(&p->n_live) == 0);
    CHECK(ok);
    pthread_mutex_destroy(&p->mu);
}

void http_proxy_rule(struct http_proxy *p, int i, const char *match, const char *except,
                     enum http_proxy_action action, int delay_ms)
{
    pthread_mutex_lock(&p->mu);
    struct http_proxy_rule *r = &p->rules[i];
    snprintf(r->match, sizeof r->match, "%s", match);
    snprintf(r->except, sizeof r->except, "%s", except != NULL ? except : "");
    r->action = action;
    r->delay_ms = delay_ms;
    atomic_store(&r->hits, 0);
    pthread_mutex_unlock(&p->mu);
}

void http_proxy_rule_off(struct http_proxy *p, int i)
{
    pthread_mutex_lock(&p->mu);
    p->rules[i].match[0] = '\0';
    pthread_mutex_unlock(&p->mu);
}

int http_proxy_hits(struct http_proxy *p, int i)
{
    return atomic_load(&p->rules[i].hits);
}
