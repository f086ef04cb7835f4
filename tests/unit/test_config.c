/* SPDX-License-Identifier: MIT */
/* Unit tests of src/server/config.c: defaults from the table, validation messages naming the key,
 * the file loader (line numbers), ROOST_* variables, precedence, cross-key checks and masking. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness/check.h"
#include "server/config.h"

#include "common/banned.h"

static char tmpdir[256];

/* Writes `text` to a fresh file in tmpdir; returns its path in a static buffer per slot. */
static const char *write_file(const char *name, const char *text)
{
    static char paths[8][400];
    static int slot;
    char *path = paths[slot++ % 8];
    snprintf(path, 400, "%s/%s", tmpdir, name);
    FILE *fp = fopen(path, "w");
    if (fp == NULL) {
        return NULL;
    }
    fputs(text, fp);
    fclose(fp);
    return path;
}

/* config_print into a heap string. */
static char *print_to_string(const struct config *cfg, bool reference)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    if (fp == NULL) {
        return NULL;
    }
    if (reference) {
        config_print_reference(fp);
    } else {
        config_print(cfg, fp);
    }
    fclose(fp);
    return buf;
}

static void test_config_defaults(void)
{
    struct config cfg;
    CHECK(config_init(&cfg) == 0);
    CHECK_STREQ(cfg.listen, "127.0.0.1:8080");
    CHECK_STREQ(cfg.data_dir, "./var");
    CHECK_STREQ(cfg.store_url, "");
    CHECK_STREQ(cfg.store_synchronous, "full");
    CHECK_EQ(cfg.store_readers, 2);
    CHECK_EQ(cfg.lease_default_s, 60);
    CHECK_EQ(cfg.lease_max_s, 43200);
    CHECK_EQ(cfg.lease_max_total_s, 86400);
    CHECK_EQ(cfg.limits_max_batch, 1000);
    CHECK_EQ(cfg.limits_max_body_bytes, 4194304);
    CHECK_EQ(cfg.limits_max_json_depth, 32);
    CHECK_STREQ(cfg.auth_key_file, "");
    CHECK_STREQ(cfg.log_level, "info");
    char err[256] = "";
    CHECK(config_finalize(&cfg, err, sizeof err) == 0);
    CHECK_STREQ(cfg.store_url, "sqlite://./var/roost.db");
    config_cleanup(&cfg);
    config_cleanup(&cfg); /* idempotent */
}

