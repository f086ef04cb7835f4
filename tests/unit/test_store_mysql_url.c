/* SPDX-License-Identifier: MIT */
/* Unit tests of the mysql:// URL parser (src/store/store_mysql_url.c): percent-decoded user and
 * password, host, port, IPv6, several hosts (a Galera cluster), socket and isolation options, and
 * the URLs it must refuse; and of the matching of a publish batch's RETURNING rows to its rows
 * (store_mysql.c). Needs no server. */
#include <string.h>

#include "harness/check.h"
#include "store/store.h"
#include "store/store_lifecycle.h"
#include "store/store_mysql.h"
#include "store/store_mysql_int.h"

#include "common/banned.h"

static void test_store_mysql_url_parse_decodes_and_rejects(void)
{
    struct store_mysql_url u;
    CHECK(store_mysql_url_parse("mysql://us%3Aer:p%40ss%2F%25@db.example:3307/roost", &u) ==
          ROOST_OK);
    CHECK(strcmp(u.user, "us:er") == 0 && strcmp(u.pass, "p@ss/%") == 0);
    CHECK(strcmp(u.hosts[0].name, "db.example") == 0 && u.hosts[0].port == 3307 && u.n_hosts == 1 &&
          strcmp(u.db, "roost") == 0);
    CHECK(u.socket[0] == '\0' && !u.repeatable_read);
    CHECK(store_mysql_url_parse("mysql://roost@localhost/r?socket=/run/my%20sql.sock", &u) ==
          ROOST_OK);
    CHECK(strcmp(u.user, "roost") == 0 && u.pass[0] == '\0' &&
          strcmp(u.socket, "/run/my sql.sock") == 0 && u.hosts[0].port == 0);
    CHECK(store_mysql_url_parse("mysql://a:b@[::1]:3306/r?isolation=repeatable-read", &u) ==
          ROOST_OK);
    CHECK(strcmp(u.hosts[0].name, "::1") == 0 && u.hosts[0].port == 3306 && u.repeatable_read);
    static const char *const bad[] = {
        "mysql://h/", "mysql://h", "mysql://u@h:99999/db", "mysql://u@h:x/db", "mysql://u%4@h/db",
        "mysql://u@h/db?nosuch=1", "mysql://u%00@h/db", "mysqlx://u@h/db", "mysql://@/db",
        /* host lists: empty items, a port without a host, a socket with several hosts */
        "mysql://u@a,,b/db", "mysql://u@a,/db", "mysql://u@,a/db", "mysql://u@a,:3306/db",
        "mysql://u@a,[::1/db", "mysql://u@a,b/db?socket=/s", "mysql://u@a,b:65536/db",
        "mysql://u@h,h,h,h,h,h,h,h,h,h,h,h,h,h,h,h,h/db", /* 17 hosts */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_CASE(bad[i], store_mysql_url_parse(bad[i], &u) == ROOST_EINVAL);
    }
    CHECK(store_mysql_url_parse("mysql://u@/db?socket=/s", &u) == ROOST_OK && u.n_hosts == 0);
    struct store *st = (struct store *)&u;
    const char *err = NULL;
    CHECK(store_open("mysql://u@h/db?nosuch=1", NULL, &st, &err) == ROOST_EINVAL);
    CHECK(st == NULL && err != NULL && err[0] != '\0');
}

/* The Connector/J and libpq convention: HOST1:PORT1,HOST2:PORT2,... in list order, each with its
 * own port or the default, IPv6 in brackets (whose ':' and ',' do not split the list). */
