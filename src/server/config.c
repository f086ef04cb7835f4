/* SPDX-License-Identifier: MIT */
/* roostd configuration: ROOST_CONFIG_MAP expands into one descriptor table, and every source
 * (defaults, file, environment, --set) goes through config_set, so validation and messages are the
 * same whatever the source. Cross-key checks and derived defaults run once in config_finalize. */
#include "server/config.h"

#include <errno.h>
#include <ini.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/ids.h"
#include "common/strutil.h"
#include "server/cors.h"
#include "server/ssrf.h"
#include "server/webhooks_config.h"
#include "store/store.h"

#include "common/banned.h"

#define CONFIG_STR_MAX 4096
#define CONFIG_LINE_MAX 8192

extern char **environ;

struct config_desc {
    const char *key;
    enum config_type type;
    const char *def;
    int64_t min;
    int64_t max;
    unsigned flags;
    const char *desc;
    size_t offset;
};

static const struct config_desc descs[] = {
#define CONFIG_DESC(key, field, type, def, min, max, flags, desc)                                  \
    {key, type, def, min, max, flags, desc, offsetof(struct config, field)},
    ROOST_CONFIG_MAP(CONFIG_DESC)
#undef CONFIG_DESC
};

#define N_DESCS (sizeof descs / sizeof descs[0])

static const struct config_desc *find_desc(const char *key)
{
    for (size_t i = 0; i < N_DESCS; i++) {
        if (strcmp(descs[i].key, key) == 0) {
            return &descs[i];
        }
    }
    return NULL;
}

static int64_t *int_field(struct config *cfg, const struct config_desc *d)
{
    return (int64_t *)(void *)((char *)cfg + d->offset);
}

static char **str_field(struct config *cfg, const struct config_desc *d)
{
    return (char **)(void *)((char *)cfg + d->offset);
}

static bool *bool_field(struct config *cfg, const struct config_desc *d)
{
    return (bool *)(void *)((char *)cfg + d->offset);
}

/* ---- value checks shared by config_set and config_finalize ---- */

static bool one_of(const char *v, const char *const *allowed)
{
    for (size_t i = 0; allowed[i] != NULL; i++) {
        if (strcmp(v, allowed[i]) == 0) {
            return true;
        }
    }
    return false;
}

static const char *const synchronous_values[] = {"full", "normal", NULL};
static const char *const log_levels[] = {"debug", "info", "warn", "error", NULL};
static const char *const log_formats[] = {"logfmt", "json", NULL};

/* HOST:PORT, [IPv6]:PORT; port 0..65535. */
static bool valid_listen(const char *v)
{
    const char *colon;
    if (v[0] == '[') {
        const char *close = strchr(v, ']');
        if (close == NULL || close == v + 1 || close[1] != ':') {
            return false;
        }
        colon = close + 1;
    } else {
        colon = strrchr(v, ':');
        if (colon == NULL || colon == v || memchr(v, ':', (size_t)(colon - v)) != NULL) {
            return false;
        }
    }
    const char *port = colon + 1;
    size_t n = strlen(port);
    if (n == 0 || n > 5) {
        return false;
    }
    long p = 0;
    for (size_t i = 0; i < n; i++) {
        if (port[i] < '0' || port[i] > '9') {
            return false;
        }
        p = p * 10 + (port[i] - '0');
    }
    for (const char *c = v; c < colon; c++) {
        if (*c == ' ' || *c == '\t' || *c == '/') {
            return false;
        }
    }
    return p <= 65535;
}

/* Key-specific checks of a string value; writes "key: reason" on failure. */
static const char *const sig_policies[] = {"off", "mutations", "all", NULL};

static const char *const tenant_label_modes[] = {"top", "on", "off", NULL};

