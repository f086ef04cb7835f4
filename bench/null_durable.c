/* SPDX-License-Identifier: MIT */
#include "null_durable.h"

#include <errno.h>
#include <event2/buffer.h>
#include <fcntl.h>
#include <mysql.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store_mysql_url.h"

#include "common/banned.h"

/* The file is preallocated and written round, like a WAL once it wraps: fdatasync then has no
 * size or block allocation to commit, only the data. */
#define FILE_SIZE (64 << 20)

struct held {
    struct evhttp_request *req;
    int status;
    struct evbuffer *buf;
    struct held *next;
};

struct held_list {
    struct held *head, **tail;
};

enum shape { OFF, INLINE, THREAD, ON_MYSQL };

static struct {
    enum shape shape;
    int fd;
    off_t off;
    struct store_mysql_url url;
    struct event *ready_ev; /* inline: the pass is over, write; threads: a group is durable */
    pthread_mutex_t mu;     /* thread shapes: the fields below */
    pthread_cond_t cv;
    struct held_list waiting; /* answers not yet in a write */
    struct evbuffer *bytes;   /* their bytes */
    struct held_list durable; /* thread shapes: written, for the loop to send */
    unsigned long long writes, answers;
} g = {.fd = -1, .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void list_init(struct held_list *l)
{
    l->head = NULL;
    l->tail = &l->head;
}

static void list_append(struct held_list *l, struct held_list *more)
{
    if (more->head) {
        *l->tail = more->head;
        l->tail = more->tail;
        list_init(more);
    }
}

/* A client that went away meanwhile is still there for evhttp (it does not read while a request
 * waits for its answer), so the send fails and evhttp frees the connection then. */
static void send_all(struct held *h)
{
    while (h) {
        struct held *next = h->next;
        evhttp_send_reply(h->req, h->status, NULL, h->buf);
        evbuffer_free(h->buf);
        free(h);
        g.answers++;
        h = next;
    }
}

/* One durable write of a group's bytes; exits on failure (a measuring tool has no answer to
 * give that would still be true). */
static void write_group(struct evbuffer *bytes, MYSQL_STMT *ins)
{
    size_t len = evbuffer_get_length(bytes);
    const unsigned char *p = evbuffer_pullup(bytes, -1);
    if (ins) {
        unsigned long blen = (unsigned long)len;
        MYSQL_BIND b = {.buffer_type = MYSQL_TYPE_BLOB,
                        .buffer = (void *)p,
                        .buffer_length = blen,
                        .length = &blen};
        if (mysql_stmt_bind_param(ins, &b) != 0 || mysql_stmt_execute(ins) != 0) {
            fprintf(stderr, "null_server: durable insert failed: %s\n", mysql_stmt_error(ins));
            exit(1);
        }
    } else {
        if (g.off + (off_t)len > FILE_SIZE) {
            g.off = 0;
        }
        if (pwrite(g.fd, p, len, g.off) != (ssize_t)len || fdatasync(g.fd) != 0) {
            fprintf(stderr, "null_server: durable write failed: %s\n", strerror(errno));
            exit(1);
        }
        g.off += (off_t)len;
    }
    evbuffer_drain(bytes, len);
}

static void on_pass_over(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    write_group(g.bytes, NULL);
    g.writes++;
    struct held *h = g.waiting.head;
    list_init(&g.waiting);
    send_all(h);
}

static void on_group_durable(evutil_socket_t fd, short what, void *arg)
{
    (void)fd, (void)what, (void)arg;
    pthread_mutex_lock(&g.mu);
    struct held *h = g.durable.head;
    list_init(&g.durable);
    pthread_mutex_unlock(&g.mu);
    send_all(h);
}

static MYSQL_STMT *connect_mysql(void)
{
    static const char create[] = "CREATE TABLE IF NOT EXISTS null_durable (id BIGINT "
                                 "AUTO_INCREMENT PRIMARY KEY, body MEDIUMBLOB NOT NULL)";
    static const char insert[] = "INSERT INTO null_durable (body) VALUES (?)";
    MYSQL *db = mysql_init(NULL);
    const char *sock = g.url.socket[0] ? g.url.socket : NULL;
    MYSQL_STMT *ins = NULL;
    if (!db ||
        !mysql_real_connect(db, sock ? NULL : g.url.hosts[0].name, g.url.user, g.url.pass, g.url.db,
                            g.url.hosts[0].port, sock, 0) ||
        mysql_query(db, create) != 0 || !(ins = mysql_stmt_init(db)) ||
        mysql_stmt_prepare(ins, insert, sizeof insert - 1) != 0) {
        fprintf(stderr, "null_server: mysql: %s\n", db ? mysql_error(db) : "out of memory");
        exit(1);
    }
    return ins;
}

static void *syncer_main(void *arg)
{
    (void)arg;
    MYSQL_STMT *ins = g.shape == ON_MYSQL ? connect_mysql() : NULL;
    struct evbuffer *bytes = evbuffer_new();
    struct held_list group;
    list_init(&group);
    for (;;) {
        pthread_mutex_lock(&g.mu);
        while (g.waiting.head == NULL) {
            pthread_cond_wait(&g.cv, &g.mu);
        }
        list_append(&group, &g.waiting);
        evbuffer_add_buffer(bytes, g.bytes);
        pthread_mutex_unlock(&g.mu);
        write_group(bytes, ins);
        pthread_mutex_lock(&g.mu);
        g.writes++;
        bool was_empty = g.durable.head == NULL;
        list_append(&g.durable, &group);
        pthread_mutex_unlock(&g.mu);
        if (was_empty) {
            event_active(g.ready_ev, 0, 0);
        }
    }
    return NULL;
}

int null_durable_start(struct event_base *base, const char *spec, int syncers, char *err,
                       size_t errlen)
{
    const char *colon = strchr(spec, ':');
    size_t kind = colon ? (size_t)(colon - spec) : 0;
    const char *target = colon ? colon + 1 : "";
    g.shape = kind == 6 && memcmp(spec, "inline", 6) == 0   ? INLINE
              : kind == 6 && memcmp(spec, "thread", 6) == 0 ? THREAD
              : kind == 5 && memcmp(spec, "mysql", 5) == 0  ? ON_MYSQL
                                                            : OFF;
    if (g.shape == OFF || *target == '\0' || syncers < 1 || (syncers > 1 && g.shape != ON_MYSQL)) {
        snprintf(err, errlen,
                 "--durable inline:FILE, thread:FILE or mysql:URL (--syncers only "
                 "with mysql)");
        return -1;
    }
    if (g.shape == ON_MYSQL && store_mysql_url_parse(target, &g.url) != 0) {
        snprintf(err, errlen, "bad MySQL URL");
        return -1;
    }
    if (g.shape != ON_MYSQL) {
        g.fd = open(target, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (g.fd < 0 || posix_fallocate(g.fd, 0, FILE_SIZE) != 0 || fsync(g.fd) != 0) {
            snprintf(err, errlen, "%s: %s", target, strerror(errno));
            return -1;
        }
    }
    list_init(&g.waiting);
    list_init(&g.durable);
    g.bytes = evbuffer_new();
    /* Inline: evhttp's events take the middle of three priorities and the write the last, so
     * it runs once every ready socket of the pass has been handled. */
    g.ready_ev = event_new(base, -1, 0, g.shape == INLINE ? on_pass_over : on_group_durable, NULL);
    if (!g.bytes || !g.ready_ev ||
        (g.shape == INLINE &&
         (event_base_priority_init(base, 3) != 0 || event_priority_set(g.ready_ev, 2) != 0))) {
        snprintf(err, errlen, "libevent setup failed");
        return -1;
    }
    for (int i = 0; g.shape != INLINE && i < syncers; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, syncer_main, NULL) != 0) {
            snprintf(err, errlen, "cannot start a syncer thread");
            return -1;
        }
        pthread_detach(t);
    }
    return 0;
}

bool null_durable_hold(struct evhttp_request *req, int status, struct evbuffer *buf)
{
    if (g.shape == OFF) {
        return false;
    }
    struct held *h = calloc(1, sizeof *h);
    if (!h) {
        fprintf(stderr, "null_server: out of memory\n");
        exit(1);
    }
    h->req = req;
    h->status = status;
    h->buf = buf;
    struct held_list one = {h, &h->next};
    bool threads = g.shape != INLINE;
    if (threads) {
        pthread_mutex_lock(&g.mu);
    }
    bool first = g.waiting.head == NULL;
    evbuffer_add(g.bytes, evbuffer_pullup(buf, -1), evbuffer_get_length(buf));
    list_append(&g.waiting, &one);
    if (threads) {
        pthread_cond_signal(&g.cv);
        pthread_mutex_unlock(&g.mu);
    } else if (first) {
        event_active(g.ready_ev, 0, 0); /* the write, once the pass is over */
    }
    return true;
}

void null_durable_report(void)
{
    if (g.shape != OFF) {
        pthread_mutex_lock(&g.mu);
        fprintf(stderr, "null_server: %llu answers in %llu durable writes\n", g.answers, g.writes);
        pthread_mutex_unlock(&g.mu);
    }
}
