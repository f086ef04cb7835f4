/* SPDX-License-Identifier: MIT */
/* Request signatures (RFC 9421) on the server. The cheap checks run on the loop thread (which
 * components are covered, created/expires, Content-Digest against the raw body); then one write
 * job on the tenant's store looks the key up, verifies the signature and claims the nonce, so a
 * replay is refused across every node sharing the database. The request's own job is only
 * submitted once that job committed: a nonce is burnt by a verified request even when the
 * request itself then fails (the client signs its retry afresh).
 *
 *   Signature-Input: sig1=("@method" "@path" "@authority" "authorization" "content-digest");
 *                    created=1700000000;expires=1700000300;keyid="k1";nonce="r4nd0m"
 */
#include "server/sigverify.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/ids.h"
#include "common/log.h"
#include "common/timeutil.h"
#include "proto/digest.h"
#include "proto/httpsig.h"
#include "proto/jwt.h"
#include "proto/sf.h"
#include "server/config.h"
#include "server/request.h"
#include "server/routes.h"
#include "server/runtime.h"
#include "server/workers.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

#define SIG_MAX_HEADERS 128

struct sigcheck {
    struct job job;
    struct request *rq;
    void (*cont)(struct request *rq);
    /* Copies: the job reads them on a worker thread. */
    char tenant_id[STORE_ID_MAX + 1];
    char agent_id[STORE_ID_MAX + 1]; /* "" on routes without an agent: producer keys only */
    char method[16];
    char scheme[8]; /* "https" when this roostd serves TLS itself (tls.cert_file), else "http" */
    char *authority, *path, *query;
    struct httpsig_header headers[SIG_MAX_HEADERS];
    size_t n_headers;
    struct httpsig_signature sig;
    bool have_sig;
    int64_t now_ms;
    const char *component; /* the missing component, for the error body (static) */
};

void sigcheck_free(struct sigcheck *c)
{
    if (c == NULL) {
        return;
    }
    if (c->have_sig) {
        httpsig_signature_cleanup(&c->sig);
    }
    for (size_t i = 0; i < c->n_headers; i++) {
        free((char *)c->headers[i].name);
        free((char *)c->headers[i].value);
    }
    free(c->authority);
    free(c->path);
    free(c->query);
    free(c);
}

/* ---- policy ---- */

static bool has_header(struct evkeyvalq *h, const char *name)
{
    for (struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next) {
        if (strcasecmp(kv->key, name) == 0) {
            return true;
        }
    }
    return false;
}

bool sigverify_needed(struct request *rq, bool policy_route)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(rq->req);
    if (has_header(in, "Signature") || has_header(in, "Signature-Input")) {
        return true;
    }
    if (!policy_route) {
        return false;
    }
    /* The route declaration says which policies cover it (routes.c). */
    return rq->route != NULL &&
           route_signature_required(rq->route,
                                    config_sig_policy(rq->rt->cfg, rq->principal.tenant_id));
}

/* ---- loop-thread checks ---- */

/* Joins every line of header `name` with ", " (RFC 9110 §5.3). NULL when absent; *rc set to
 * ROOST_ENOMEM or ROOST_ESIGMALFORMED (too large) on failure. Caller frees. */
static char *joined_header(struct evkeyvalq *h, const char *name, int *rc)
{
    char *out = NULL;
    size_t len = 0;
    *rc = ROOST_OK;
    for (struct evkeyval *kv = h->tqh_first; kv; kv = kv->next.tqe_next) {
        if (strcasecmp(kv->key, name) != 0) {
            continue;
        }
        size_t add = strlen(kv->value);
        if (len + add + 2 > 65536) {
            free(out);
            *rc = ROOST_ESIGMALFORMED;
            return NULL;
        }
        char *grown = realloc(out, len + add + 3);
        if (grown == NULL) {
            free(out);
            *rc = ROOST_ENOMEM;
            return NULL;
        }
        out = grown;
        if (len > 0) {
            memcpy(out + len, ", ", 2);
            len += 2;
        }
        memcpy(out + len, kv->value, add);
        len += add;
        out[len] = '\0';
    }
    return out;
}

