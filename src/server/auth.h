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

#include "common/limits.h"
#include "server/config.h"

#define AUTH_MAX_SCOPES 64
#define AUTH_SCOPE_SEL_MAX (ROOST_ID_MAX + 1) /* agent id or prefix + '*' */

enum auth_action { AUTH_READ, AUTH_CONSUME, AUTH_PUBLISH, AUTH_ADMIN };

struct auth_scope {
    enum auth_action action;               /* read, consume, publish or admin (tenant:admin) */
    char selector[AUTH_SCOPE_SEL_MAX + 1]; /* agent id, or prefix ending in '*'; "" for admin */
};

struct auth_principal {
    char tenant_id[ROOST_ID_MAX + 1];
    char sub[257];
    struct auth_scope scopes[AUTH_MAX_SCOPES];
    size_t n_scopes;
    int64_t exp_ms;
    /* Set only when the principal came from a subscribe ticket: its nonce (32 hex digits) and
     * the ticket's own expiry, for the single-use claim in the store (api_subscribe.c). */
    char ticket_nonce[33];
    int64_t ticket_exp_ms;
};

/* Empties a principal (no tenant, no scopes, no ticket) without writing its whole scope array. */
void auth_principal_clear(struct auth_principal *p);

struct auth;

/* Loads the token key (cfg->auth_key_file, or DATA_DIR/token_ed25519.pem created with mode 0600 on
 * first start) and the identity provider's material: auth.jwks_file (a JWK Set with at least one
 * usable key), auth.hs256_secret_file, auth.issuer, auth.audience. Returns ROOST_OK, ROOST_EIO
 * or ROOST_ENOMEM with a reason in err. A new auth starts with an empty token cache, so building
 * a fresh one is how a reload flushes it. */
int auth_new(const struct config *cfg, struct auth **out, char *err, size_t errlen);
void auth_free(struct auth *a);

/* One line for the log: key counts, hs256 yes/no, issuer, audience. */
void auth_describe(const struct auth *a, char *buf, size_t len);

/* Verifies an "Authorization" header value ("Bearer <jwt>", may be NULL) at now_ms. The key is
 * chosen by the token's alg and kid and fixes the algorithm (EdDSA without kid: roostd's own key;
 * HS256: the secret; otherwise the JWK Set key named by kid, or the only key of that type when
 * there is no kid). Then exp required (60 s skew), nbf and iat, a string "tenant" claim that is a
 * valid name, scope parsed; for identity-provider tokens also iss == auth.issuer and aud contains
 * auth.audience when those are set. ROOST_OK or ROOST_EUNAUTHENTICATED; on failure *out is zeroed
 * except out->exp_ms, which holds the exp of a token whose signature verified but which has
 * expired (0 for every other failure), so the answer can say when. Thread-safe (the token
 * cache has its own lock); replacing `a` itself is the caller's business (daemon.c swaps it on
 * the loop thread, the only thread that calls this). */
int auth_authenticate(const struct auth *a, const char *authorization, int64_t now_ms,
                      struct auth_principal *out);

/* Subscribe tickets (DESIGN §5.1): a browser's EventSource cannot send Authorization, so a
 * client holding a read token asks for a ticket and opens the stream with ?ticket=. The ticket
 * is stateless and signed with roostd's token key (nodes sharing auth.key_file accept each
 * other's tickets); single use is enforced by claiming its nonce in the store's nonce table, the
 * same one that stops signature replay on every node:
 *
 *   rt1.<base64url(payload)>.<base64url(Ed25519 over "roost-ticket-v1\n" + payload)>
 *   payload = "<tenant> <agent> <ticket_exp_ms> <token_exp_ms> <nonce: 32 hex digits>"
 *
 * The stream a ticket opens still ends at the expiry of the token that asked for it.
 * AUTH_TICKET_MAX_BYTES bounds the whole string. */
#define AUTH_TICKET_MAX_BYTES 512
#define AUTH_TICKET_KEY_ID "roost:ticket" /* key id of ticket nonces; no key id has a ':' */

/* Issues a ticket for `agent_id` to principal `p` (who must be allowed to read it: the caller
 * checks) valid until min(now_ms + ttl_s, p->exp_ms). `out` gets the NUL-terminated ticket
 * (out_len >= AUTH_TICKET_MAX_BYTES + 1). ROOST_OK, ROOST_ENOMEM or ROOST_EINTERNAL. */
int auth_ticket_issue(const struct auth *a, const struct auth_principal *p, const char *agent_id,
                      int64_t now_ms, int64_t ttl_s, char *out, size_t out_len,
                      int64_t *expires_ms);

/* Verifies a ticket for `agent_id` at now_ms: signature, agent, expiry. On success `out` is a
 * principal of the ticket's tenant holding only agent:<agent_id>:read, with exp_ms the token's
 * expiry and ticket_nonce/ticket_exp_ms set; the caller still has to claim the nonce.
 * ROOST_OK or ROOST_EUNAUTHENTICATED. */
int auth_ticket_verify(const struct auth *a, const char *ticket, const char *agent_id,
                       int64_t now_ms, struct auth_principal *out);

/* An access token of roostd's own key (EdDSA, no kid: what auth_authenticate accepts as its own)
 * for `tenant` with `sub` and `scope`, valid ttl_s from now_ms. *out is the caller's to free.
 * ROOST_OK, ROOST_ENOMEM (also for a scope that is not UTF-8) or ROOST_EINTERNAL. */
int auth_token_issue(const struct auth *a, const char *tenant, const char *sub, const char *scope,
                     int64_t now_ms, int64_t ttl_s, char **out);

/* May `p` do `action` on `agent_id`? consume implies read; admin needs tenant:admin and ignores
 * agent_id. A trailing '*' in a selector matches any agent id with that prefix. */
bool auth_allows(const struct auth_principal *p, enum auth_action action, const char *agent_id);

/* The scope that would allow `action` on `agent_id` ("agent:a1:consume", "tenant:admin"; read is
 * also granted by consume), written to buf: what a 403 names. */
#define AUTH_SCOPE_TEXT_MAX (AUTH_SCOPE_SEL_MAX + 16)
void auth_required_scope(enum auth_action action, const char *agent_id, char *buf, size_t len);

/* Parses one space-separated scope string into p->scopes; unknown scopes are ignored (a token
 * may carry scopes of other services), more than AUTH_MAX_SCOPES is an error. 0 or -1. */
int auth_parse_scopes(const char *scope, struct auth_principal *p);

/* Loads an Ed25519 private key from a PEM file, generating it (mode 0600) when absent and
 * `create` is set. Returns an EVP_PKEY* (caller frees) or NULL with err set. */
struct evp_pkey_st *auth_load_key(const char *path, bool create, char *err, size_t errlen);

#endif
