/* SPDX-License-Identifier: MIT */
/* The loopback TCP proxy of the tests (see tcp_proxy.h). MySQL packets from the client are
 * reassembled (3-byte length, 1-byte sequence, payload) so a COMMIT is recognised whatever the
 * TCP segmentation; the server's bytes are passed through as they come, except while an answer
 * is being dropped. Every descriptor is close-on-exec: a roostd or mariadbd the test starts while
 * connections are open must not inherit them (an inherited server side keeps a dead client's
 * session, and its locks, alive). */
#define _GNU_SOURCE /* accept4, pipe2 (O_CLOEXEC: the test forks at any time), memmem */
#include "harness/tcp_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/banned.h"

#define MAX_PAIRS 256

struct buf {
    unsigned char *data;
    size_t len, cap;
};

struct pair {
    int cfd, sfd;     /* -1 once closed */
    bool dropping;    /* the server's answer to a forwarded COMMIT is being read and dropped */
    bool drop_first;  /* …to another query (tcp_proxy_arm_only): cut at its first bytes */
    bool held;        /* client cut, server side kept open and unread */
    bool pg_started;  /* PostgreSQL: the startup message went (typed messages follow) */
    struct buf fromc; /* client bytes not yet forwarded (an incomplete MySQL packet) */
    struct buf froms; /* server bytes being dropped (to find the end of the answer) */
};

struct tcp_proxy {
    int lfd, port;
    bool mysql; /* client bytes are MySQL packets (else forwarded as they come) */
    bool pg;    /* client bytes are PostgreSQL messages */
    int wake[2];
    int ctl[2]; /* a byte here makes the thread apply cut_all / block / stall */
    struct sockaddr_in target;
    pthread_t thread;
    pthread_mutex_t mu;
    enum tcp_proxy_cut cut;
    int times, cuts;
    char last_cut[64]; /* under mu: the start of the MySQL query cut last */
    char only[64];     /* under mu: MySQL cuts take only queries holding this ("": any) */
    bool cut_all_pending, blocked, stalled; /* under mu */
    bool drain_pending; /* under mu: close what waits in the listen backlog (partition healed) */
    int open_conns;     /* under mu, written by the thread */
    struct pair pairs[MAX_PAIRS];
};

static int buf_add(struct buf *b, const unsigned char *p, size_t n)
{
    if (b->len + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->len + n) {
            cap *= 2;
        }
        unsigned char *d = realloc(b->data, cap);
        if (!d) {
            return -1;
        }
        b->data = d;
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    return 0;
}

static void buf_take(struct buf *b, size_t n)
{
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
}

