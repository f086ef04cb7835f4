/* SPDX-License-Identifier: MIT */
/* Unit tests of the mysql:// URL parser (src/store/store_mysql_url.c): percent-decoded user and
 * password, host, port, IPv6, several hosts (a Galera cluster), socket and isolation options, and
 * the URLs it must refuse. Needs no server. */
#include <string.h>

#include "harness/check.h"
#include "store/store.h"
#include "store/store_mysql.h"

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

int main(void)
{
    RUN(test_store_mysql_url_parse_decodes_and_rejects);
    RUN(test_store_mysql_url_parse_host_lists);
    return check_summary();
}
