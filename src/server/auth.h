/* SPDX-License-Identifier: MIT */
/* Authentication and authorisation in one place: bearer JWT verification (roostd's own Ed25519
 * key from the data dir), the scope grammar of DESIGN §6.1 and the decision "may this principal do
 * this to that agent". Tenant isolation follows from every store call taking principal.tenant_id.
 */
#ifndef ROOST_AUTH_H
#define ROOST_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/config.h"

#define AUTH_MAX_SCOPES 64
#define AUTH_SCOPE_SEL_MAX 129 /* agent id (128) or prefix + '*' */

enum auth_action { AUTH_READ, AUTH_CONSUME, AUTH_PUBLISH, AUTH_ADMIN };

struct auth_scope {
    enum auth_action action;               /* read, consume, publish or admin (tenant:admin) */
    char selector[AUTH_SCOPE_SEL_MAX + 1]; /* agent id, or prefix ending in '*'; "" for admin */
};

struct auth_principal {
    char tenant_id[129];
    char sub[257];
    struct auth_scope scopes[AUTH_MAX_SCOPES];
    size_t n_scopes;
    int64_t exp_ms;
};

struct auth;

/* Loads the token key (cfg->auth_key_file, or DATA_DIR/token_ed25519.pem created with mode 0600 on
 * first start). Returns ROOST_OK or ROOST_EIO with a reason in err. */
int auth_new(const struct config *cfg, struct auth **out, char *err, size_t errlen);
void auth_free(struct auth *a);

/* Verifies an "Authorization" header value ("Bearer <jwt>", may be NULL) at now_ms: signature,
 * alg EdDSA, exp required (60 s skew), nbf, a string "tenant" claim that is a valid name, scope
 * parsed. ROOST_OK or ROOST_EUNAUTHENTICATED. Thread-safe. */
int auth_authenticate(const struct auth *a, const char *authorization, int64_t now_ms,
                      struct auth_principal *out);

/* May `p` do `action` on `agent_id`? consume implies read; admin needs tenant:admin and ignores
 * agent_id. A trailing '*' in a selector matches any agent id with that prefix. */
bool auth_allows(const struct auth_principal *p, enum auth_action action, const char *agent_id);

/* Parses one space-separated scope string into p->scopes; unknown scopes are ignored (a token
 * may carry scopes of other services), more than AUTH_MAX_SCOPES is an error. 0 or -1. */
int auth_parse_scopes(const char *scope, struct auth_principal *p);

/* Loads an Ed25519 private key from a PEM file, generating it (mode 0600) when absent and
 * `create` is set. Returns an EVP_PKEY* (caller frees) or NULL with err set. */
struct evp_pkey_st *auth_load_key(const char *path, bool create, char *err, size_t errlen);

#endif
