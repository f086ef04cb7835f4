/* SPDX-License-Identifier: MIT */
/* Opening a MySQL connection, and choosing the node when the URL lists several (a MariaDB Galera
 * cluster): every connection of every roostd given the same list writes to the same node, the
 * first one in list order that answers and is usable (wsrep_ready, Synced, not read_only), and
 * stays there until it fails. Galera's row locks are local to a node (SKIP LOCKED on two nodes
 * hands one row to both; one COMMIT then fails certification), so one writer node is what keeps
 * claims and sequence numbers as cheap as on a single server; the others are hot standbys.
 * The connections of one process to one host list share a struct mysql_cluster: the node they
 * write to, nodes that just failed (skipped for a while, so each reconnect does not wait on them
 * again), and the failover count and reason that /metrics and /readyz show. While the writer is
 * not the first node of the list, a monitor thread of the cluster probes the nodes before it and
 * moves the writes back to the first usable one, so roostd processes that failed over at
 * different times, or started after a failover, end up on the same node again. */
#include "store/store_mysql.h"
#include "store/store_mysql_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <time.h>

#include "common/log.h"
#include "common/timeutil.h"

#include "common/banned.h"

/* A node that failed to connect or was not usable is skipped this long (unless every node is). */
#define HOLD_DOWN_MS 5000
/* How often the monitor looks whether a node before the writer is usable again, and how long it
 * gives each a connection attempt. */
#define FAILBACK_EVERY_MS 2000
#define FAILBACK_CONNECT_S 2

struct mysql_cluster {
    struct mysql_cluster *next;
    int refs;
    char key[1400]; /* user, host list and database: what makes two URLs the same cluster */
    char hosts[1024];
    size_t n_hosts;
    _Atomic int writer; /* index of the node writes go to, -1 while none is known */
    uint64_t failovers;
    char why[256];
    int64_t down_until_ms[STORE_MYSQL_HOSTS_MAX];
    /* The fail-back monitor: it connects with the first connection's URL. */
    struct store_mysql_url url;
    unsigned lock_wait_s;
    pthread_t monitor;
    pthread_cond_t stop_cv;
    bool monitor_started, stopping;
    bool autoinc_checked; /* warn_autoinc ran */
    /* The node the monitor found usable at its last look (-1: none). Writes move back only when
     * the same node is usable at two looks in a row and, on Galera, in the writer's view of the
     * cluster (same_view). */
    int failback_seen;
};

/* Every cluster of the process, and their mutable parts except `writer`. */
static pthread_mutex_t clusters_mu = PTHREAD_MUTEX_INITIALIZER;
static struct mysql_cluster *clusters;

static void *monitor_main(void *arg);

int store_mysql_cluster_acquire(const struct store_mysql_url *u, unsigned lock_wait_s,
                                struct mysql_cluster **out)
{
    *out = NULL;
    if (u->n_hosts < 2) {
        return ROOST_OK; /* one server: nothing to choose, nothing to share */
    }
    char key[1400], hosts[1024] = "";
    size_t used = 0;
    for (size_t i = 0; i < u->n_hosts && used < sizeof hosts; i++) {
        char label[300];
        store_mysql_host_label(&u->hosts[i], label, sizeof label);
        int n = snprintf(hosts + used, sizeof hosts - used, "%s%s", i > 0 ? "," : "", label);
        used += n > 0 ? (size_t)n : 0;
    }
    snprintf(key, sizeof key, "%s@%s/%s", u->user, hosts, u->db);
    pthread_mutex_lock(&clusters_mu);
    struct mysql_cluster *c = clusters;
    while (c != NULL && strcmp(c->key, key) != 0) {
        c = c->next;
    }
    if (c == NULL && (c = calloc(1, sizeof *c)) != NULL) {
        snprintf(c->key, sizeof c->key, "%s", key);
        snprintf(c->hosts, sizeof c->hosts, "%s", hosts);
        c->n_hosts = u->n_hosts;
        c->url = *u;
        c->lock_wait_s = lock_wait_s;
        atomic_init(&c->writer, -1);
        c->failback_seen = -1;
        /* Its waits are durations: on the monotonic clock, deaf to steps of the wall clock. */
        pthread_condattr_t ca;
        pthread_condattr_init(&ca);
        pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
        pthread_cond_init(&c->stop_cv, &ca);
        pthread_condattr_destroy(&ca);
        /* Without the monitor, writes still fail over; they only do not come back by themselves. */
        c->monitor_started = pthread_create(&c->monitor, NULL, monitor_main, c) == 0;
        c->next = clusters;
        clusters = c;
    }
    if (c != NULL) {
        c->refs++;
    }
    pthread_mutex_unlock(&clusters_mu);
    *out = c;
    return c != NULL ? ROOST_OK : ROOST_ENOMEM;
}