static int write_all(int fd, const unsigned char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w <= 0) {
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void pair_close(struct pair *pr, bool keep_server)
{
    if (pr->cfd >= 0) {
        close(pr->cfd);
        pr->cfd = -1;
    }
    if (!keep_server && pr->sfd >= 0) {
        close(pr->sfd);
        pr->sfd = -1;
    }
    pr->held = keep_server && pr->sfd >= 0;
    pr->dropping = pr->drop_first = false;
    free(pr->fromc.data);
    free(pr->froms.data);
    memset(&pr->fromc, 0, sizeof pr->fromc);
    memset(&pr->froms, 0, sizeof pr->froms);
}

/* Takes one armed cut, or returns PASS: at a client's query (`at_query`) the COMMIT kinds, at
 * the server's next bytes TCP_PROXY_ANSWER_LOST. `query` (n bytes, may be NULL) is the MySQL
 * query text; `commit`: it holds a COMMIT (the only queries cut unless tcp_proxy_arm_only named
 * a text). */
static enum tcp_proxy_cut take_cut(struct tcp_proxy *p, bool at_query, const unsigned char *query,
                                   size_t n, bool commit)
{
    enum tcp_proxy_cut c = TCP_PROXY_PASS;
    pthread_mutex_lock(&p->mu);
    bool any_answer = p->cut == TCP_PROXY_ANSWER_LOST;
    bool matches = p->only[0] == '\0'
                       ? commit
                       : query != NULL && memmem(query, n, p->only, strlen(p->only)) != NULL;
    if (p->times > 0 && p->cut != TCP_PROXY_PASS && at_query != any_answer && matches) {
        c = p->cut;
        p->times--;
        p->cuts++;
        n = query == NULL ? 0 : n < sizeof p->last_cut ? n : sizeof p->last_cut - 1;
        memcpy(p->last_cut, query != NULL ? (const char *)query : "", n);
        p->last_cut[n] = '\0';
    }
    pthread_mutex_unlock(&p->mu);
    return c;
}

/* A COM_QUERY holding the store's COMMIT: "…; COMMIT…" (after a marker), or a query that is
 * COMMIT first (a transaction that needs no marker: acks). */
static bool is_commit_packet(const unsigned char *payload, size_t n)
{
    static const char needle[] = "; COMMIT";
    static const char first[] = "COMMIT";
    if (n < 1 || payload[0] != 0x03) { /* COM_QUERY */
        return false;
    }
    if (n - 1 >= sizeof first - 1 && memcmp(payload + 1, first, sizeof first - 1) == 0) {
        return true;
    }
    for (size_t i = 1; i + sizeof needle - 1 <= n; i++) {
        if (memcmp(payload + i, needle, sizeof needle - 1) == 0) {
            return true;
        }
    }
    return false;
}

static uint32_t be32(const unsigned char *d)
{
    return (uint32_t)d[0] << 24 | (uint32_t)d[1] << 16 | (uint32_t)d[2] << 8 | (uint32_t)d[3];
}

/* A PostgreSQL simple Query holding a COMMIT statement (the store's "…; COMMIT[; NOTIFY …]"). */
static bool is_pg_commit(const unsigned char *m, size_t n)
{
    static const char needle[] = "COMMIT";
    size_t k = sizeof needle - 1;
    if (n < 6 + k || m[0] != 'Q') {
        return false;
    }
    const unsigned char *text = m + 5;
    size_t len = n - 6; /* without the type, the length and the text's NUL */
    for (size_t i = 0; i + k <= len; i++) {
        bool starts = i == 0 || (i >= 2 && text[i - 2] == ';' && text[i - 1] == ' ');
        bool ends = i + k == len || text[i + k] == ';';
        if (starts && ends && memcmp(text + i, needle, k) == 0) {
            return true;
        }
    }
    return false;
}

/* PostgreSQL: the startup packets (length, code: SSL/GSS requests first, then the startup
 * message of protocol 3.0), then typed messages (type, length). */
static bool forward_pg(struct tcp_proxy *p, struct pair *pr)
{
    for (;;) {
        const unsigned char *d = pr->fromc.data;
        size_t have = pr->fromc.len, mlen;
        if (!pr->pg_started) {
            if (have < 8 || have < (mlen = be32(d))) {
                return true;
            }
            pr->pg_started = be32(d + 4) == 0x00030000;
        } else {
            if (have < 5 || have < (mlen = (size_t)be32(d + 1) + 1)) {
                return true;
            }
        }
        enum tcp_proxy_cut c = pr->pg_started && is_pg_commit(d, mlen)
                                   ? take_cut(p, true, NULL, 0, true)
                                   : TCP_PROXY_PASS;
        if (c == TCP_PROXY_COMMIT_NOT_SENT || c == TCP_PROXY_COMMIT_NOT_SENT_HOLD) {
            pair_close(pr, c == TCP_PROXY_COMMIT_NOT_SENT_HOLD);
            return false;
        }
        if (write_all(pr->sfd, d, mlen) != 0) {
            return false;
        }
        if (c == TCP_PROXY_COMMIT_ANSWER_LOST) {
            pr->dropping = true;
        }
        buf_take(&pr->fromc, mlen);
    }
}

/* PostgreSQL: true once the dropped bytes hold the ReadyForQuery that ends the answer. */
static bool pg_answer_complete(const struct buf *b)
{
    size_t off = 0;
    while (b->len - off >= 5) {
        size_t mlen = (size_t)be32(b->data + off + 1) + 1;
        if (b->len - off < mlen) {
            return false;
        }
        if (b->data[off] == 'Z') {
            return true;
        }
        off += mlen;
    }
    return false;
}

/* Forwards the complete client packets buffered; false when the pair is done with. */
static bool forward_client(struct tcp_proxy *p, struct pair *pr)
{
    if (p->pg) {
        return forward_pg(p, pr);
    }
    if (!p->mysql) {
        bool ok = write_all(pr->sfd, pr->fromc.data, pr->fromc.len) == 0;
        pr->fromc.len = 0;
        return ok;
    }
    while (pr->fromc.len >= 4) {
        const unsigned char *d = pr->fromc.data;
        size_t plen = (size_t)d[0] | (size_t)d[1] << 8 | (size_t)d[2] << 16;
        if (pr->fromc.len < 4 + plen) {
            return true;
        }
        bool commit = is_commit_packet(d + 4, plen);
        enum tcp_proxy_cut c = plen >= 1 && d[4] == 0x03 /* COM_QUERY */
                                   ? take_cut(p, true, d + 5, plen - 1, commit)
                                   : TCP_PROXY_PASS;
        if (c == TCP_PROXY_COMMIT_NOT_SENT || c == TCP_PROXY_COMMIT_NOT_SENT_HOLD) {
            pair_close(pr, c == TCP_PROXY_COMMIT_NOT_SENT_HOLD);
            return false;
        }
        if (write_all(pr->sfd, d, 4 + plen) != 0) {
            return false;
        }
        if (c == TCP_PROXY_COMMIT_ANSWER_LOST) {
            pr->dropping = true;
            pr->drop_first = !commit;
        }
        buf_take(&pr->fromc, 4 + plen);
    }
    return true;
}

/* Reads a length-encoded integer; false past the end. */
static bool lenenc(const unsigned char *d, size_t n, size_t *pos)
{
    if (*pos >= n) {
        return false;
    }
    unsigned char b = d[*pos];
    size_t skip = b < 0xfb ? 1 : b == 0xfc ? 3 : b == 0xfd ? 4 : 9;
    *pos += skip;
    return *pos <= n;
}

/* True once the dropped bytes hold the final answer (an ERR, or an OK without
 * SERVER_MORE_RESULTS_EXISTS) of the forwarded COMMIT query. */
static bool answer_complete(struct buf *b)
{
    size_t off = 0;
    while (b->len - off >= 4) {
        const unsigned char *d = b->data + off;
        size_t plen = (size_t)d[0] | (size_t)d[1] << 8 | (size_t)d[2] << 16;
        if (b->len - off < 4 + plen) {
            return false;
        }
        const unsigned char *pl = d + 4;
        if (plen > 0 && pl[0] == 0xff) {
            return true;
        }
        if (plen > 0 && pl[0] == 0x00) {
            size_t pos = 1;
            if (lenenc(pl, plen, &pos) && lenenc(pl, plen, &pos) && pos + 2 <= plen) {
                unsigned status = (unsigned)pl[pos] | (unsigned)pl[pos + 1] << 8;
                if ((status & 0x0008) == 0) {
                    return true;
                }
            }
        }
        off += 4 + plen;
    }
    return false;
}

/* Handles bytes from the server; false when the pair is done with. */
static bool from_server(struct tcp_proxy *p, struct pair *pr, const unsigned char *d, size_t n)
{
    if (pr->dropping) {
        /* The server answers a query once it has run it: any byte of another query's answer
         * says it ran (a COMMIT's waits for its last OK: statements run before it). */
        if (pr->drop_first || buf_add(&pr->froms, d, n) != 0 ||
            (p->pg ? pg_answer_complete(&pr->froms) : answer_complete(&pr->froms))) {
            pair_close(pr, false);
            return false;
        }
        return true;
    }
    if (take_cut(p, false, NULL, 0, true) == TCP_PROXY_ANSWER_LOST) {
        pair_close(pr, false);
        return false;
    }
    if (write_all(pr->cfd, d, n) != 0) {
        pair_close(pr, false);
        return false;
    }
    return true;
}

static void accept_one(struct tcp_proxy *p)
{
    int cfd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
    if (cfd < 0) {
        return;
    }
    pthread_mutex_lock(&p->mu);
    bool blocked = p->blocked;
    pthread_mutex_unlock(&p->mu);
    if (blocked) {
        close(cfd);
        return;
    }
    struct pair *pr = NULL;
    for (int i = 0; i < MAX_PAIRS && !pr; i++) {
        if (p->pairs[i].cfd < 0 && p->pairs[i].sfd < 0) {
            pr = &p->pairs[i];
        }
    }
    int sfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (!pr || sfd < 0 ||
        connect(sfd, (const struct sockaddr *)&p->target, sizeof p->target) != 0) {
        fprintf(stderr, "tcp_proxy: cannot take a connection\n");
        close(cfd);
        if (sfd >= 0) {
            close(sfd);
        }
        return;
    }
    /* Packets go on one by one: without this, Nagle holds each small one behind the last. */
    int one = 1;
    setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(sfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    memset(pr, 0, sizeof *pr);
    pr->cfd = cfd;
    pr->sfd = sfd;
}

static void *proxy_main(void *arg)
{
    struct tcp_proxy *p = arg;
    unsigned char chunk[65536];
    for (;;) {
        struct pollfd fds[3 + 2 * MAX_PAIRS];
        int who[3 + 2 * MAX_PAIRS]; /* pair index * 2 + (0 client, 1 server) */
        nfds_t n = 0;
        pthread_mutex_lock(&p->mu);
        bool cut_all = p->cut_all_pending || p->blocked;
        bool stalled = p->stalled, drain = p->drain_pending;
        p->cut_all_pending = p->drain_pending = false;
        pthread_mutex_unlock(&p->mu);
        if (cut_all) {
            for (int i = 0; i < MAX_PAIRS; i++) {
                pair_close(&p->pairs[i], false);
            }
        }
        struct pollfd lp = {.fd = p->lfd, .events = POLLIN};
        while (drain && poll(&lp, 1, 0) == 1) {
            int fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC);
            if (fd < 0) {
                break;
            }
            close(fd);
        }
        fds[n++] = (struct pollfd){.fd = p->wake[0], .events = POLLIN};
        fds[n++] = (struct pollfd){.fd = p->ctl[0], .events = POLLIN};
        /* Stalled: the listening socket and every pair wait unread (the kernel buffers fill). */
        fds[n++] = (struct pollfd){.fd = stalled ? -1 : p->lfd, .events = POLLIN};
        int open_conns = 0;
        for (int i = 0; i < MAX_PAIRS; i++) {
            open_conns += p->pairs[i].cfd >= 0;
        }
        pthread_mutex_lock(&p->mu);
        p->open_conns = open_conns;
        pthread_mutex_unlock(&p->mu);
        for (int i = 0; i < MAX_PAIRS && !stalled; i++) {
            struct pair *pr = &p->pairs[i];
            if (pr->cfd >= 0) {
                who[n] = 2 * i;
                fds[n++] = (struct pollfd){.fd = pr->cfd, .events = POLLIN};
            }
            if (pr->sfd >= 0 && !pr->held) {
                who[n] = 2 * i + 1;
                fds[n++] = (struct pollfd){.fd = pr->sfd, .events = POLLIN};
            }
        }
        if (poll(fds, n, -1) < 0) {
            continue;
        }
        if (fds[0].revents) {
            return NULL;
        }
        if (fds[1].revents & POLLIN) {
            char c[64];
            if (read(p->ctl[0], c, sizeof c) < 0) {
                fprintf(stderr, "tcp_proxy: cannot read the control pipe\n");
            }
        }
        if (fds[2].revents & POLLIN) {
            accept_one(p);
        }
        for (nfds_t k = 3; k < n; k++) {
            if (!fds[k].revents) {
                continue;
            }
            struct pair *pr = &p->pairs[who[k] / 2];
            bool server = who[k] % 2 == 1;
            int fd = server ? pr->sfd : pr->cfd;
            if (fd != fds[k].fd) {
                continue; /* closed earlier in this round */
            }
            ssize_t r = recv(fd, chunk, sizeof chunk, 0);
            if (r <= 0) {
                pair_close(pr, false);
                continue;
            }
            if (server) {
                from_server(p, pr, chunk, (size_t)r);
            } else if (buf_add(&pr->fromc, chunk, (size_t)r) != 0 || !forward_client(p, pr)) {
                if (pr->cfd >= 0) {
                    pair_close(pr, false);
                }
            }
        }
    }
}

static struct tcp_proxy *proxy_start(const char *host, int port, bool mysql, bool pg);

struct tcp_proxy *tcp_proxy_start(const char *host, int port, bool mysql)
{
    return proxy_start(host, port, mysql, false);
}

struct tcp_proxy *tcp_proxy_start_pg(const char *host, int port)
{
    return proxy_start(host, port, false, true);
}

static struct tcp_proxy *proxy_start(const char *host, int port, bool mysql, bool pg)
{
    struct tcp_proxy *p = calloc(1, sizeof *p);
    if (!p) {
        return NULL;
    }
    for (int i = 0; i < MAX_PAIRS; i++) {
        p->pairs[i].cfd = p->pairs[i].sfd = -1;
    }
    pthread_mutex_init(&p->mu, NULL);
    p->mysql = mysql;
    p->pg = pg;
    p->target.sin_family = AF_INET;
    p->target.sin_port = htons((uint16_t)port);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    socklen_t alen = sizeof a;
    inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
    if (inet_pton(AF_INET, host, &p->target.sin_addr) != 1 || pipe2(p->wake, O_CLOEXEC) != 0 ||
        pipe2(p->ctl, O_CLOEXEC) != 0 ||
        (p->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0 ||
        bind(p->lfd, (struct sockaddr *)&a, sizeof a) != 0 || listen(p->lfd, 64) != 0 ||
        getsockname(p->lfd, (struct sockaddr *)&a, &alen) != 0) {
        fprintf(stderr, "tcp_proxy: cannot listen (target %s:%d)\n", host, port);
        free(p);
        return NULL;
    }
    p->port = ntohs(a.sin_port);
    if (pthread_create(&p->thread, NULL, proxy_main, p) != 0) {
        free(p);
        return NULL;
    }
    return p;
}

int tcp_proxy_port(const struct tcp_proxy *p)
{
    return p->port;
}

void tcp_proxy_arm(struct tcp_proxy *p, enum tcp_proxy_cut cut, int times)
{
    tcp_proxy_arm_only(p, cut, times, NULL);
}

void tcp_proxy_arm_only(struct tcp_proxy *p, enum tcp_proxy_cut cut, int times, const char *only)
{
    pthread_mutex_lock(&p->mu);
    p->cut = cut;
    p->times = times;
    snprintf(p->only, sizeof p->only, "%s", only != NULL ? only : "");
    pthread_mutex_unlock(&p->mu);
}

void tcp_proxy_last_cut(struct tcp_proxy *p, char *out, size_t n)
{
    pthread_mutex_lock(&p->mu);
    snprintf(out, n, "%s", p->last_cut);
    pthread_mutex_unlock(&p->mu);
}

int tcp_proxy_cuts(struct tcp_proxy *p)
{
    pthread_mutex_lock(&p->mu);
    int n = p->cuts;
    pthread_mutex_unlock(&p->mu);
    return n;
}

void tcp_proxy_stop(struct tcp_proxy *p)
{
    if (!p) {
        return;
    }
    if (write(p->wake[1], "x", 1) != 1) {
        fprintf(stderr, "tcp_proxy: cannot wake the thread\n");
    }
    pthread_join(p->thread, NULL);
    for (int i = 0; i < MAX_PAIRS; i++) {
        pair_close(&p->pairs[i], false);
    }
    close(p->lfd);
    close(p->wake[0]);
    close(p->wake[1]);
    close(p->ctl[0]);
    close(p->ctl[1]);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

/* Sets a fault under the lock and wakes the thread to apply it. */
static void set_fault(struct tcp_proxy *p, bool *flag, bool on)
{
    pthread_mutex_lock(&p->mu);
    *flag = on;
    pthread_mutex_unlock(&p->mu);
    if (write(p->ctl[1], "c", 1) != 1) {
        fprintf(stderr, "tcp_proxy: cannot wake the thread\n");
    }
}

/* A partition is a stall (the kernel still completes handshakes into the listen backlog: connects
 * that are never answered) whose end closes every connection, old and new. */
void tcp_proxy_partition(struct tcp_proxy *p, bool on)
{
    pthread_mutex_lock(&p->mu);
    p->drain_pending = p->cut_all_pending = !on;
    pthread_mutex_unlock(&p->mu);
    tcp_proxy_stall(p, on);
}

void tcp_proxy_cut_all(struct tcp_proxy *p)
{
    set_fault(p, &p->cut_all_pending, true);
}

void tcp_proxy_block(struct tcp_proxy *p, bool on)
{
    set_fault(p, &p->blocked, on);
}

void tcp_proxy_stall(struct tcp_proxy *p, bool on)
{
    set_fault(p, &p->stalled, on);
}

int tcp_proxy_conns(struct tcp_proxy *p)
{
    pthread_mutex_lock(&p->mu);
    int n = p->open_conns;
    pthread_mutex_unlock(&p->mu);
    return n;
}