static void test_config_set_validates_with_key_in_message(void)
{
    struct config cfg;
    char err[256];
    CHECK(config_init(&cfg) == 0);

    CHECK(config_set(&cfg, "limits.max_batch", "0", err, sizeof err) == -1);
    CHECK_STREQ(err, "limits.max_batch: must be an integer in 1..100000");
    CHECK_EQ(cfg.limits_max_batch, 1000); /* unchanged on error */
    static const char *const bad_ints[] = {
        "",    " 5", "5 ", "5x", "x5", "1e3", "0x10", "100001", "-1", "99999999999999999999",
        "5.0", "+",  "-",
    };
    for (size_t i = 0; i < sizeof bad_ints / sizeof bad_ints[0]; i++) {
        err[0] = '\0';
        CHECK(config_set(&cfg, "limits.max_batch", bad_ints[i], err, sizeof err) == -1);
        CHECK(strncmp(err, "limits.max_batch: ", 18) == 0);
    }
    CHECK(config_set(&cfg, "limits.max_batch", "100000", err, sizeof err) == 0);
    CHECK_EQ(cfg.limits_max_batch, 100000);
    CHECK(config_set(&cfg, "limits.max_batch", "1", err, sizeof err) == 0);
    CHECK_EQ(cfg.limits_max_batch, 1);
    CHECK(config_set(&cfg, "limits.max_batch", "+7", err, sizeof err) == 0);
    CHECK_EQ(cfg.limits_max_batch, 7);
    CHECK(config_set(&cfg, "claim.max_wait_s", "0", err, sizeof err) == 0);
    CHECK_EQ(cfg.claim_max_wait_s, 0);

    CHECK(config_set(&cfg, "nope", "1", err, sizeof err) == -1);
    CHECK_STREQ(err, "unknown config key 'nope'");
    CHECK(config_set(&cfg, "LIMITS.MAX_BATCH", "1", err, sizeof err) == -1);
    CHECK_STREQ(err, "unknown config key 'LIMITS.MAX_BATCH'");
    CHECK(config_set(&cfg, "listen", NULL, err, sizeof err) == -1);
    CHECK(strstr(err, "listen") != NULL);

    CHECK(config_set(&cfg, "log.level", "verbose", err, sizeof err) == -1);
    CHECK(strncmp(err, "log.level: ", 11) == 0);
    CHECK_STREQ(cfg.log_level, "info");
    CHECK(config_set(&cfg, "log.level", "debug", err, sizeof err) == 0);
    CHECK_STREQ(cfg.log_level, "debug");
    CHECK(config_set(&cfg, "store.synchronous", "off", err, sizeof err) == -1);
    CHECK(strncmp(err, "store.synchronous: ", 19) == 0);
    CHECK(config_set(&cfg, "store.synchronous", "normal", err, sizeof err) == 0);
    CHECK(config_set(&cfg, "data_dir", "", err, sizeof err) == -1);
    CHECK(strncmp(err, "data_dir: ", 10) == 0);

    static const char *const good_listen[] = {"127.0.0.1:0", "0.0.0.0:65535", "localhost:80",
                                              "[::1]:8080", "[::]:0"};
    for (size_t i = 0; i < sizeof good_listen / sizeof good_listen[0]; i++) {
        CHECK(config_set(&cfg, "listen", good_listen[i], err, sizeof err) == 0);
        CHECK_STREQ(cfg.listen, good_listen[i]);
    }
    static const char *const bad_listen[] = {"8080",      "localhost",  "localhost:",  ":8080",
                                             "::1:8080",  "host:65536", "host:-1",     "host:80x",
                                             "[::1]8080", "[]:80",      "host:123456", "a b:80",
                                             ""};
    for (size_t i = 0; i < sizeof bad_listen / sizeof bad_listen[0]; i++) {
        err[0] = '\0';
        CHECK(config_set(&cfg, "listen", bad_listen[i], err, sizeof err) == -1);
        CHECK(strncmp(err, "listen: ", 8) == 0);
    }

    /* Over-long strings are refused. */
    char *long_value = malloc(5000);
    memset(long_value, 'x', 4999);
    long_value[4999] = '\0';
    CHECK(config_set(&cfg, "auth.key_file", long_value, err, sizeof err) == -1);
    CHECK(strncmp(err, "auth.key_file: ", 15) == 0);
    free(long_value);
    config_cleanup(&cfg);
}

static void test_config_file_loads_and_names_line(void)
{
    struct config cfg;
    char err[512];
    CHECK(config_init(&cfg) == 0);
    const char *path = write_file("ok.conf", "# roostd\n"
                                             "; another comment\n"
                                             "\n"
                                             "listen = 0.0.0.0:9000\n"
                                             "  lease.default_s = 30   ; inline comment\n"
                                             "store.url=mysql://u:p@db/roost\n"
                                             "[limits]\n"
                                             "max_batch = 50\n"
                                             "[]\n");
    CHECK(config_load_file(&cfg, path, err, sizeof err) == 0);
    CHECK_STREQ(cfg.listen, "0.0.0.0:9000");
    CHECK_EQ(cfg.lease_default_s, 30);
    CHECK_STREQ(cfg.store_url, "mysql://u:p@db/roost");
    CHECK_EQ(cfg.limits_max_batch, 50);

    char expect[512];
    path = write_file("bad-value.conf", "listen = 0.0.0.0:9000\n"
                                        "# comment\n"
                                        "limits.max_batch = 0\n"
                                        "log.level = debug\n");
    CHECK(config_load_file(&cfg, path, err, sizeof err) == -1);
    snprintf(expect, sizeof expect, "%s:3: limits.max_batch: must be an integer in 1..100000",
             path);
    CHECK_STREQ(err, expect);

    path = write_file("unknown.conf", "\nlease.defualt_s = 5\n");
    CHECK(config_load_file(&cfg, path, err, sizeof err) == -1);
    snprintf(expect, sizeof expect, "%s:2: unknown config key 'lease.defualt_s'", path);
    CHECK_STREQ(err, expect);

    path = write_file("section.conf", "[lease]\ndefault_s = 5\nbogus = 1\n");
    CHECK(config_load_file(&cfg, path, err, sizeof err) == -1);
    snprintf(expect, sizeof expect, "%s:3: unknown config key 'lease.bogus'", path);
    CHECK_STREQ(err, expect);

    path = write_file("syntax.conf", "log.level = warn\n\n\nthis line has no equals sign\n");
    CHECK(config_load_file(&cfg, path, err, sizeof err) == -1);
    snprintf(expect, sizeof expect, "%s:4: ", path);
    CHECK(strncmp(err, expect, strlen(expect)) == 0);
    CHECK(strstr(err, "syntax") != NULL);

    /* The first error wins when a syntax error precedes a bad value, and vice versa. */
    path = write_file("two.conf", "oops\nlimits.max_batch = 0\n");
    CHECK(config_load_file(&cfg, path, err, sizeof err) == -1);
    snprintf(expect, sizeof expect, "%s:1: ", path);
    CHECK(strncmp(err, expect, strlen(expect)) == 0);
    path = write_file("two-b.conf", "limits.max_batch = 0\noops\n");
    CHECK(config_load_file(&cfg, path, err, sizeof err) == -1);
    snprintf(expect, sizeof expect, "%s:1: limits.max_batch: ", path);
    CHECK(strncmp(err, expect, strlen(expect)) == 0);

    /* A line longer than the parser's buffer is an error on that line, not a silent split. */
    char text[1200];
    char long_dir[1000];
    memset(long_dir, 'd', sizeof long_dir - 1);
    long_dir[sizeof long_dir - 1] = '\0';
    snprintf(text, sizeof text, "log.level = warn\ndata_dir = /%s\n", long_dir);
    path = write_file("long.conf", text);
    CHECK(config_load_file(&cfg, path, err, sizeof err) == -1);
    snprintf(expect, sizeof expect, "%s:2: line longer than", path);
    CHECK(strncmp(err, expect, strlen(expect)) == 0);

    snprintf(expect, sizeof expect, "%s/does-not-exist.conf", tmpdir);
    CHECK(config_load_file(&cfg, expect, err, sizeof err) == -1);
    CHECK(strstr(err, "does-not-exist.conf") != NULL);
    config_cleanup(&cfg);
}