void store_mysql_cluster_release(struct mysql_cluster *c)
{
    if (c == NULL) {
        return;
    }
    pthread_mutex_lock(&clusters_mu);
    bool last = --c->refs == 0;
    if (last) {
        struct mysql_cluster **p = &clusters;
        while (*p != c) {
            p = &(*p)->next;
        }
        *p = c->next;
        c->stopping = true;
        pthread_cond_signal(&c->stop_cv);
    }
    pthread_mutex_unlock(&clusters_mu);
    if (last) {
        if (c->monitor_started) {
            pthread_join(c->monitor, NULL);
        }
        pthread_cond_destroy(&c->stop_cv);
        free(c);
    }
}

size_t store_mysql_ha_list(struct store_ha_info *out, size_t max)
{
    size_t n = 0;
    pthread_mutex_lock(&clusters_mu);
    for (struct mysql_cluster *c = clusters; c != NULL; c = c->next, n++) {
        if (n >= max) {
            continue;
        }
        struct store_ha_info *h = &out[n];
        memset(h, 0, sizeof *h);
        snprintf(h->hosts, sizeof h->hosts, "%s", c->hosts);
        int w = atomic_load(&c->writer);
        if (w >= 0) {
            /* The label of node w is the w-th item of the list. */
            const char *s = c->hosts;
            for (int i = 0; i < w && s != NULL; i++) {
                s = strchr(s, ',');
                s = s != NULL ? s + 1 : NULL;
            }
            if (s != NULL) {
                const char *e = strchr(s, ',');
                snprintf(h->writer, sizeof h->writer, "%.*s",
                         (int)(e != NULL ? (size_t)(e - s) : strlen(s)), s);
            }
        }
        h->failovers = c->failovers;
        snprintf(h->why, sizeof h->why, "%s", c->why);
    }
    pthread_mutex_unlock(&clusters_mu);
    return n;
}

bool store_mysql_off_writer(const struct mysql_store *b)
{
    if (b->cluster == NULL) {
        return false;
    }
    int w = atomic_load(&b->cluster->writer);
    return w >= 0 && (size_t)w != b->host_idx;
}

/* A why text fit for a quoted logfmt value. */
static void clean_why(char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '"' || *s == '\\' || *s == '\n' || *s == '\r') {
            *s = '\'';
        }
    }
}

/* Node i answered badly (why): skip it for HOLD_DOWN_MS; when it was the writer, there is none
 * until a connection finds the next one. */
static void node_failed(struct mysql_cluster *c, size_t i, const char *why)
{
    pthread_mutex_lock(&clusters_mu);
    c->down_until_ms[i] = time_mono_ms() + HOLD_DOWN_MS;
    int w = (int)i;
    if (atomic_compare_exchange_strong(&c->writer, &w, -1)) {
        snprintf(c->why, sizeof c->why, "%s", why);
        clean_why(c->why);
    }
    pthread_mutex_unlock(&clusters_mu);
}

