/* SPDX-License-Identifier: MIT */
/* Tenant routing (store.tenant.<id> = URL): a mapped tenant's events live in its own store and
 * never in the default one, every route works for it, /readyz asks every store, and a store that
 * cannot be opened stops start-up with a message naming its key. The stores are SQLite files
 * here (the same code path serves MySQL shards); the sqlite3 CLI looks inside them. */
#include <stdlib.h>

#include "harness/harness.h"

#include "common/banned.h"

static struct roostd d;

/* Rows of `tenant` in the inbox of the SQLite file `db`, or -1. */
static int rows_in(const char *db, const char *tenant)
{
    char *cmd =
        h_fmt("sqlite3 '%s' \"SELECT count(*) FROM inbox WHERE tenant_id='%s'\"", db, tenant);
    FILE *p = popen(cmd, "r");
    free(cmd);
    int n = -1;
    if (p != NULL) {
        if (fscanf(p, "%d", &n) != 1) {
            n = -1;
        }
        pclose(p);
    }
    return n;
}

static void test_routing(const char *shard_db)
{
    char *main_db = h_fmt("%s/roost.db", d.dir);
    char *tok1 = h_token(&d, "t1", "agent:*:consume agent:*:publish");
    char *tok2 = h_token(&d, "t2", "agent:*:consume agent:*:publish");
    for (int i = 0; i < 3; i++) {
        CHECK_EQ(h_publish(d.http, tok1, "a", NULL, NULL, NULL), i + 1);
    }
    for (int i = 0; i < 5; i++) {
        CHECK_EQ(h_publish(d.http, tok2, "a", NULL, NULL, NULL), i + 1);
    }
    CHECK_EQ(rows_in(main_db, "t1"), 3);
    CHECK_EQ(rows_in(main_db, "t2"), 0);
    CHECK_EQ(rows_in(shard_db, "t2"), 5);
    CHECK_EQ(rows_in(shard_db, "t1"), 0);

    /* The metrics snapshot walks every store: each tenant's stats come from its own. */
    char *adm1 = h_token(&d, "t1", "tenant:admin"), *adm2 = h_token(&d, "t2", "tenant:admin");
    json_t *s1 = NULL, *s2 = NULL;
    bool ok;
    H_WAIT_UNTIL(ok, 10000,
                 (json_decref(s1), json_decref(s2), s1 = s2 = NULL,
                  h_callj(d.http, "GET", adm1, NULL, &s1, "/api/v1/admin/stats") == 200 &&
                      h_callj(d.http, "GET", adm2, NULL, &s2, "/api/v1/admin/stats") == 200 &&
                      h_int(s1, "pending") == 3 && h_int(s2, "pending") == 5));
    CHECK(ok);
    json_decref(s1);
    json_decref(s2);
    free(adm1);
    free(adm2);

    /* The whole lifecycle on the shard: read, claim, ack. */
    long st = 0;
    json_t *page = h_inbox(d.http, tok2, "a", 0, 100, &st);
    CHECK_EQ(st, 200);
    CHECK_EQ(json_array_size(json_object_get(page, "events")), 5);
    json_decref(page);
    json_t *claimed = h_claim(d.http, tok2, "a", 5, 30, NULL);
    CHECK_EQ(json_array_size(claimed), 5);
    for (size_t i = 0; i < json_array_size(claimed); i++) {
        json_t *ev = json_array_get(claimed, i);
        CHECK_EQ(h_ack(d.http, tok2, "a", h_str(ev, "event_id"), h_str(ev, "lease_token")), 200);
    }
    json_decref(claimed);
    /* t1 is untouched by t2's work, and the other way round. */
    claimed = h_claim(d.http, tok1, "a", 10, 30, NULL);
    CHECK_EQ(json_array_size(claimed), 3);
    json_decref(claimed);

    http_request(d.http, "GET", "/readyz", NULL, NULL, &st, NULL);
    CHECK_EQ(st, 200);
    free(tok1);
    free(tok2);
    free(main_db);
}

static void test_tenant_stores_unopenable_shard_stops_startup(void)
{
    struct roostd bad;
    static const char *const sets[] = {"store.tenant.t9=sqlite:///nonexistent-dir/x/y.db", NULL};
    CHECK(roostd_start(&bad, NULL, sets) != 0); /* prints the log, which names the key */
}

int main(void)
{
    h_init();
    const char *tmp = getenv("TMPDIR");
    char dir[256];
    snprintf(dir, sizeof dir, "%s/roost-shard-XXXXXX", tmp ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        CHECK(!"temp dir");
        return h_summary();
    }
    char *shard_db = h_fmt("%s/t2.db", dir);
    char *set = h_fmt("store.tenant.t2=sqlite://%s", shard_db);
    const char *sets[] = {set, "store.synchronous=normal", NULL};
    if (roostd_start_checked(&d, NULL, sets)) {
        test_routing(shard_db);
        roostd_finish(&d);
    }
    RUN(test_tenant_stores_unopenable_shard_stops_startup);
    free(set);
    free(shard_db);
    char *rm = h_fmt("rm -rf '%s'", dir);
    CHECK_EQ(system(rm), 0);
    free(rm);
    return h_summary();
}