static void test_config_env(void)
{
    struct config cfg;
    char err[512];
    CHECK(config_init(&cfg) == 0);
    char *env[] = {(char *)"PATH=/bin",
                   (char *)"ROOST_LEASE_DEFAULT_S=30",
                   (char *)"ROOST_LOG_LEVEL=warn",
                   (char *)"ROOST_STORE_URL=sqlite:///tmp/x.db",
                   (char *)"ROOST_LIMITS_MAX_BATCH_EXTRA=1",
                   (char *)"ROOST_UNRELATED=1",
                   (char *)"roost_listen=0.0.0.0:1",
                   NULL};
    CHECK(config_load_env(&cfg, env, err, sizeof err) == 0);
    CHECK_EQ(cfg.lease_default_s, 30);
    CHECK_STREQ(cfg.log_level, "warn");
    CHECK_STREQ(cfg.store_url, "sqlite:///tmp/x.db");
    CHECK_EQ(cfg.limits_max_batch, 1000);
    CHECK_STREQ(cfg.listen, "127.0.0.1:8080");

    char *bad[] = {(char *)"ROOST_LIMITS_MAX_BATCH=0", NULL};
    CHECK(config_load_env(&cfg, bad, err, sizeof err) == -1);
    CHECK(strstr(err, "ROOST_LIMITS_MAX_BATCH") != NULL);
    CHECK(strstr(err, "limits.max_batch: must be an integer in 1..100000") != NULL);

    /* NULL means the process environment. */
    setenv("ROOST_CLAIM_MAX_ATTEMPTS", "9", 1);
    CHECK(config_load_env(&cfg, NULL, err, sizeof err) == 0);
    CHECK_EQ(cfg.claim_max_attempts, 9);
    unsetenv("ROOST_CLAIM_MAX_ATTEMPTS");
    config_cleanup(&cfg);
}

static void test_config_precedence_default_file_env_set(void)
{
    struct config cfg;
    char err[512];
    CHECK(config_init(&cfg) == 0);
    const char *path = write_file("prec.conf", "lease.default_s = 10\n"
                                               "log.level = warn\n"
                                               "claim.max_attempts = 7\n");
    char *env[] = {(char *)"ROOST_LEASE_DEFAULT_S=20", (char *)"ROOST_LOG_LEVEL=error", NULL};
    CHECK(config_load_file(&cfg, path, err, sizeof err) == 0);
    CHECK(config_load_env(&cfg, env, err, sizeof err) == 0);
    CHECK(config_set(&cfg, "lease.default_s", "30", err, sizeof err) == 0);
    CHECK(config_finalize(&cfg, err, sizeof err) == 0);
    CHECK_EQ(cfg.lease_default_s, 30);   /* --set */
    CHECK_STREQ(cfg.log_level, "error"); /* env */
    CHECK_EQ(cfg.claim_max_attempts, 7); /* file */
    CHECK_EQ(cfg.store_readers, 2);      /* default */
    config_cleanup(&cfg);
}