/* This connection settled on node i: it becomes the writer when there was none (a failover when
 * another node had been), or this connection joins the one already chosen. */
static void node_chosen(struct mysql_cluster *c, const struct store_mysql_url *u, size_t i)
{
    pthread_mutex_lock(&clusters_mu);
    c->down_until_ms[i] = 0;
    int w = atomic_load(&c->writer);
    if (w >= 0) {
        pthread_mutex_unlock(&clusters_mu);
        return;
    }
    atomic_store(&c->writer, (int)i);
    bool moved = c->why[0] != '\0';
    char to[300];
    store_mysql_host_label(&u->hosts[i], to, sizeof to);
    if (moved) {
        c->failovers++;
        log_warn("store writer moved to another database node",
                 "hosts=%s writer=%s failovers=%llu why=\"%s\"", c->hosts, to,
                 (unsigned long long)c->failovers, c->why);
    } else {
        log_info("store writer chosen", "hosts=%s writer=%s", c->hosts, to);
    }
    pthread_mutex_unlock(&clusters_mu);
}

/* Opens one connection to host i with the session settings every statement here relies on. */
static MYSQL *connect_db(const struct store_mysql_url *u, size_t i, unsigned lock_wait_s,
                         unsigned connect_s, unsigned io_s, char *err, size_t errlen)
{
    MYSQL *db = mysql_init(NULL);
    if (db == NULL) {
        snprintf(err, errlen, "mysql_init: out of memory");
        return NULL;
    }
    char init[512];
    /* READ COMMITTED: no gap locks on the claim index (they block concurrent inserts), and
     * locking reads after a row lock see the latest commit (the idempotency check). Measured with
     * bench/mysql_isolation (2 producers, 2 claimers, one agent, MariaDB 10.11, 2 cores): on a
     * drained queue REPEATABLE READ halved publish and claim throughput (825/s vs 1789/s) and
     * doubled median publish latency; with a backlog its worst publish wait was 5x longer. */
    snprintf(init, sizeof init,
             "SET SESSION sql_mode = 'STRICT_ALL_TABLES,NO_ZERO_DATE,NO_ZERO_IN_DATE,"
             "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION',"
             " SESSION tx_isolation = '%s', SESSION autocommit = 1,"
             " SESSION innodb_lock_wait_timeout = %u",
             u->repeatable_read ? "REPEATABLE-READ" : "READ-COMMITTED", lock_wait_s);
    mysql_optionsv(db, MYSQL_OPT_CONNECT_TIMEOUT, &connect_s);
    mysql_optionsv(db, MYSQL_OPT_READ_TIMEOUT, &io_s);
    mysql_optionsv(db, MYSQL_OPT_WRITE_TIMEOUT, &io_s);
    mysql_optionsv(db, MYSQL_SET_CHARSET_NAME, "utf8mb4");
    mysql_optionsv(db, MYSQL_INIT_COMMAND, init);
    bool sock = u->socket[0] != '\0';
    const struct store_mysql_host *h = &u->hosts[i];
    /* CLIENT_FOUND_ROWS: affected rows count matched rows, as SQLite's changes() does.
     * CLIENT_MULTI_STATEMENTS: the commit marker travels with its COMMIT (store_mysql_commit). */
    if (mysql_real_connect(db, sock ? NULL : h->name, u->user, u->pass, u->db, h->port,
                           sock ? u->socket : NULL,
                           CLIENT_FOUND_ROWS | CLIENT_MULTI_STATEMENTS) == NULL) {
        snprintf(err, errlen, "connect to %.200s/%.64s: %.200s (mysql %u)",
                 sock ? u->socket : h->name, u->db, mysql_error(db), mysql_errno(db));
        mysql_close(db);
        return NULL;
    }
    /* TiDB accepts FOR UPDATE SKIP LOCKED but takes no lock (pingcap/tidb#69720): a queue on it
     * hands one event to several claimers. */
    const char *version = mysql_get_server_info(db);
    if (version != NULL && strstr(version, "TiDB") != NULL) {
        snprintf(err, errlen, "%.200s runs %.100s: TiDB's SKIP LOCKED takes no lock, unsupported",
                 sock ? u->socket : h->name, version);
        mysql_close(db);
        return NULL;
    }
    return db;
}

