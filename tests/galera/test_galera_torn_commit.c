/* SPDX-License-Identifier: MIT */
/* A transaction Galera rolled back mid-way must not commit its tail (issue 16). When another
 * node's commit brute-force-aborts a transaction while one of its statements runs, that statement
 * answers OK and the ones after it run in a new transaction, which COMMIT then commits
 * (tests/galera/bf_abort_multi.py measures the race). Here the abort is played by a ROLLBACK sent
 * on the store's own session between two publishes of one transaction, which leaves the session
 * in the same state: the first publish undone, the second in a new transaction. The commit must
 * answer ROOST_ERETRY (the group replays) and leave neither row; without the check it answered
 * OK with only the second row in, and the first publish's seq went to the next one.
 * argv[1] is scripts/galera.sh, argv[2] the cluster's directory. */
#include <stdlib.h>

#include "harness/harness.h"
#include "mysql/mysql_testutil.h"
#include "store/store.h"
#include "store/store_lifecycle.h"

#include "common/banned.h"

static const char *galera_sh, *galera_dir;

/* Run inside the store's transaction: the server undoes it behind the store's back. */
STORE_STMT_SAME(SERVER_ROLLBACK, "ROLLBACK");

static struct store *open_store(const char *url)
{
    struct store *st = NULL;
    const char *err = NULL;
    struct store_options opt = {.busy_timeout_ms = 10000, .failover_timeout_s = 10};
    if (store_open(url, &opt, &st, &err) != ROOST_OK) {
        printf("store_open(%s): %s\n", url, err != NULL ? err : "");
        return NULL;
    }
    if (st->ops->migrate(st) != ROOST_OK) {
        printf("migrate: %s\n", st->ops->errmsg(st));
        store_close(st);
        return NULL;
    }
    return st;
}

static int publish(struct store *st, const char *key, struct store_published *out)
{
    const char *to[] = {"work"};
    struct store_publish_item item = {
        .recipients = to, .n_recipients = 1, .payload = "{}", .idempotency_key = key};
    struct store_publish_req req = {
        .tenant_id = "t1", .items = &item, .n_items = 1, .now_ms = h_now_ms()};
    struct store_touches touches = {0};
    int rc = st->ops->publish(st, &req, out, &touches);
    store_touches_cleanup(&touches);
    return rc;
}

/* Rows of the inbox with idempotency key `key`, asked on a connection of its own. */
static long rows_with_key(const char *url, const char *key)
{
    MYSQL *db = mysql_testutil_connect(url);
    long n = -1;
    char *sql = h_fmt("SELECT COUNT(*) FROM inbox WHERE idempotency_key = '%s'", key);
    if (db != NULL && mysql_query(db, "SET SESSION wsrep_sync_wait = 15") == 0 &&
        mysql_query(db, sql) == 0) {
        MYSQL_RES *res = mysql_store_result(db);
        MYSQL_ROW row = res != NULL ? mysql_fetch_row(res) : NULL;
        n = row != NULL && row[0] != NULL ? strtol(row[0], NULL, 10) : -1;
        if (res != NULL) {
            mysql_free_result(res);
        }
    }
    free(sql);
    if (db != NULL) {
        mysql_close(db);
    }
    return n;
}

static void test_galera_commit_refuses_tail_of_aborted_transaction(void)
{
    char base[512], url[1024];
    char *line = h_fmt("'%s' url '%s'", galera_sh, galera_dir);
    FILE *f = popen(line, "r");
    free(line);
    CHECK(f != NULL && fgets(base, sizeof base, f) != NULL);
    if (f != NULL) {
        pclose(f);
    }
    base[strcspn(base, "\r\n")] = '\0';
    if (mysql_testutil_fresh_db(base, "torn", url, sizeof url) != 0) {
        CHECK(!"a fresh database");
        return;
    }
    struct store *st = open_store(url);
    if (st == NULL) {
        CHECK(!"store opened");
        mysql_testutil_drop_db(url);
        return;
    }
    struct store_published a, b, c;

    /* A whole transaction commits. */
    CHECK_EQ(st->ops->begin(st), ROOST_OK);
    CHECK_EQ(publish(st, "whole", &a), ROOST_OK);
    CHECK_EQ(st->ops->commit(st), ROOST_OK);
    CHECK_EQ(rows_with_key(url, "whole"), 1);

    /* Its head undone by the server, its tail in a new transaction: nothing commits. */
    CHECK_EQ(st->ops->begin(st), ROOST_OK);
    CHECK_EQ(publish(st, "head", &a), ROOST_OK);
    CHECK_EQ(store_run0(st, SERVER_ROLLBACK, NULL, NULL, NULL), ROOST_OK);
    CHECK_EQ(publish(st, "tail", &b), ROOST_OK);
    CHECK_EQ(st->ops->commit(st), ROOST_ERETRY);
    st->ops->rollback(st);
    CHECK_EQ(rows_with_key(url, "head"), 0);
    CHECK_EQ(rows_with_key(url, "tail"), 0);

    /* The replay commits both, each with a seq of its own. */
    CHECK_EQ(st->ops->begin(st), ROOST_OK);
    CHECK_EQ(publish(st, "head", &a), ROOST_OK);
    CHECK_EQ(publish(st, "tail", &b), ROOST_OK);
    CHECK_EQ(st->ops->commit(st), ROOST_OK);
    CHECK_EQ(rows_with_key(url, "head"), 1);
    CHECK_EQ(rows_with_key(url, "tail"), 1);
    CHECK(a.seq != b.seq);

    /* The session is usable afterwards. */
    CHECK_EQ(st->ops->begin(st), ROOST_OK);
    CHECK_EQ(publish(st, "after", &c), ROOST_OK);
    CHECK_EQ(st->ops->commit(st), ROOST_OK);
    CHECK_EQ(c.seq, b.seq + 1);
    store_close(st);
    mysql_testutil_drop_db(url);
}

int main(int argc, char **argv)
{
    h_init();
    if (argc < 3) {
        fprintf(stderr, "usage: %s GALERA_SH DIR (a cluster of scripts/galera.sh)\n", argv[0]);
        return 2;
    }
    galera_sh = argv[1];
    galera_dir = argv[2];
    RUN(test_galera_commit_refuses_tail_of_aborted_transaction);
    return h_summary();
}
