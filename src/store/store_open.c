/* SPDX-License-Identifier: MIT */
/* Opening a store by URL scheme: the one place that lists every dialect (the dialects include
 * store.h, so store.c does not include them). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "store/store.h"
#include "store/store_lifecycle.h"
#include "store/store_mysql.h"
#include "store/store_ops.h"
#include "store/store_pg.h"
#include "store/store_sqlite.h"

#include "common/banned.h"

static const struct store_dialect *const dialects[] = {
    &store_sqlite_dialect,
    &store_mysql_dialect,
    &store_pg_dialect,
};

#define N_DIALECTS (sizeof dialects / sizeof dialects[0])

/* The dialect of the URL's scheme, or NULL. */
static bool scheme_is(const char *scheme, const char *url, size_t len)
{
    return scheme != NULL && strlen(scheme) == len && memcmp(scheme, url, len) == 0;
}

static const struct store_dialect *dialect_of(const char *url)
{
    const char *sep = url != NULL ? strstr(url, "://") : NULL;
    if (sep == NULL) {
        return NULL;
    }
    size_t scheme_len = (size_t)(sep - url);
    for (size_t i = 0; i < N_DIALECTS; i++) {
        if (scheme_is(dialects[i]->scheme, url, scheme_len) ||
            scheme_is(dialects[i]->scheme_alias, url, scheme_len)) {
            return dialects[i];
        }
    }
    return NULL;
}

/* "unknown store URL scheme (expected a:// or b://)", from the table. */
static char unknown_scheme[160];
static pthread_once_t unknown_scheme_once = PTHREAD_ONCE_INIT;

static void unknown_scheme_build(void)
{
    size_t used = (size_t)snprintf(unknown_scheme, sizeof unknown_scheme,
                                   "unknown store URL scheme (expected ");
    for (size_t i = 0; i < N_DIALECTS && used < sizeof unknown_scheme; i++) {
        used += (size_t)snprintf(unknown_scheme + used, sizeof unknown_scheme - used, "%s%s://",
                                 i == 0               ? ""
                                 : i + 1 < N_DIALECTS ? ", "
                                                      : " or ",
                                 dialects[i]->scheme);
    }
    if (used < sizeof unknown_scheme) {
        snprintf(unknown_scheme + used, sizeof unknown_scheme - used, ")");
    }
}

int store_open(const char *url, const struct store_options *opt, struct store **out,
               const char **errmsg)
{
    static const struct store_options defaults = {.busy_timeout_ms = ROOST_BUSY_TIMEOUT_MS,
                                                  .synchronous_full = true};
    *out = NULL;
    if (errmsg != NULL) {
        *errmsg = NULL;
    }
    if (url == NULL) {
        if (errmsg != NULL) {
            *errmsg = "no store URL";
        }
        return ROOST_EINVAL;
    }
    if (strstr(url, "://") == NULL) {
        if (errmsg != NULL) {
            *errmsg = "the store URL must look like scheme://...";
        }
        return ROOST_EINVAL;
    }
    const struct store_dialect *d = dialect_of(url);
    if (d == NULL) {
        if (errmsg != NULL) {
            pthread_once(&unknown_scheme_once, unknown_scheme_build);
            *errmsg = unknown_scheme;
        }
        return ROOST_EINVAL;
    }
    /* The start-up check: a table or dialect with a hole never opens (tests/unit/test_store_ops
     * proves the check fails on one). */
    if (store_ops_missing(&store_ops_table) >= 0 || store_dialect_missing(d) != NULL) {
        if (errmsg != NULL) {
            *errmsg = "the store's operations table or dialect is incomplete";
        }
        return ROOST_EINTERNAL;
    }
    const struct store_options *o = opt != NULL ? opt : &defaults;
    int rc = d->open(url, o, out);
    if (rc == ROOST_OK) {
        (*out)->admin_scan_ms = o->admin_scan_ms;
    } else if (errmsg != NULL) {
        *errmsg = d->open_error();
    }
    return rc;
}

bool store_has(const struct store *st, unsigned caps)
{
    return store_dialect_has(st->dialect, caps);
}

bool store_url_has(const char *url, unsigned caps)
{
    const struct store_dialect *d = dialect_of(url);
    return d != NULL && store_dialect_has(d, caps);
}

char *store_url_default(const char *data_dir)
{
    for (size_t i = 0; i < N_DIALECTS; i++) {
        const char *file = dialects[i]->default_file;
        if (file == NULL) {
            continue;
        }
        size_t n = strlen(dialects[i]->scheme) + sizeof "://" + 1 + strlen(data_dir) + strlen(file);
        char *url = malloc(n);
        if (url != NULL) {
            snprintf(url, n, "%s://%s/%s", dialects[i]->scheme, data_dir, file);
        }
        return url;
    }
    return NULL;
}

/* Only a dialect with several nodes has anything to list (ha_list). */
size_t store_ha_list(struct store_ha_info *out, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < N_DIALECTS; i++) {
        if (dialects[i]->ha_list != NULL && n < max) {
            n += dialects[i]->ha_list(out + n, max - n);
        }
    }
    return n;
}

void store_close(struct store *st)
{
    if (st != NULL) {
        st->ops->close(st);
    }
}