static int check_string(const char *key, const char *v, char *err, size_t errlen)
{
    if (strcmp(key, "metrics.tenant_labels") == 0 && !one_of(v, tenant_label_modes)) {
        snprintf(err, errlen, "%s: must be top, on or off, not '%.64s'", key, v);
        return -1;
    }
    if (strcmp(key, "signatures.require") == 0 && !one_of(v, sig_policies)) {
        snprintf(err, errlen, "%s: must be off, mutations or all, not '%.64s'", key, v);
        return -1;
    }
    if (strcmp(key, "store.synchronous") == 0 && !one_of(v, synchronous_values)) {
        snprintf(err, errlen, "%s: must be full or normal, not '%s'", key, v);
        return -1;
    }
    if (strcmp(key, "log.level") == 0 && !one_of(v, log_levels)) {
        snprintf(err, errlen, "%s: must be debug, info, warn or error, not '%s'", key, v);
        return -1;
    }
    if (strcmp(key, "log.format") == 0 && !one_of(v, log_formats)) {
        snprintf(err, errlen, "%s: must be logfmt or json, not '%s'", key, v);
        return -1;
    }
    if (strcmp(key, "listen") == 0 && !valid_listen(v)) {
        snprintf(err, errlen, "%s: must be HOST:PORT with a port in 0..65535, not '%s'", key, v);
        return -1;
    }
    if (strcmp(key, "data_dir") == 0 && v[0] == '\0') {
        snprintf(err, errlen, "%s: must not be empty", key);
        return -1;
    }
    return 0;
}

