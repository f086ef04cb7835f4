/* SPDX-License-Identifier: MIT */
/* Opening a store by URL scheme: the one place that knows every backend (the backends include
 * store.h, so store.c does not include them). */
#include <string.h>

#include "common/limits.h"
#include "store/store.h"
#include "store/store_mysql.h"
#include "store/store_sqlite.h"

#include "common/banned.h"

static const struct store_ops *const backends[] = {
    &store_sqlite_ops,
    &store_mysql_ops,
};

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
    const char *sep = strstr(url, "://");
    if (sep == NULL) {
        if (errmsg != NULL) {
            *errmsg = "the store URL must look like scheme://...";
        }
        return ROOST_EINVAL;
    }
    size_t scheme_len = (size_t)(sep - url);
    for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
        const struct store_ops *ops = backends[i];
        if (strlen(ops->scheme) == scheme_len && memcmp(ops->scheme, url, scheme_len) == 0) {
            const struct store_options *o = opt != NULL ? opt : &defaults;
            int rc = ops->open(url, o, out);
            if (rc == ROOST_OK) {
                (*out)->admin_scan_ms = o->admin_scan_ms;
            }
            if (rc != ROOST_OK && errmsg != NULL) {
                *errmsg = ops == &store_sqlite_ops  ? store_sqlite_open_error()
                          : ops == &store_mysql_ops ? store_mysql_open_error()
                                                    : "the store could not be opened";
            }
            return rc;
        }
    }
    if (errmsg != NULL) {
        *errmsg = "unknown store URL scheme (expected sqlite:// or mysql://)";
    }
    return ROOST_EINVAL;
}

size_t store_ha_list(struct store_ha_info *out, size_t max)
{
    return store_mysql_ha_list(out, max); /* SQLite has one file and nothing to fail over */
}

void store_close(struct store *st)
{
    if (st != NULL) {
        st->ops->close(st);
    }
}
