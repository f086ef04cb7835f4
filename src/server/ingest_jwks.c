/* SPDX-License-Identifier: MIT */
/* The jwt sources' key set cache (ingest_jwks.h). */
#include "server/ingest_jwks.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/timeutil.h"
#include "proto/jwk.h"
#include "server/webhooks.h"
#include "store/store_webhooks.h"

#include "common/banned.h"

#define FETCH_TIMEOUT_MS 5000

struct entry {
    char url[STORE_URL_MAX + 1];
    char *text;           /* the last key set fetched, or NULL */
    int64_t fetched_ms;   /* when text was fetched (monotonic) */
    int64_t attempted_ms; /* when a fetch last started */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct entry cache[INGEST_JWKS_URLS];

static struct entry *find(const char *url)
{
    struct entry *oldest = &cache[0];
    for (size_t i = 0; i < INGEST_JWKS_URLS; i++) {
        if (strcmp(cache[i].url, url) == 0) {
            return &cache[i];
        }
        if (cache[i].attempted_ms < oldest->attempted_ms) {
            oldest = &cache[i];
        }
    }
    free(oldest->text);
    memset(oldest, 0, sizeof *oldest);
    memcpy(oldest->url, url, strlen(url) + 1);
    return oldest;
}

static char *dup_text(const char *s)
{
    return s != NULL ? strdup(s) : NULL;
}

int ingest_jwks_get(void *ctx, const char *url, bool refresh, char **text)
{
    const struct webhooks_net *net = ctx;
    *text = NULL;
    if (net == NULL || strlen(url) > STORE_URL_MAX) {
        return -1;
    }
    int64_t now = time_mono_ms();
    pthread_mutex_lock(&mu);
    struct entry *e = find(url);
    bool fresh = e->text != NULL && now - e->fetched_ms < INGEST_JWKS_TTL_S * 1000;
    bool may_fetch = e->attempted_ms == 0 || now - e->attempted_ms >= INGEST_JWKS_REFETCH_S * 1000;
    if ((fresh && !refresh) || !may_fetch) {
        *text = dup_text(e->text); /* a refetch too soon: the copy we have */
        pthread_mutex_unlock(&mu);
        return *text != NULL ? 0 : -1;
    }
    e->attempted_ms = now;
    pthread_mutex_unlock(&mu);

    struct webhooks_headers h = {0};
    h.lines[0] = strdup("Accept: application/jwk-set+json, application/json");
    h.n = h.lines[0] != NULL ? 1 : 0;
    struct webhooks_call *c = webhooks_call_new(net, url, &h, NULL, 0, FETCH_TIMEOUT_MS);
    struct webhooks_result r = {0};
    if (c != NULL) {
        webhooks_call_run(c, &r);
        webhooks_call_free(c);
    }
    /* Only a whole key set replaces the copy (the client keeps at most 64 KiB of an answer). */
    char *got =
        r.status == 200 && r.body != NULL && r.body_len < 65536 && strlen(r.body) == r.body_len
            ? dup_text(r.body)
            : NULL;
    webhooks_result_cleanup(&r);

    pthread_mutex_lock(&mu);
    e = find(url); /* the slot may have gone to another URL meanwhile */
    if (got != NULL) {
        free(e->text);
        e->text = got;
        e->fetched_ms = time_mono_ms();
    }
    e->attempted_ms = e->attempted_ms != 0 ? e->attempted_ms : now;
    *text = dup_text(e->text); /* a failed fetch keeps serving the last good copy */
    pthread_mutex_unlock(&mu);
    return *text != NULL ? 0 : -1;
}
