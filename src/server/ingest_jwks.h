/* SPDX-License-Identifier: MIT */
/* The key sets of jwt ingest sources given by URL (options.jwks_url), fetched through the webhooks'
 * client (webhooks_http.c: https only, the destination filter on every connect, no redirects,
 * webhooks.ca_file) and cached process-wide: a copy serves for INGEST_JWKS_TTL_S; a token naming
 * a kid the copy lacks asks again, at most once per INGEST_JWKS_REFETCH_S per URL, so forged kids
 * cannot make roostd hammer the sender. Blocking: called on a store worker, never the loop. */
#ifndef ROOST_SERVER_INGEST_JWKS_H
#define ROOST_SERVER_INGEST_JWKS_H

#include <stdbool.h>

#define INGEST_JWKS_TTL_S 300
#define INGEST_JWKS_REFETCH_S 10
#define INGEST_JWKS_URLS 64 /* URLs cached at once; the least recently fetched goes */

/* The ingest_delivery.jwks_get of ingest_verify.h; ctx is the const struct webhooks_net *. */
int ingest_jwks_get(void *ctx, const char *url, bool refresh, char **text);

#endif