/* Whether the node behind db may take writes: not read_only, and when it runs Galera
 * (wsrep_on) also wsrep_ready and Synced (a Donor, Joiner or non-primary node is not). *galera
 * tells which. Two SHOWs in one round trip: they answer even on a node that refuses queries. */
bool store_mysql_node_usable(MYSQL *db, bool *galera, char *why, size_t whylen)
{
    static const char probe[] =
        "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('read_only', 'wsrep_on');"
        " SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_local_state_comment')";
    bool read_only = true, ready = false, synced = false;
    *galera = false;
    if (mysql_real_query(db, probe, sizeof probe - 1) != 0) {
        snprintf(why, whylen, "probe: %.200s (mysql %u)", mysql_error(db), mysql_errno(db));
        return false;
    }
    char state[64] = "";
    int status;
    do {
        MYSQL_RES *res = mysql_store_result(db);
        MYSQL_ROW row;
        while (res != NULL && (row = mysql_fetch_row(res)) != NULL) {
            if (row[0] == NULL || row[1] == NULL) {
                continue;
            }
            bool on = strcmp(row[1], "ON") == 0;
            if (strcmp(row[0], "read_only") == 0) {
                read_only = on;
            } else if (strcmp(row[0], "wsrep_on") == 0) {
                *galera = on;
            } else if (strcmp(row[0], "wsrep_ready") == 0) {
                ready = on;
            } else if (strcmp(row[0], "wsrep_local_state_comment") == 0) {
                snprintf(state, sizeof state, "%s", row[1]);
                synced = strcmp(row[1], "Synced") == 0;
            }
        }
        if (res != NULL) {
            mysql_free_result(res);
        }
    } while ((status = mysql_next_result(db)) == 0);
    if (status > 0) {
        snprintf(why, whylen, "probe: %.200s (mysql %u)", mysql_error(db), mysql_errno(db));
        return false;
    }
    if (read_only) {
        snprintf(why, whylen, "read_only");
        return false;
    }
    if (*galera && (!ready || !synced)) {
        snprintf(why, whylen, "wsrep_ready=%s wsrep_local_state_comment=%s", ready ? "ON" : "OFF",
                 state[0] != '\0' ? state : "?");
        return false;
    }
    /* Reads on this session wait until the node has applied every commit the cluster had when
     * they started, so a read never sees less than a commit that caused it (a ping, a retry). */
    if (*galera && mysql_query(db, "SET SESSION wsrep_sync_wait = 1") != 0) {
        snprintf(why, whylen, "wsrep_sync_wait: %.200s (mysql %u)", mysql_error(db),
                 mysql_errno(db));
        return false;
    }
    return true;
}

/* Galera's default wsrep_auto_increment_control gives each node its own residue of the
 * auto-increment ids (increment = cluster size), so roost_changes ids step by 3 and the tailer
 * keeps every skipped id as a gap to re-check for STORE_TAIL_GAP_MS. Said once per cluster. */
static void warn_autoinc(struct mysql_cluster *c, MYSQL *db)
{
    pthread_mutex_lock(&clusters_mu);
    bool first = !c->autoinc_checked;
    c->autoinc_checked = true;
    pthread_mutex_unlock(&clusters_mu);
    if (!first || mysql_query(db, "SELECT @@auto_increment_increment") != 0) {
        return;
    }
    MYSQL_RES *res = mysql_store_result(db);
    MYSQL_ROW row = res != NULL ? mysql_fetch_row(res) : NULL;
    long step = row != NULL && row[0] != NULL ? strtol(row[0], NULL, 10) : 1;
    if (res != NULL) {
        mysql_free_result(res);
    }
    if (step > 1) {
        log_warn("Galera hands out auto-increment ids in steps: the change-log tailer re-checks "
                 "the skipped ones",
                 "hosts=%s auto_increment_increment=%ld hint=\"set wsrep_auto_increment_control "
                 "= OFF on every node (doc/MYSQL.md)\"",
                 c->hosts, step);
    }
}