static void test_store_mysql_url_parse_host_lists(void)
{
    struct store_mysql_url u;
    char label[300];
    CHECK(store_mysql_url_parse("mysql://roost:p%2Cw@10.0.0.1:3307,db-2,[fe80::1]:3309,"
                                "[::1],n%41me:1/roost",
                                &u) == ROOST_OK);
    CHECK(u.n_hosts == 5 && strcmp(u.pass, "p,w") == 0 && strcmp(u.db, "roost") == 0);
    CHECK(strcmp(u.hosts[0].name, "10.0.0.1") == 0 && u.hosts[0].port == 3307);
    CHECK(strcmp(u.hosts[1].name, "db-2") == 0 && u.hosts[1].port == 0);
    CHECK(strcmp(u.hosts[2].name, "fe80::1") == 0 && u.hosts[2].port == 3309);
    CHECK(strcmp(u.hosts[3].name, "::1") == 0 && u.hosts[3].port == 0);
    CHECK(strcmp(u.hosts[4].name, "nAme") == 0 && u.hosts[4].port == 1);
    CHECK(u.socket[0] == '\0' && !u.repeatable_read);
    store_mysql_host_label(&u.hosts[1], label, sizeof label);
    CHECK(strcmp(label, "db-2:3306") == 0);
    store_mysql_host_label(&u.hosts[2], label, sizeof label);
    CHECK(strcmp(label, "[fe80::1]:3309") == 0);
    store_mysql_host_label(&u.hosts[3], label, sizeof label);
    CHECK(strcmp(label, "[::1]:3306") == 0);
    CHECK(store_mysql_url_parse("mysql://u@a,b,c/db?isolation=repeatable-read", &u) == ROOST_OK);
    CHECK(u.n_hosts == 3 && strcmp(u.hosts[2].name, "c") == 0 && u.repeatable_read);
    CHECK(store_mysql_url_parse("mysql://u@h,h,h,h,h,h,h,h,h,h,h,h,h,h,h,h/db", &u) == ROOST_OK);
    CHECK(u.n_hosts == STORE_MYSQL_HOSTS_MAX);
}

/* The answer of INSERT … RETURNING event_id, seq as the driver leaves it: n rows of two cells. */
static void answer(struct rows *rs, char **cells, const char *const (*pairs)[2], size_t n)
{
    memset(rs, 0, sizeof *rs);
    rs->n = n;
    rs->cols = 2;
    rs->cell = cells;
    for (size_t i = 0; i < n; i++) {
        cells[2 * i] = (char *)pairs[i][0];
        cells[2 * i + 1] = (char *)pairs[i][1];
    }
}

/* MariaDB does not document the order of INSERT … RETURNING's rows: each seq goes to the row of
 * its event id, in whatever order the answers come; an answer for no row, or twice for one row,
 * is refused. */
static void test_store_mysql_returned_seqs_match_by_event_id(void)
{
    struct store_new_row rows[4] = {{.tenant_id = "t", .agent_id = "a", .event_id = "e1"},
                                    {.tenant_id = "t", .agent_id = "a", .event_id = "e2"},
                                    {.tenant_id = "t", .agent_id = "b", .event_id = "e3"},
                                    {.tenant_id = "t", .agent_id = "c", .event_id = "e4"}};
    char *cells[8];
    char err[256] = "";
    struct rows rs;
    static const char *const in_order[][2] = {{"e1", "7"}, {"e2", "8"}, {"e3", "1"}, {"e4", "5"}};
    answer(&rs, cells, in_order, 4);
    CHECK_EQ(store_mysql_returned_seqs(rows, 4, &rs, err, sizeof err), ROOST_OK);
    CHECK(rows[0].seq == 7 && rows[1].seq == 8 && rows[2].seq == 1 && rows[3].seq == 5);
    /* Two agents of one row each swapped, the others moved too: still each its own. */
    static const char *const shuffled[][2] = {{"e4", "5"}, {"e3", "1"}, {"e2", "8"}, {"e1", "7"}};
    answer(&rs, cells, shuffled, 4);
    CHECK_EQ(store_mysql_returned_seqs(rows, 4, &rs, err, sizeof err), ROOST_OK);
    CHECK(rows[0].seq == 7 && rows[1].seq == 8 && rows[2].seq == 1 && rows[3].seq == 5);
    static const char *const twice[][2] = {{"e1", "7"}, {"e1", "7"}, {"e3", "1"}, {"e4", "5"}};
    answer(&rs, cells, twice, 4);
    CHECK_EQ(store_mysql_returned_seqs(rows, 4, &rs, err, sizeof err), ROOST_ESTORE);
    static const char *const stranger[][2] = {{"e1", "7"}, {"e2", "8"}, {"e9", "1"}, {"e4", "5"}};
    answer(&rs, cells, stranger, 4);
    CHECK_EQ(store_mysql_returned_seqs(rows, 4, &rs, err, sizeof err), ROOST_ESTORE);
    CHECK(strstr(err, "another row") != NULL);
}

int main(void)
{
    RUN(test_store_mysql_url_parse_decodes_and_rejects);
    RUN(test_store_mysql_url_parse_host_lists);
    RUN(test_store_mysql_returned_seqs_match_by_event_id);
    return check_summary();
}