/* Maps a httpsig result to the API's error code. */
static int map_httpsig(int rc)
{
    switch (rc) {
    case HTTPSIG_OK:
        return ROOST_OK;
    case HTTPSIG_EMISSING:
        return ROOST_ESIGMISSING;
    case HTTPSIG_EINVALID:
    case HTTPSIG_EKEY:
        return ROOST_ESIGINVALID;
    case HTTPSIG_EALG:
        return ROOST_ESIGALG;
    case HTTPSIG_ECOMPONENT:
        return ROOST_ESIGCOMPONENT;
    case HTTPSIG_EEXPIRED:
        return ROOST_ESIGEXPIRED;
    case HTTPSIG_ENOMEM:
        return ROOST_ENOMEM;
    default: /* EMALFORMED, EBADCOMPONENT, ELIMIT */
        return ROOST_ESIGMALFORMED;
    }
}

static void reply_fail(struct request *rq, int rc, const char *component)
{
    /* Operators need the reason and the key; the keyid is logged only when it is a plain id. */
    const char *keyid = rq->sig && rq->sig->have_sig ? rq->sig->sig.params.keyid : NULL;
    log_info("signature refused", "req_id=%s tenant=%s code=%s keyid=%s", rq->id,
             rq->principal.tenant_id, roost_err_code(rc),
             keyid && ids_valid_name(keyid, strlen(keyid)) ? keyid : "-");
    json_t *extra = component ? json_pack("{s:s}", "component", component) : NULL;
    request_reply_error(rq, rc, NULL, extra);
}

/* Copies what the job needs from the request; ROOST_OK or ROOST_ENOMEM / ROOST_ESIGMALFORMED. */
static int copy_message(struct sigcheck *c, struct request *rq)
{
    struct evhttp_request *req = rq->req;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    const char *query = uri ? evhttp_uri_get_query(uri) : NULL;
    struct evkeyvalq *in = evhttp_request_get_input_headers(req);
    /* @authority is the Host header as received: a proxy in front must preserve it. */
    const char *host = evhttp_find_header(in, "Host");
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    snprintf(c->method, sizeof c->method, "%s",
             cmd == EVHTTP_REQ_GET      ? "GET"
             : cmd == EVHTTP_REQ_DELETE ? "DELETE"
                                        : "POST");
    /* @scheme and @target-uri are those of the connection the client made to us; behind a
     * TLS-terminating proxy that is http, which a client signing https cannot match. */
    snprintf(c->scheme, sizeof c->scheme, "%s",
             rq->rt->cfg->tls_cert_file[0] != '\0' ? "https" : "http");
    c->path = strdup(path ? path : "/");
    c->authority = host ? strdup(host) : NULL;
    c->query = query ? strdup(query) : NULL;
    if (c->path == NULL || (host && c->authority == NULL) || (query && c->query == NULL)) {
        return ROOST_ENOMEM;
    }
    for (struct evkeyval *kv = in->tqh_first; kv; kv = kv->next.tqe_next) {
        if (c->n_headers == SIG_MAX_HEADERS) {
            return ROOST_ESIGMALFORMED;
        }
        struct httpsig_header *h = &c->headers[c->n_headers];
        h->name = strdup(kv->key);
        h->value = strdup(kv->value);
        c->n_headers++;
        if (h->name == NULL || h->value == NULL) {
            return ROOST_ENOMEM;
        }
    }
    return ROOST_OK;
}