int store_mysql_connect(struct mysql_store *b, char *err, size_t errlen)
{
    struct mysql_cluster *c = b->cluster;
    if (c == NULL) {
        /* One server: as it always was, one attempt; the caller retries later. */
        b->db = connect_db(&b->url, 0, b->lock_wait_s, 10, 60, err, errlen);
        b->host_idx = 0;
        b->galera = false;
        return b->db != NULL ? ROOST_OK : ROOST_EUNAVAILABLE;
    }
    unsigned fail_s = (unsigned)b->failover_timeout_s;
    /* A stalled node accepts TCP connections (the kernel does) but never greets: a third of the
     * failover budget per node, so the next ones still get their turn. */
    unsigned connect_s = fail_s / 3 < 2 ? 2 : fail_s / 3 > 10 ? 10 : fail_s / 3;
    int64_t deadline = time_mono_ms() + (int64_t)fail_s * 1000;
    long wait_ms = 50;
    char why[256] = "";
    for (;;) {
        /* The writer first, then the list in order; nodes that just failed last. */
        size_t order[2 * STORE_MYSQL_HOSTS_MAX + 1], n = 0;
        int w = atomic_load(&c->writer);
        int64_t now = time_mono_ms();
        if (w >= 0) {
            order[n++] = (size_t)w;
        }
        pthread_mutex_lock(&clusters_mu);
        for (int pass = 0; pass < 2; pass++) {
            for (size_t i = 0; i < c->n_hosts; i++) {
                bool held = c->down_until_ms[i] > now;
                if ((int)i != w && held == (pass == 1)) {
                    order[n++] = i;
                }
            }
        }
        pthread_mutex_unlock(&clusters_mu);
        for (size_t k = 0; k < n; k++) {
            size_t i = order[k];
            char label[300];
            store_mysql_host_label(&b->url.hosts[i], label, sizeof label);
            MYSQL *db = connect_db(&b->url, i, b->lock_wait_s, connect_s, fail_s, err, errlen);
            bool galera = false;
            if (db != NULL && store_mysql_node_usable(db, &galera, err, errlen)) {
                b->db = db;
                b->host_idx = i;
                b->galera = galera;
                node_chosen(c, &b->url, i);
                if (galera) {
                    warn_autoinc(c, db);
                }
                return ROOST_OK;
            }
            if (db != NULL) {
                mysql_close(db);
            }
            snprintf(why, sizeof why, "%.60s: %.190s", label, err);
            node_failed(c, i, why);
        }
        if (time_mono_ms() + wait_ms >= deadline) {
            break;
        }
        time_sleep_ms(wait_ms);
        wait_ms = wait_ms < 500 ? wait_ms * 2 : 1000;
    }
    snprintf(err, errlen, "no usable database node among %.300s for %u s (last: %.200s)", c->hosts,
             fail_s, why);
    return ROOST_EUNAVAILABLE;
}

/* The wsrep_cluster_conf_id of the node behind db (the number of the cluster view it is in), or
 * -1 when it does not answer or is in no primary view. */
static int64_t conf_id(MYSQL *db)
{
    static const char sql[] = "SHOW GLOBAL STATUS LIKE 'wsrep_cluster_conf_id'";
    if (mysql_real_query(db, sql, sizeof sql - 1) != 0) {
        return -1;
    }
    MYSQL_RES *res = mysql_store_result(db);
    MYSQL_ROW row = res != NULL ? mysql_fetch_row(res) : NULL;
    /* Outside a primary view it says 18446744073709551615 (-1 as unsigned): no view. */
    int64_t id = row != NULL && row[1] != NULL ? (int64_t)strtoull(row[1], NULL, 10) : -1;
    if (res != NULL) {
        mysql_free_result(res);
    }
    return id;
}

