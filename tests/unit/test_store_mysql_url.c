/* SPDX-License-Identifier: MIT */
/* Unit tests of the mysql:// URL parser (src/store/store_mysql.c): percent-decoded user and
 * password, host, port, IPv6, socket and isolation options, and the URLs it must refuse. Needs no
 * server. */
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
    CHECK(strcmp(u.host, "db.example") == 0 && u.port == 3307 && strcmp(u.db, "roost") == 0);
    CHECK(u.socket[0] == '\0' && !u.repeatable_read);
    CHECK(store_mysql_url_parse("mysql://roost@localhost/r?socket=/run/my%20sql.sock", &u) ==
          ROOST_OK);
    CHECK(strcmp(u.user, "roost") == 0 && u.pass[0] == '\0' &&
          strcmp(u.socket, "/run/my sql.sock") == 0 && u.port == 0);
    CHECK(store_mysql_url_parse("mysql://a:b@[::1]:3306/r?isolation=repeatable-read", &u) ==
          ROOST_OK);
    CHECK(strcmp(u.host, "::1") == 0 && u.port == 3306 && u.repeatable_read);
    static const char *const bad[] = {
        "mysql://h/",        "mysql://h",        "mysql://u@h:99999/db",
        "mysql://u@h:x/db",  "mysql://u%4@h/db", "mysql://u@h/db?nosuch=1",
        "mysql://u%00@h/db", "mysqlx://u@h/db",  "mysql://@/db",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK_CASE(bad[i], store_mysql_url_parse(bad[i], &u) == ROOST_EINVAL);
    }
    struct store *st = (struct store *)&u;
    const char *err = NULL;
    CHECK(store_open("mysql://u@h/db?nosuch=1", NULL, &st, &err) == ROOST_EINVAL);
    CHECK(st == NULL && err != NULL && err[0] != '\0');
}

int main(void)
{
    RUN(test_store_mysql_url_parse_decodes_and_rejects);
    return check_summary();
}