/* Everything that needs no key: returns ROOST_OK or the error (and sets c->component). */
static int check_local(struct sigcheck *c, struct request *rq)
{
    struct evkeyvalq *in = evhttp_request_get_input_headers(rq->req);
    int rc;
    char *input = joined_header(in, "Signature-Input", &rc);
    if (rc != ROOST_OK) {
        return rc;
    }
    char *sig = joined_header(in, "Signature", &rc);
    if (rc != ROOST_OK) {
        free(input);
        return rc;
    }
    if (input == NULL && sig == NULL) {
        return ROOST_ESIGMISSING;
    }
    if (input == NULL || sig == NULL) {
        free(input);
        free(sig);
        return ROOST_ESIGMALFORMED;
    }
    /* The first signature is the one checked; extra ones (e.g. a proxy's) are ignored. */
    int hrc = httpsig_parse_at(input, strlen(input), sig, strlen(sig), 0, &c->sig);
    free(input);
    free(sig);
    if (hrc != HTTPSIG_OK) {
        /* A label in Signature-Input without its Signature is malformed, not missing. */
        return hrc == HTTPSIG_EMISSING ? ROOST_ESIGMALFORMED : map_httpsig(hrc);
    }
    c->have_sig = true;
    const struct httpsig_params *p = &c->sig.params;

    struct evbuffer *body = evhttp_request_get_input_buffer(rq->req);
    size_t body_len = evbuffer_get_length(body);
    static const char *const always[] = {"@method", "@path", "@authority", "authorization"};
    for (size_t i = 0; i < sizeof always / sizeof always[0]; i++) {
        if (!httpsig_params_covers(p, always[i])) {
            c->component = always[i];
            return ROOST_ESIGCOMPONENT;
        }
    }
    if (c->query != NULL && !httpsig_params_covers(p, "@query")) {
        c->component = "@query";
        return ROOST_ESIGCOMPONENT;
    }
    if (body_len > 0 && !httpsig_params_covers(p, "content-digest")) {
        c->component = "content-digest";
        return ROOST_ESIGCOMPONENT;
    }
    if (p->keyid == NULL) {
        return ROOST_ESIGMALFORMED;
    }
    if (p->nonce == NULL || p->nonce[0] == '\0' || strlen(p->nonce) > STORE_NONCE_MAX) {
        return p->nonce == NULL ? ROOST_ENONCEMISSING : ROOST_ESIGMALFORMED;
    }
    if (p->has_created && p->has_expires && p->expires - p->created > SIG_MAX_WINDOW_S) {
        return ROOST_ESIGWINDOW;
    }
    if (httpsig_params_check_time(p, c->now_ms / 1000, SIG_MAX_WINDOW_S, SIG_SKEW_S) !=
        HTTPSIG_OK) {
        return ROOST_ESIGEXPIRED;
    }
    if (body_len > 0) {
        const char *cd = evhttp_find_header(in, "Content-Digest");
        if (cd == NULL) {
            return ROOST_EDIGESTMISSING;
        }
        const unsigned char *data = evbuffer_pullup(body, -1);
        if (data == NULL) {
            return ROOST_ENOMEM;
        }
        int drc = digest_content_verify(cd, strlen(cd), data, body_len);
        if (drc == DIGEST_EUNSUPPORTED) {
            return ROOST_EDIGESTMISSING; /* no sha-256 / sha-512 member */
        }
        if (drc == DIGEST_ENOMEM) {
            return ROOST_ENOMEM;
        }
        if (drc != DIGEST_OK) {
            return ROOST_EDIGESTMISMATCH;
        }
    }
    /* An id that cannot be registered cannot be a key of this tenant. */
    if (!ids_valid_name(p->keyid, strlen(p->keyid))) {
        return ROOST_EKEYUNKNOWN;
    }
    return ROOST_OK;
}

/* ---- the store job (writer thread) ---- */

/* Builds a verification key from a stored key. ROOST_OK or ROOST_ESTORE (never expected: keys
 * are validated when added). */
static int key_load(const struct store_key *sk, struct httpsig_key *k, EVP_PKEY **pkey,
                    unsigned char **secret)
{
    memset(k, 0, sizeof *k);
    *pkey = NULL;
    *secret = NULL;
    k->alg = httpsig_alg_from_name(sk->alg);
    if (k->alg == HTTPSIG_ALG_NONE) {
        return ROOST_ESTORE;
    }
    if (k->alg == HTTPSIG_ALG_HMAC_SHA256) {
        size_t n = 0;
        if (sf_base64_decode(sk->material, strlen(sk->material), secret, &n) != 0) {
            return ROOST_ESTORE;
        }
        k->secret = *secret;
        k->secret_len = n;
        return ROOST_OK;
    }
    if (httpsig_key_from_pem(sk->material, strlen(sk->material), pkey) != HTTPSIG_OK) {
        return ROOST_ESTORE;
    }
    k->pkey = *pkey;
    return ROOST_OK;
}