static int parse_bool(const char *v, bool *out)
{
    static const char *const yes[] = {"true", "1", "yes", "on", NULL};
    static const char *const no[] = {"false", "0", "no", "off", NULL};
    for (size_t i = 0; yes[i] != NULL; i++) {
        if (strcasecmp(v, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(v, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

/* ---- public API ---- */

int config_init(struct config *cfg)
{
    char err[256];
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < N_DESCS; i++) {
        if (config_set(cfg, descs[i].key, descs[i].def, err, sizeof err) != 0) {
            config_cleanup(cfg);
            return -1;
        }
    }
    return 0;
}

void config_cleanup(struct config *cfg)
{
    if (cfg == NULL) {
        return;
    }
    for (size_t i = 0; i < N_DESCS; i++) {
        if (descs[i].type == CONFIG_STR) {
            char **p = str_field(cfg, &descs[i]);
            free(*p);
            *p = NULL;
        }
    }
    for (size_t i = 0; i < cfg->n_tenant_stores; i++) {
        free(cfg->tenant_stores[i].url);
        cfg->tenant_stores[i].url = NULL;
    }
    cfg->n_tenant_stores = 0;
}

/* store.tenant.<tenant_id> = URL: adds or replaces the tenant's store. */
static int set_tenant_store(struct config *cfg, const char *key, const char *value, char *err,
                            size_t errlen)
{
    const char *tenant = key + strlen(CONFIG_TENANT_STORE_PREFIX);
    if (!ids_valid_name(tenant, strlen(tenant))) {
        snprintf(err, errlen, "%.200s: not a valid tenant id", key);
        return -1;
    }
    if (value == NULL || strstr(value, "://") == NULL || strlen(value) > CONFIG_STR_MAX) {
        snprintf(err, errlen,
                 "%.200s: must be a store URL (sqlite://PATH, mysql://... or postgres://...)", key);
        return -1;
    }
    char *url = strdup(value);
    if (url == NULL) {
        snprintf(err, errlen, "%.200s: out of memory", key);
        return -1;
    }
    for (size_t i = 0; i < cfg->n_tenant_stores; i++) {
        if (strcmp(cfg->tenant_stores[i].tenant_id, tenant) == 0) {
            free(cfg->tenant_stores[i].url);
            cfg->tenant_stores[i].url = url;
            return 0;
        }
    }
    if (cfg->n_tenant_stores == CONFIG_MAX_TENANT_STORES) {
        free(url);
        snprintf(err, errlen, "%.200s: more than %d tenant stores", key, CONFIG_MAX_TENANT_STORES);
        return -1;
    }
    struct config_tenant_store *ts = &cfg->tenant_stores[cfg->n_tenant_stores++];
    snprintf(ts->tenant_id, sizeof ts->tenant_id, "%s", tenant);
    ts->url = url;
    return 0;
}

static enum config_sig_policy sig_policy_parse(const char *v)
{
    return strcmp(v, "all") == 0         ? CONFIG_SIG_ALL
           : strcmp(v, "mutations") == 0 ? CONFIG_SIG_MUTATIONS
                                         : CONFIG_SIG_OFF;
}

static const char *sig_policy_name(enum config_sig_policy p)
{
    return p == CONFIG_SIG_ALL ? "all" : p == CONFIG_SIG_MUTATIONS ? "mutations" : "off";
}

enum config_sig_policy config_sig_policy(const struct config *cfg, const char *tenant_id)
{
    for (size_t i = 0; tenant_id != NULL && i < cfg->n_tenant_sigs; i++) {
        if (strcmp(cfg->tenant_sigs[i].tenant_id, tenant_id) == 0) {
            return cfg->tenant_sigs[i].policy;
        }
    }
    return sig_policy_parse(cfg->signatures_require != NULL ? cfg->signatures_require : "off");
}

/* signatures.tenant.<tenant_id> = off|mutations|all: adds or replaces the tenant's policy. */
static int set_tenant_sig(struct config *cfg, const char *key, const char *value, char *err,
                          size_t errlen)
{
    const char *tenant = key + strlen(CONFIG_TENANT_SIG_PREFIX);
    if (!ids_valid_name(tenant, strlen(tenant))) {
        snprintf(err, errlen, "%.200s: not a valid tenant id", key);
        return -1;
    }
    if (value == NULL || !one_of(value, sig_policies)) {
        snprintf(err, errlen, "%.200s: must be off, mutations or all", key);
        return -1;
    }
    for (size_t i = 0; i < cfg->n_tenant_sigs; i++) {
        if (strcmp(cfg->tenant_sigs[i].tenant_id, tenant) == 0) {
            cfg->tenant_sigs[i].policy = sig_policy_parse(value);
            return 0;
        }
    }
    if (cfg->n_tenant_sigs == CONFIG_MAX_TENANT_SIGS) {
        snprintf(err, errlen, "%.200s: more than %d tenant signature policies", key,
                 CONFIG_MAX_TENANT_SIGS);
        return -1;
    }
    struct config_tenant_sig *ts = &cfg->tenant_sigs[cfg->n_tenant_sigs++];
    snprintf(ts->tenant_id, sizeof ts->tenant_id, "%s", tenant);
    ts->policy = sig_policy_parse(value);
    return 0;
}

int config_set(struct config *cfg, const char *key, const char *value, char *err, size_t errlen)
{
    if (key == NULL) {
        snprintf(err, errlen, "missing config key");
        return -1;
    }
    if (strncmp(key, CONFIG_TENANT_STORE_PREFIX, strlen(CONFIG_TENANT_STORE_PREFIX)) == 0) {
        return set_tenant_store(cfg, key, value, err, errlen);
    }
    if (strncmp(key, CONFIG_TENANT_SIG_PREFIX, strlen(CONFIG_TENANT_SIG_PREFIX)) == 0) {
        return set_tenant_sig(cfg, key, value, err, errlen);
    }
    const struct config_desc *d = find_desc(key);
    if (d == NULL) {
        snprintf(err, errlen, "unknown config key '%.200s'", key);
        return -1;
    }
    if (value == NULL) {
        snprintf(err, errlen, "%s: missing value", key);
        return -1;
    }
    switch (d->type) {
    case CONFIG_INT: {
        int64_t x;
        if (strutil_parse_i64(value, strlen(value), d->min, d->max, &x) != 0) {
            snprintf(err, errlen, "%s: must be an integer in %lld..%lld", key, (long long)d->min,
                     (long long)d->max);
            return -1;
        }
        *int_field(cfg, d) = x;
        return 0;
    }
    case CONFIG_BOOL: {
        bool b;
        if (parse_bool(value, &b) != 0) {
            snprintf(err, errlen, "%s: must be true or false (also 1/0, yes/no, on/off)", key);
            return -1;
        }
        *bool_field(cfg, d) = b;
        return 0;
    }
    case CONFIG_STR: {
        if (strlen(value) > CONFIG_STR_MAX) {
            snprintf(err, errlen, "%s: longer than %d bytes", key, CONFIG_STR_MAX);
            return -1;
        }
        if (check_string(key, value, err, errlen) != 0) {
            return -1;
        }
        char *copy = strdup(value);
        if (copy == NULL) {
            snprintf(err, errlen, "%s: out of memory", key);
            return -1;
        }
        char **p = str_field(cfg, d);
        free(*p);
        *p = copy;
        return 0;
    }
    }
    snprintf(err, errlen, "%s: unsupported type", key);
    return -1;
}

/* ---- file ---- */

struct file_ctx {
    struct config *cfg;
    FILE *fp;
    int line;     /* number of the line inih is working on */
    int err_line; /* line of the first error we reported, 0 if none */
    char err[512];
};

/* fgets for inih that counts lines, strips leading blanks (so indentation is not taken for an
 * inih continuation line) and refuses lines longer than inih's buffer rather than letting inih
 * read the rest as another line. */
static char *file_reader(char *str, int num, void *stream)
{
    struct file_ctx *ctx = stream;
    char buf[CONFIG_LINE_MAX];
    if (fgets(buf, sizeof buf, ctx->fp) == NULL) {
        return NULL;
    }
    ctx->line++;
    size_t len = strlen(buf);
    bool complete = (len > 0 && buf[len - 1] == '\n') || feof(ctx->fp);
    const char *s = buf;
    while (*s == ' ' || *s == '\t') {
        s++;
    }
    size_t n = strlen(s);
    if (!complete || n + 1 > (size_t)num) {
        if (ctx->err_line == 0) {
            ctx->err_line = ctx->line;
            snprintf(ctx->err, sizeof ctx->err, "line longer than %d bytes", num - 2);
        }
        return NULL;
    }
    memcpy(str, s, n + 1);
    return str;
}

static int file_handler(void *user, const char *section, const char *name, const char *value)
{
    struct file_ctx *ctx = user;
    char key[256];
    char err[sizeof ctx->err];
    int n;
    if (section != NULL && section[0] != '\0') {
        n = snprintf(key, sizeof key, "%s.%s", section, name);
    } else {
        n = snprintf(key, sizeof key, "%s", name);
    }
    if (n < 0 || (size_t)n >= sizeof key) {
        snprintf(err, sizeof err, "config key too long");
    } else if (config_set(ctx->cfg, key, value, err, sizeof err) == 0) {
        return 1;
    }
    if (ctx->err_line == 0) {
        ctx->err_line = ctx->line;
        snprintf(ctx->err, sizeof ctx->err, "%s", err);
    }
    return 0;
}

int config_load_file(struct config *cfg, const char *path, char *err, size_t errlen)
{
    struct file_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.cfg = cfg;
    ctx.fp = fopen(path, "re");
    if (ctx.fp == NULL) {
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    int rc = ini_parse_stream(file_reader, &ctx, file_handler, &ctx);
    bool read_error = ferror(ctx.fp) != 0;
    fclose(ctx.fp);
    if (read_error) {
        snprintf(err, errlen, "%s: read error", path);
        return -1;
    }
    if (ctx.err_line != 0 && (rc <= 0 || rc >= ctx.err_line)) {
        snprintf(err, errlen, "%s:%d: %s", path, ctx.err_line, ctx.err);
        return -1;
    }
    if (rc < 0) {
        snprintf(err, errlen, "%s: cannot parse (%s)", path, rc == -2 ? "out of memory" : "error");
        return -1;
    }
    if (rc != 0) {
        /* inih found a line that is neither `key = value`, a comment nor a [section]. */
        snprintf(err, errlen, "%s:%d: syntax error (expected key = value)", path, rc);
        return -1;
    }
    return 0;
}

/* ---- environment ---- */

static void env_name(const char *key, char *out, size_t outlen)
{
    size_t o = 0;
    const char *prefix = "ROOST_";
    for (; *prefix != '\0' && o + 1 < outlen; prefix++) {
        out[o++] = *prefix;
    }
    for (; *key != '\0' && o + 1 < outlen; key++) {
        char c = *key;
        if (c == '.' || c == '-') {
            c = '_';
        } else if (c >= 'a' && c <= 'z') {
            c = (char)(c - 'a' + 'A');
        }
        out[o++] = c;
    }
    out[o] = '\0';
}

int config_load_env(struct config *cfg, char *const *envp, char *err, size_t errlen)
{
    if (envp == NULL) {
        envp = environ;
    }
    if (envp == NULL) {
        return 0;
    }
    for (size_t i = 0; i < N_DESCS; i++) {
        char name[128];
        env_name(descs[i].key, name, sizeof name);
        size_t nlen = strlen(name);
        /* The last definition wins, as with getenv on most libcs' duplicate handling. */
        const char *value = NULL;
        for (char *const *e = envp; *e != NULL; e++) {
            if (strncmp(*e, name, nlen) == 0 && (*e)[nlen] == '=') {
                value = *e + nlen + 1;
            }
        }
        if (value == NULL) {
            continue;
        }
        char msg[512];
        if (config_set(cfg, descs[i].key, value, msg, sizeof msg) != 0) {
            snprintf(err, errlen, "environment %s: %s", name, msg);
            return -1;
        }
    }
    return 0;
}

/* ---- finalize ---- */

int config_finalize(struct config *cfg, char *err, size_t errlen)
{
    for (size_t i = 0; i < N_DESCS; i++) {
        const struct config_desc *d = &descs[i];
        if (d->type == CONFIG_STR) {
            const char *v = *str_field(cfg, d);
            if (v == NULL) {
                snprintf(err, errlen, "%s: not set", d->key);
                return -1;
            }
            if (check_string(d->key, v, err, errlen) != 0) {
                return -1;
            }
        } else if (d->type == CONFIG_INT) {
            int64_t v = *int_field(cfg, d);
            if (v < d->min || v > d->max) {
                snprintf(err, errlen, "%s: must be an integer in %lld..%lld", d->key,
                         (long long)d->min, (long long)d->max);
                return -1;
            }
        }
    }
    if (cfg->lease_default_s > cfg->lease_max_s) {
        snprintf(err, errlen, "lease.default_s: must not exceed lease.max_s (%lld > %lld)",
                 (long long)cfg->lease_default_s, (long long)cfg->lease_max_s);
        return -1;
    }
    if (cfg->lease_max_s > cfg->lease_max_total_s) {
        snprintf(err, errlen, "lease.max_s: must not exceed lease.max_total_s (%lld > %lld)",
                 (long long)cfg->lease_max_s, (long long)cfg->lease_max_total_s);
        return -1;
    }
    if (cfg->http_timeout_s <= cfg->claim_max_wait_s) {
        snprintf(err, errlen, "http.timeout_s: must exceed claim.max_wait_s (%lld <= %lld)",
                 (long long)cfg->http_timeout_s, (long long)cfg->claim_max_wait_s);
        return -1;
    }
    if ((cfg->tls_cert_file[0] == '\0') != (cfg->tls_key_file[0] == '\0')) {
        snprintf(err, errlen, "%s: tls.cert_file and tls.key_file go together",
                 cfg->tls_cert_file[0] ? "tls.key_file" : "tls.cert_file");
        return -1;
    }
    if (cors_validate(cfg->http_cors_origins, err, errlen) != 0) {
        return -1;
    }
    struct ssrf_filter allow;
    if (ssrf_filter_parse(&allow, cfg->webhooks_allow_cidrs, err, errlen) != 0) {
        return -1;
    }
    int64_t schedule[WEBHOOKS_SCHEDULE_MAX];
    size_t n_schedule;
    if (webhooks_parse_schedule(cfg->webhooks_retry_schedule_s, schedule, &n_schedule, err,
                                errlen) != 0) {
        return -1;
    }
    if (cfg->store_url[0] == '\0') {
        char *url = store_url_default(cfg->data_dir);
        if (url == NULL) {
            snprintf(err, errlen, "store.url: out of memory");
            return -1;
        }
        free(cfg->store_url);
        cfg->store_url = url;
    }
    return 0;
}

/* ---- printing ---- */

static bool secret_param(const char *name, size_t len)
{
    static const char *const names[] = {"password", "pass",  "passwd", "pwd",
                                        "secret",   "token", NULL};
    for (size_t i = 0; names[i] != NULL; i++) {
        if (strlen(names[i]) == len && strncasecmp(name, names[i], len) == 0) {
            return true;
        }
    }
    return false;
}

/* Prints a secret. A URL keeps everything but the password of its userinfo and the values of
 * password-like query parameters (mysql://roost:********@db:3306/roost?socket=/run/x.sock);
 * anything else is masked whole. The userinfo mask runs from the first ':' after the scheme to the
 * last '@', which over-masks odd URLs rather than leak a password containing '/' or '?'. */
static void print_secret(FILE *out, const char *v)
{
    if (v[0] == '\0') {
        return;
    }
    const char *sep = strstr(v, "://");
    if (sep == NULL) {
        fputs("********", out);
        return;
    }
    const char *auth = sep + 3;
    const char *at = strrchr(auth, '@');
    const char *colon = at != NULL ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
    const char *rest = v;
    if (colon != NULL) {
        fwrite(v, 1, (size_t)(colon + 1 - v), out);
        fputs("********", out);
        rest = at;
    }
    const char *q = strchr(rest, '?');
    if (q == NULL) {
        fputs(rest, out);
        return;
    }
    fwrite(rest, 1, (size_t)(q + 1 - rest), out);
    const char *p = q + 1;
    while (*p != '\0') {
        size_t plen = strcspn(p, "&#");
        const char *eq = memchr(p, '=', plen);
        if (eq != NULL && secret_param(p, (size_t)(eq - p))) {
            fwrite(p, 1, (size_t)(eq + 1 - p), out);
            fputs("********", out);
        } else {
            fwrite(p, 1, plen, out);
        }
        p += plen;
        if (*p == '&') {
            fputc('&', out);
            p++;
        } else if (*p == '#') {
            fputs(p, out);
            break;
        }
    }
}

/* Appends ", key" (or "key") to a bounded list; a full list ends in "...". */
static void list_add(char *list, size_t len, const char *key)
{
    size_t used = strlen(list);
    int n = snprintf(list + used, len - used, "%s%s", used ? "," : "", key);
    if (n < 0 || (size_t)n >= len - used) {
        if (len >= 4) {
            memcpy(list + len - 4, "...", 4);
        }
    }
}

static bool value_equal(const struct config_desc *d, const void *a, const void *b)
{
    switch (d->type) {
    case CONFIG_INT:
        return memcmp(a, b, sizeof(int64_t)) == 0;
    case CONFIG_BOOL:
        return memcmp(a, b, sizeof(bool)) == 0;
    case CONFIG_STR: {
        const char *x, *y;
        memcpy(&x, a, sizeof x);
        memcpy(&y, b, sizeof y);
        return strcmp(x ? x : "", y ? y : "") == 0;
    }
    }
    return true;
}

void config_apply_reloadable(struct config *cur, struct config *fresh, char *changed,
                             size_t changed_len, char *restart, size_t restart_len)
{
    changed[0] = restart[0] = '\0';
    for (size_t i = 0; i < N_DESCS; i++) {
        const struct config_desc *d = &descs[i];
        char *a = (char *)cur + d->offset, *b = (char *)fresh + d->offset;
        if (value_equal(d, a, b)) {
            continue;
        }
        if (!(d->flags & CONFIG_RELOADABLE)) {
            list_add(restart, restart_len, d->key);
            continue;
        }
        list_add(changed, changed_len, d->key);
        /* Swap rather than copy: strings then stay owned once, the old ones freed with fresh. */
        char tmp[sizeof(int64_t) > sizeof(char *) ? sizeof(int64_t) : sizeof(char *)];
        size_t size = d->type == CONFIG_INT    ? sizeof(int64_t)
                      : d->type == CONFIG_BOOL ? sizeof(bool)
                                               : sizeof(char *);
        memcpy(tmp, a, size);
        memcpy(a, b, size);
        memcpy(b, tmp, size);
    }
    bool same_shards = cur->n_tenant_stores == fresh->n_tenant_stores;
    for (size_t i = 0; same_shards && i < cur->n_tenant_stores; i++) {
        same_shards =
            strcmp(cur->tenant_stores[i].tenant_id, fresh->tenant_stores[i].tenant_id) == 0 &&
            strcmp(cur->tenant_stores[i].url, fresh->tenant_stores[i].url) == 0;
    }
    if (!same_shards) {
        list_add(restart, restart_len, CONFIG_TENANT_STORE_PREFIX "*");
    }
    bool same_sigs = cur->n_tenant_sigs == fresh->n_tenant_sigs &&
                     memcmp(cur->tenant_sigs, fresh->tenant_sigs,
                            cur->n_tenant_sigs * sizeof cur->tenant_sigs[0]) == 0;
    if (!same_sigs) {
        /* Plain arrays: a copy is a complete swap-in. */
        memcpy(cur->tenant_sigs, fresh->tenant_sigs, sizeof cur->tenant_sigs);
        cur->n_tenant_sigs = fresh->n_tenant_sigs;
        list_add(changed, changed_len, CONFIG_TENANT_SIG_PREFIX "*");
    }
}

void config_print(const struct config *cfg, FILE *out)
{
    for (size_t i = 0; i < N_DESCS; i++) {
        const struct config_desc *d = &descs[i];
        const char *base = (const char *)cfg + d->offset;
        fprintf(out, "%s = ", d->key);
        switch (d->type) {
        case CONFIG_INT: {
            int64_t v;
            memcpy(&v, base, sizeof v);
            fprintf(out, "%lld", (long long)v);
            break;
        }
        case CONFIG_BOOL: {
            bool v;
            memcpy(&v, base, sizeof v);
            fputs(v ? "true" : "false", out);
            break;
        }
        case CONFIG_STR: {
            const char *v;
            memcpy(&v, base, sizeof v);
            if (v == NULL) {
                v = "";
            }
            if (d->flags & CONFIG_SECRET) {
                print_secret(out, v);
            } else {
                fputs(v, out);
            }
            break;
        }
        }
        fputc('\n', out);
    }
    for (size_t i = 0; i < cfg->n_tenant_stores; i++) {
        fprintf(out, "%s%s = ", CONFIG_TENANT_STORE_PREFIX, cfg->tenant_stores[i].tenant_id);
        print_secret(out, cfg->tenant_stores[i].url);
        fputc('\n', out);
    }
    for (size_t i = 0; i < cfg->n_tenant_sigs; i++) {
        fprintf(out, "%s%s = %s\n", CONFIG_TENANT_SIG_PREFIX, cfg->tenant_sigs[i].tenant_id,
                sig_policy_name(cfg->tenant_sigs[i].policy));
    }
}

static void print_md_cell(FILE *out, const char *s)
{
    for (; *s != '\0'; s++) {
        if (*s == '|') {
            fputs("\\|", out);
        } else {
            fputc(*s, out);
        }
    }
}

void config_print_reference(FILE *out)
{
    fputs("| key | default | range | reloadable | description |\n", out);
    fputs("|---|---|---|---|---|\n", out);
    for (size_t i = 0; i < N_DESCS; i++) {
        const struct config_desc *d = &descs[i];
        fprintf(out, "| `%s` | ", d->key);
        if (d->def[0] != '\0') {
            fputc('`', out);
            print_md_cell(out, d->def);
            fputc('`', out);
        }
        fputs(" | ", out);
        switch (d->type) {
        case CONFIG_INT:
            fprintf(out, "%lld..%lld", (long long)d->min, (long long)d->max);
            break;
        case CONFIG_BOOL:
            fputs("true, false", out);
            break;
        case CONFIG_STR:
            fputs("string", out);
            break;
        }
        fprintf(out, " | %s | ", (d->flags & CONFIG_RELOADABLE) ? "yes" : "no");
        print_md_cell(out, d->desc);
        if (d->flags & CONFIG_SECRET) {
            fputs(" (secret: masked by --print-config)", out);
        }
        fputs(" |\n", out);
    }
    fputs("| `store.tenant.TENANT_ID` | | string | no | this tenant's store URL (a shard); every "
          "other tenant "
          "uses store.url; up to 64 (secret: masked by --print-config) |\n",
          out);
    fputs("| `signatures.tenant.TENANT_ID` | | off, mutations, all | yes | this tenant's signature "
          "policy, overriding signatures.require; up to 256 |\n",
          out);
}

int config_build(struct config *cfg, const struct config_source *src, char *err, size_t errlen)
{
    if (config_init(cfg) != 0) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (src->file != NULL && config_load_file(cfg, src->file, err, errlen) != 0) {
        return -1;
    }
    if (src->envp != NULL && config_load_env(cfg, src->envp, err, errlen) != 0) {
        return -1;
    }
    for (size_t i = 0; i < src->n_sets; i++) {
        const char *eq = strchr(src->sets[i], '=');
        if (eq == NULL) {
            snprintf(err, errlen, "--set %s: expected KEY=VALUE", src->sets[i]);
            return -1;
        }
        /* The longest key names a tenant: the per-tenant prefix and an id of ROOST_ID_MAX. */
        char key[sizeof CONFIG_TENANT_SIG_PREFIX + ROOST_ID_MAX];
        size_t klen = (size_t)(eq - src->sets[i]);
        if (klen >= sizeof key) {
            snprintf(err, errlen, "--set: key too long");
            return -1;
        }
        memcpy(key, src->sets[i], klen);
        key[klen] = '\0';
        if (config_set(cfg, key, eq + 1, err, errlen) != 0) {
            return -1;
        }
    }
    return config_finalize(cfg, err, errlen);
}
