/* SPDX-License-Identifier: MIT */
/* Checkpoints off the committing thread. SQLite's automatic checkpoint runs inside the COMMIT that
 * leaves the WAL at 1,000 pages or more: that commit copies the WAL into the database file and
 * syncs it before it returns, and every write queued behind it (on SQLite there is one writer)
 * waits with it. Under another tenant's big publishes that was the longest wait a small write saw
 * (doc/OPERATIONS.md, "Writers take tenants in turn"). Here a connection's WAL hook hands the
 * checkpoint to a thread of its own, with a connection of its own, which runs it PASSIVE beside the
 * next transactions (a passive checkpoint takes no lock a writer or a reader needs; the writer
 * restarts the WAL once it is copied whole). The committing connection checkpoints itself only
 * when the WAL has grown to SQLITE_CKPT_INLINE_PAGES, so a writer that outruns the thread is held
 * back as before and the WAL stays bounded. Only synchronous=NORMAL stores do this: under FULL,
 * where every commit syncs the WAL, checkpoints beside the commits made the tenant fairness bench
 * worse (B's p99 under A's batches 528 ms against 308, seven alternating pairs), so SQLite keeps
 * its own there. */
#include "store/store_sqlite_int.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

struct sqlite_ckpt {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    bool started, want, stop;
    char *path;
    struct sqlite_ckpt_stats stats;
};

/* Runs PASSIVE checkpoints on a connection of its own whenever the hook asks for one. */
static void *ckpt_main(void *arg)
{
    struct sqlite_ckpt *c = arg;
    sqlite3 *db = NULL;
    pthread_mutex_lock(&c->mu);
    for (;;) {
        while (!c->want && !c->stop) {
            pthread_cond_wait(&c->cv, &c->mu);
        }
        if (c->stop) {
            break;
        }
        c->want = false;
        pthread_mutex_unlock(&c->mu);
        if (db == NULL &&
            (sqlite3_open_v2(c->path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
                 SQLITE_OK ||
             sqlite3_exec(db, "PRAGMA synchronous=NORMAL", NULL, NULL, NULL) != SQLITE_OK)) {
            sqlite3_close(db);
            db = NULL;
        }
        /* SQLITE_BUSY (another checkpoint runs) or an I/O error: the next commit asks again. */
        int rc = db != NULL
                     ? sqlite3_wal_checkpoint_v2(db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL)
                     : SQLITE_CANTOPEN;
        pthread_mutex_lock(&c->mu);
        c->stats.background += rc == SQLITE_OK;
    }
    pthread_mutex_unlock(&c->mu);
    sqlite3_close(db);
    return NULL;
}

/* The WAL hook (on the committing thread, after its COMMIT): a WAL of `pages` frames. */
static int ckpt_hook(void *arg, sqlite3 *db, const char *name, int pages)
{
    struct sqlite_ckpt *c = arg;
    if (pages < SQLITE_CKPT_PAGES) {
        return SQLITE_OK;
    }
    pthread_mutex_lock(&c->mu);
    if (!c->started && !c->stop) {
        c->started = pthread_create(&c->thread, NULL, ckpt_main, c) == 0;
    }
    bool inline_ckpt = !c->started || pages >= SQLITE_CKPT_INLINE_PAGES;
    if (inline_ckpt) {
        c->stats.inline_ckpts++;
    } else {
        c->stats.handed++;
        c->want = true;
        pthread_cond_signal(&c->cv);
    }
    pthread_mutex_unlock(&c->mu);
    if (inline_ckpt) {
        /* What SQLite's automatic checkpoint does; its outcome changes nothing committed. */
        (void)sqlite3_wal_checkpoint_v2(db, name, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    }
    return SQLITE_OK;
}

int store_sqlite_ckpt_start(struct sqlite_store *b, const char *path)
{
    struct sqlite_ckpt *c = calloc(1, sizeof *c);
    if (c == NULL || (c->path = strdup(path)) == NULL) {
        free(c);
        return ROOST_ENOMEM;
    }
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->cv, NULL);
    b->ckpt = c;
    /* Replaces SQLite's automatic checkpoint, which is a WAL hook too. */
    sqlite3_wal_hook(b->db, ckpt_hook, c);
    return ROOST_OK;
}

void store_sqlite_ckpt_stop(struct sqlite_store *b)
{
    struct sqlite_ckpt *c = b->ckpt;
    if (c == NULL) {
        return;
    }
    sqlite3_wal_hook(b->db, NULL, NULL);
    pthread_mutex_lock(&c->mu);
    c->stop = true;
    pthread_cond_signal(&c->cv);
    bool started = c->started;
    pthread_mutex_unlock(&c->mu);
    if (started) {
        pthread_join(c->thread, NULL);
    }
    pthread_mutex_destroy(&c->mu);
    pthread_cond_destroy(&c->cv);
    free(c->path);
    free(c);
    b->ckpt = NULL;
}

void store_sqlite_ckpt_stats(struct sqlite_store *b, struct sqlite_ckpt_stats *out)
{
    memset(out, 0, sizeof *out);
    if (b->ckpt != NULL) {
        pthread_mutex_lock(&b->ckpt->mu);
        *out = b->ckpt->stats;
        pthread_mutex_unlock(&b->ckpt->mu);
    }
}