static void test_config_set_takes_a_tenant_key_with_the_longest_id(void)
{
    char id[ROOST_ID_MAX + 1];
    memset(id, 't', ROOST_ID_MAX);
    id[ROOST_ID_MAX] = '\0';
    char set[512];
    snprintf(set, sizeof set, "%s%s=all", CONFIG_TENANT_SIG_PREFIX, id);
    const char *sets[] = {set};
    struct config_source src = {.sets = sets, .n_sets = 1};
    struct config cfg;
    char err[512] = "";
    CHECK(config_build(&cfg, &src, err, sizeof err) == 0);
    CHECK_STREQ(err, "");
    CHECK(config_sig_policy(&cfg, id) == CONFIG_SIG_ALL);
    config_cleanup(&cfg);
}

static void test_config_finalize_cross_checks(void)
{
    struct config cfg;
    char err[512];

    CHECK(config_init(&cfg) == 0);
    CHECK(config_set(&cfg, "lease.default_s", "100", err, sizeof err) == 0);
    CHECK(config_set(&cfg, "lease.max_s", "50", err, sizeof err) == 0);
    CHECK(config_finalize(&cfg, err, sizeof err) == -1);
    CHECK(strncmp(err, "lease.default_s: ", 17) == 0 && strstr(err, "lease.max_s") != NULL);
    CHECK(config_set(&cfg, "lease.max_s", "100", err, sizeof err) == 0);
    CHECK(config_finalize(&cfg, err, sizeof err) == 0); /* equal is fine */
    config_cleanup(&cfg);

    CHECK(config_init(&cfg) == 0);
    CHECK(config_set(&cfg, "lease.max_s", "90000", err, sizeof err) == 0);
    CHECK(config_finalize(&cfg, err, sizeof err) == -1);
    CHECK(strncmp(err, "lease.max_s: ", 13) == 0 && strstr(err, "lease.max_total_s") != NULL);
    CHECK(config_set(&cfg, "lease.max_total_s", "90000", err, sizeof err) == 0);
    CHECK(config_finalize(&cfg, err, sizeof err) == 0);
    config_cleanup(&cfg);

    CHECK(config_init(&cfg) == 0);
    CHECK(config_set(&cfg, "claim.max_wait_s", "120", err, sizeof err) == 0);
    CHECK(config_finalize(&cfg, err, sizeof err) == -1);
    CHECK(strncmp(err, "http.timeout_s: ", 16) == 0);
    config_cleanup(&cfg);

    /* Values poked into the struct directly are caught too. */
    CHECK(config_init(&cfg) == 0);
    free(cfg.log_level);
    cfg.log_level = strdup("loud");
    CHECK(config_finalize(&cfg, err, sizeof err) == -1);
    CHECK(strncmp(err, "log.level: ", 11) == 0);
    config_cleanup(&cfg);
    CHECK(config_init(&cfg) == 0);
    free(cfg.store_synchronous);
    cfg.store_synchronous = strdup("extra");
    CHECK(config_finalize(&cfg, err, sizeof err) == -1);
    CHECK(strncmp(err, "store.synchronous: ", 19) == 0);
    config_cleanup(&cfg);
    CHECK(config_init(&cfg) == 0);
    free(cfg.listen);
    cfg.listen = strdup("nohost");
    CHECK(config_finalize(&cfg, err, sizeof err) == -1);
    CHECK(strncmp(err, "listen: ", 8) == 0);
    config_cleanup(&cfg);
    CHECK(config_init(&cfg) == 0);
    cfg.store_readers = 0;
    CHECK(config_finalize(&cfg, err, sizeof err) == -1);
    CHECK(strncmp(err, "store.readers: ", 15) == 0);
    config_cleanup(&cfg);

    /* store.url: derived from data_dir when empty, kept when set. */
    CHECK(config_init(&cfg) == 0);
    CHECK(config_set(&cfg, "data_dir", "/srv/roost", err, sizeof err) == 0);
    CHECK(config_finalize(&cfg, err, sizeof err) == 0);
    CHECK_STREQ(cfg.store_url, "sqlite:///srv/roost/roost.db");
    config_cleanup(&cfg);
    CHECK(config_init(&cfg) == 0);
    CHECK(config_set(&cfg, "store.url", "mysql://r:pw@h:3306/d", err, sizeof err) == 0);
    CHECK(config_finalize(&cfg, err, sizeof err) == 0);
    CHECK_STREQ(cfg.store_url, "mysql://r:pw@h:3306/d");
    config_cleanup(&cfg);
}