/* Whether the candidate node behind cand is in the same cluster view as the writer node w. A
 * Galera node resumed after a SIGSTOP longer than evs.suspect_timeout has been evicted but does not
 * know it yet: measured here (tests/galera/ghost_window.py), for 3 to 4 s after SIGCONT it says
 * wsrep_ready=ON, Synced, Primary and the old cluster size, with the conf_id of the view it was
 * stopped in, below the cluster's; then it goes non-Primary and rejoins (a new view, the same
 * conf_id everywhere). Two probes 2 s apart both fit in that window; the conf_id tells it. Writes
 * moved there would fail with 1180 (unknown outcomes to resolve, then a failover back). */
static bool same_view(struct mysql_cluster *c, MYSQL *cand, int w)
{
    char err[256];
    int64_t mine = conf_id(cand);
    MYSQL *db = mine >= 0 ? connect_db(&c->url, (size_t)w, c->lock_wait_s, FAILBACK_CONNECT_S,
                                       FAILBACK_CONNECT_S, err, sizeof err)
                          : NULL;
    int64_t theirs = db != NULL ? conf_id(db) : -1;
    if (db != NULL) {
        mysql_close(db);
    }
    return mine >= 0 && mine == theirs;
}

/* The fail-back monitor (see the top of this file). It holds clusters_mu except while probing. */
static void *monitor_main(void *arg)
{
    struct mysql_cluster *c = arg;
    pthread_mutex_lock(&clusters_mu);
    while (!c->stopping) {
        struct timespec until;
        clock_gettime(CLOCK_MONOTONIC, &until);
        until.tv_sec += FAILBACK_EVERY_MS / 1000;
        pthread_cond_timedwait(&c->stop_cv, &clusters_mu, &until);
        int w = atomic_load(&c->writer);
        if (c->stopping || w <= 0) {
            c->failback_seen = -1; /* a later failover starts counting afresh */
            continue;
        }
        int64_t now = time_mono_ms();
        bool skip[STORE_MYSQL_HOSTS_MAX];
        for (int i = 0; i < w; i++) {
            skip[i] = c->down_until_ms[i] > now;
        }
        pthread_mutex_unlock(&clusters_mu);
        int back = -1;
        char err[256];
        for (int i = 0; i < w && back < 0; i++) {
            bool galera = false;
            MYSQL *db = skip[i] ? NULL
                                : connect_db(&c->url, (size_t)i, c->lock_wait_s, FAILBACK_CONNECT_S,
                                             FAILBACK_CONNECT_S, err, sizeof err);
            if (db != NULL && store_mysql_node_usable(db, &galera, err, sizeof err) &&
                (!galera || same_view(c, db, w))) {
                back = i;
            }
            if (db != NULL) {
                mysql_close(db);
            }
        }
        pthread_mutex_lock(&clusters_mu);
        bool seen_before = back >= 0 && back == c->failback_seen;
        c->failback_seen = back;
        int expected = w;
        if (seen_before && !c->stopping &&
            atomic_compare_exchange_strong(&c->writer, &expected, back)) {
            /* Every connection of this process follows at its next transaction
             * (store_mysql_off_writer). */
            char to[300];
            store_mysql_host_label(&c->url.hosts[back], to, sizeof to);
            c->failovers++;
            snprintf(c->why, sizeof c->why, "%.200s is usable again: back to the first usable node",
                     to);
            log_warn("store writer moved to another database node",
                     "hosts=%s writer=%s failovers=%llu why=\"%s\"", c->hosts, to,
                     (unsigned long long)c->failovers, c->why);
        }
    }
    pthread_mutex_unlock(&clusters_mu);
    return NULL;
}