/* Until when a nonce must be remembered: as long as its signature can still be accepted, on any
 * node. check_local accepts up to SIG_SKEW_S past `expires`, compared in whole seconds, so the
 * signature stays good until the end of second expires + SIG_SKEW_S; the row lives up to the first
 * millisecond after that (the store treats expires_at <= now as gone). Remembering it only until
 * `expires` let a captured request be replayed for the 60 s after it expired. A signature without
 * `expires` is refused today (httpsig_params_check_time), but were it accepted it would be good
 * until created + SIG_MAX_WINDOW_S. Nodes' clocks are assumed to agree to well under a second
 * (NTP), as for every other time in the shared store. */
static int64_t nonce_keep_until_ms(const struct httpsig_params *p)
{
    int64_t last_ok_s = (p->has_expires ? p->expires : p->created + SIG_MAX_WINDOW_S) + SIG_SKEW_S;
    return (last_ok_s + 1) * 1000;
}

static int run_check(struct job *job, struct store *st)
{
    struct sigcheck *c = (struct sigcheck *)job;
    const struct httpsig_params *p = &c->sig.params;
    struct store_key sk;
    int rc = store_call(st, key_get, c->tenant_id, p->keyid, &sk);
    if (rc == ROOST_EKEYNOTFOUND) {
        return ROOST_EKEYUNKNOWN; /* another tenant's key answers exactly the same */
    }
    if (rc != ROOST_OK) {
        return rc;
    }
    EVP_PKEY *pkey = NULL;
    unsigned char *secret = NULL;
    struct httpsig_key key = {0};
    if (sk.revoked_at_ms != 0 &&
        sk.revoked_at_ms <= c->now_ms) { /* a device key's end lies ahead */
        rc = ROOST_EKEYREVOKED;
    } else if (strcmp(sk.agent_id, c->agent_id[0] ? c->agent_id : "*") != 0) {
        rc = ROOST_EKEYWRONGAGENT;
    } else if ((rc = key_load(&sk, &key, &pkey, &secret)) == ROOST_OK) {
        struct httpsig_message m = {.method = c->method,
                                    .scheme = c->scheme,
                                    .authority = c->authority,
                                    .path = c->path,
                                    .query = c->query,
                                    .headers = c->headers,
                                    .n_headers = c->n_headers};
        rc = map_httpsig(httpsig_verify(&m, &c->sig, &key));
        if (rc == ROOST_ESIGMISSING) {
            rc = ROOST_ESIGINVALID;
        }
    }
    EVP_PKEY_free(pkey);
    if (secret != NULL) {
        OPENSSL_cleanse(secret, key.secret_len);
        free(secret);
    }
    store_key_cleanup(&sk);
    if (rc != ROOST_OK) {
        return rc;
    }
    /* Only a verified signature claims its nonce: forgeries cannot burn a client's nonces. */
    return store_call(st, nonce_claim, c->tenant_id, p->keyid, p->nonce, nonce_keep_until_ms(p),
                      c->now_ms);
}

static void done_check(struct job *job)
{
    struct sigcheck *c = (struct sigcheck *)job;
    struct request *rq = c->rq;
    if (job->rc != ROOST_OK) {
        reply_fail(rq, job->rc, NULL);
        return;
    }
    c->cont(rq);
}

void sigverify_start(struct request *rq, void (*cont)(struct request *rq))
{
    struct sigcheck *c = calloc(1, sizeof *c);
    if (c == NULL) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    rq->sig = c;
    rq->sig_free = sigcheck_free;
    c->rq = rq;
    c->cont = cont;
    c->now_ms = time_now_ms();
    snprintf(c->tenant_id, sizeof c->tenant_id, "%s", rq->principal.tenant_id);
    snprintf(c->agent_id, sizeof c->agent_id, "%s", rq->agent_id);
    int rc = copy_message(c, rq);
    if (rc == ROOST_OK) {
        rc = check_local(c, rq);
    }
    if (rc != ROOST_OK) {
        reply_fail(rq, rc, rc == ROOST_ESIGCOMPONENT ? c->component : NULL);
        return;
    }
    c->job = (struct job){.run = run_check, .done = done_check, .write = true};
    workers_submit(runtime_workers(rq->rt, rq->principal.tenant_id), &c->job);
}