static void test_config_print_masks_secrets(void)
{
    struct config cfg;
    char err[256];
    CHECK(config_init(&cfg) == 0);
    CHECK(config_set(&cfg, "store.url", "mysql://roost:s3cret@db.example:3306/roost", err,
                     sizeof err) == 0);
    char *out = print_to_string(&cfg, false);
    CHECK(out != NULL && strstr(out, "s3cret") == NULL);
    CHECK(out != NULL &&
          strstr(out, "\nstore.url = mysql://roost:********@db.example:3306/roost\n") != NULL);
    CHECK(out != NULL && strstr(out, "listen = 127.0.0.1:8080\n") == out);
    CHECK(out != NULL && strstr(out, "\nlimits.max_batch = 1000\n") != NULL);
    CHECK(out != NULL && strstr(out, "\nlog.level = info\n") != NULL);
    free(out);

    static const struct {
        const char *url;
        const char *secret;
        const char *shown;
    } cases[] = {
        {"mysql://u:pa/ss@w@rd@h/db", "pa/ss@w@rd", "store.url = mysql://u:********@h/db\n"},
        {"mysql://u:p?x#y@h/db", "p?x#y", "store.url = mysql://u:********@h/db\n"},
        {"mysql://h/db?user=u&password=zz9&socket=/run/m.sock", "zz9",
         "store.url = mysql://h/db?user=u&password=********&socket=/run/m.sock\n"},
        {"mysql://u@h/db", NULL, "store.url = mysql://u@h/db\n"},
        {"sqlite:///var/lib/roost/roost.db", NULL,
         "store.url = sqlite:///var/lib/roost/roost.db\n"},
        {"opaque-secret-value", "opaque-secret-value", "store.url = ********\n"},
        {"", NULL, "store.url = \n"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        CHECK(config_set(&cfg, "store.url", cases[i].url, err, sizeof err) == 0);
        out = print_to_string(&cfg, false);
        CHECK(out != NULL);
        if (out == NULL) {
            continue;
        }
        if (cases[i].secret != NULL) {
            CHECK(strstr(out, cases[i].secret) == NULL);
        }
        if (strstr(out, cases[i].shown) == NULL) {
            fprintf(stderr, "case %zu: expected '%s' in:\n%s", i, cases[i].shown, out);
        }
        CHECK(strstr(out, cases[i].shown) != NULL);
        free(out);
    }
    config_cleanup(&cfg);
}

static void test_config_print_reference(void)
{
    char *out = print_to_string(NULL, true);
    CHECK(out != NULL);
    if (out == NULL) {
        return;
    }
    CHECK(strncmp(out, "| key | default | range | reloadable | description |\n|---|", 56) == 0);
    CHECK(strstr(out, "| `limits.max_batch` | `1000` | 1..100000 | yes | ") != NULL);
    CHECK(strstr(out, "| `listen` | `127.0.0.1:8080` | string | no | ") != NULL);
    CHECK(strstr(out, "| `store.url` |  | string | no | ") != NULL);
    /* One row per key, the two header lines and the store.tenant.TENANT_ID and
     * signatures.tenant.TENANT_ID pattern rows. */
    size_t lines = 0;
    for (const char *p = out; *p; p++) {
        lines += *p == '\n';
    }
    struct config cfg;
    CHECK(config_init(&cfg) == 0);
    char *printed = print_to_string(&cfg, false);
    size_t keys = 0;
    for (const char *p = printed; p && *p; p++) {
        keys += *p == '\n';
    }
    CHECK(keys > 20 && lines == keys + 4);
    free(printed);
    config_cleanup(&cfg);
    free(out);
}

static void test_config_signature_policies(void)
{
    struct config cfg, fresh;
    char err[256], changed[256], restart[256];
    CHECK(config_init(&cfg) == 0);
    CHECK(config_sig_policy(&cfg, "t1") == CONFIG_SIG_OFF);
    CHECK(config_set(&cfg, "signatures.require", "mutations", err, sizeof err) == 0);
    CHECK(config_set(&cfg, "signatures.tenant.t1", "all", err, sizeof err) == 0);
    CHECK(config_set(&cfg, "signatures.tenant.t2", "mutations", err, sizeof err) == 0);
    CHECK(config_set(&cfg, "signatures.tenant.t2", "off", err, sizeof err) == 0);
    CHECK(cfg.n_tenant_sigs == 2);
    CHECK(config_sig_policy(&cfg, "t1") == CONFIG_SIG_ALL);
    CHECK(config_sig_policy(&cfg, "t2") == CONFIG_SIG_OFF);
    CHECK(config_sig_policy(&cfg, "t3") == CONFIG_SIG_MUTATIONS);
    CHECK(config_set(&cfg, "signatures.require", "sometimes", err, sizeof err) != 0);
    CHECK(strstr(err, "signatures.require") != NULL);
    CHECK(config_set(&cfg, "signatures.tenant.t1", "yes", err, sizeof err) != 0);
    CHECK(config_set(&cfg, "signatures.tenant.bad/id", "all", err, sizeof err) != 0);
    /* Reload: the tenant table is reloadable and swapped in. */
    CHECK(config_init(&fresh) == 0);
    CHECK(config_set(&fresh, "signatures.tenant.t9", "all", err, sizeof err) == 0);
    config_apply_reloadable(&cfg, &fresh, changed, sizeof changed, restart, sizeof restart);
    CHECK(strstr(changed, "signatures.tenant.*") != NULL);
    CHECK(strstr(changed, "signatures.require") != NULL);
    CHECK(strstr(restart, "signatures") == NULL);
    CHECK(cfg.n_tenant_sigs == 1 && config_sig_policy(&cfg, "t9") == CONFIG_SIG_ALL);
    CHECK(config_sig_policy(&cfg, "t1") == CONFIG_SIG_OFF);
    config_cleanup(&fresh);
    config_cleanup(&cfg);
}

static void test_config_tenant_stores(void)
{
    struct config cfg;
    char err[256];
    CHECK(config_init(&cfg) == 0);
    CHECK(config_set(&cfg, "store.tenant.t2", "mysql://u:pw@db2/roost", err, sizeof err) == 0);
    CHECK(config_set(&cfg, "store.tenant.t3", "sqlite:///var/t3.db", err, sizeof err) == 0);
    CHECK(config_set(&cfg, "store.tenant.t2", "mysql://u:pw@db9/roost", err, sizeof err) == 0);
    CHECK_EQ(cfg.n_tenant_stores, 2);
    CHECK_STREQ(cfg.tenant_stores[0].url, "mysql://u:pw@db9/roost"); /* replaced, not added */
    CHECK(config_set(&cfg, "store.tenant.bad/id", "sqlite:///x", err, sizeof err) == -1);
    CHECK(strstr(err, "not a valid tenant id") != NULL);
    CHECK(config_set(&cfg, "store.tenant.t4", "not-a-url", err, sizeof err) == -1);
    CHECK(strstr(err, "store.tenant.t4") != NULL);
    CHECK(config_set(&cfg, "store.tenant.", "sqlite:///x", err, sizeof err) == -1);
    char *printed = print_to_string(&cfg, false);
    CHECK(printed && strstr(printed, "store.tenant.t2 = mysql://u:********@db9/roost\n") != NULL);
    CHECK(printed && strstr(printed, "pw") == NULL);
    free(printed);
    config_cleanup(&cfg);
    CHECK_EQ(cfg.n_tenant_stores, 0);
}

int main(void)
{
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmpdir, sizeof tmpdir, "%s/roost-test-config-XXXXXX", base);
    if (mkdtemp(tmpdir) == NULL) {
        perror("mkdtemp");
        CHECK(!"mkdtemp");
        return check_summary();
    }
    RUN(test_config_defaults);
    RUN(test_config_set_validates_with_key_in_message);
    RUN(test_config_file_loads_and_names_line);
    RUN(test_config_env);
    RUN(test_config_precedence_default_file_env_set);
    RUN(test_config_set_takes_a_tenant_key_with_the_longest_id);
    RUN(test_config_finalize_cross_checks);
    RUN(test_config_print_masks_secrets);
    RUN(test_config_print_reference);
    RUN(test_config_tenant_stores);
    RUN(test_config_signature_policies);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0) {
        fprintf(stderr, "could not remove %s\n", tmpdir);
    }
    return check_summary();
}
