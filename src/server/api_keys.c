/* SPDX-License-Identifier: MIT */
/* Request-signing keys (DESIGN §6.2): the tenant operator registers, lists and revokes them
 * (tenant:admin), and roostd publishes its own public key. A key is validated by loading it and
 * stored as its public SPKI PEM (or, for hmac-sha256, the base64 secret, never shown again). */
#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <stdlib.h>
#include <string.h>

#include "common/ids.h"
#include "common/timeutil.h"
#include "proto/httpsig.h"
#include "proto/sf.h"
#include "server/api.h"
#include "server/api_json.h"
#include "server/request.h"
#include "server/runtime.h"
#include "server/workers.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

#define HMAC_MIN_BYTES 32

struct keys_op {
    struct job job;
    struct request *rq;
    struct store_key key; /* add: the new key; revoke: the key afterwards */
    int64_t limit;
    char after[STORE_ID_MAX + 1];
    struct store_key *list;
    size_t n;
    bool has_more;
};

static void keys_op_free(void *p)
{
    struct keys_op *op = p;
    store_key_cleanup(&op->key);
    free(op->list);
    free(op);
}

static struct keys_op *keys_op_new(struct request *rq)
{
    struct keys_op *op = request_op_new(rq, sizeof *op, keys_op_free);
    if (op == NULL) {
        return NULL;
    }
    op->rq = rq;
    return op;
}

/* The API view of a key: metadata only, never the material. */
static json_t *key_json(const struct store_key *k)
{
    return json_pack("{s:s, s:s, s:s, s:o, s:o}", "key_id", k->key_id, "agent_id", k->agent_id,
                     "alg", k->alg, "created_at", time_json(k->created_at_ms), "revoked_at",
                     time_json(k->revoked_at_ms));
}

/* ---- POST /admin/keys ---- */

/* The public half of pkey as SPKI PEM (caller frees), or NULL. */
static char *public_pem(EVP_PKEY *pkey)
{
    BIO *bio = BIO_new(BIO_s_mem());
    char *out = NULL;
    if (bio && PEM_write_bio_PUBKEY(bio, pkey) == 1) {
        char *data = NULL;
        long n = BIO_get_mem_data(bio, &data);
        if (n > 0 && (out = malloc((size_t)n + 1)) != NULL) {
            memcpy(out, data, (size_t)n);
            out[n] = '\0';
        }
    }
    BIO_free(bio);
    ERR_clear_error();
    return out;
}

/* Loads public_key (PEM string or JWK object) for `alg`; on success *material is the public
 * PEM. ROOST_EKEYMATERIAL with *why set otherwise. */
int api_keys_load_public(int alg, const json_t *pk, char **material, const char **why)
{
    EVP_PKEY *pkey = NULL;
    int rc = ROOST_EKEYMATERIAL;
    *material = NULL;
    if (json_is_string(pk)) {
        const char *pem = json_string_value(pk);
        if (strstr(pem, "PRIVATE KEY") != NULL) {
            *why = "public_key is a private key: register the public key only";
            return rc;
        }
        if (httpsig_key_from_pem(pem, json_string_length(pk), &pkey) != HTTPSIG_OK) {
            *why = "public_key is not a loadable PEM public key";
            return rc;
        }
    } else if (json_is_object(pk)) {
        if (json_object_get(pk, "d") != NULL) {
            *why = "public_key is a private JWK: register the public key only";
            return rc;
        }
        if (httpsig_key_from_jwk(pk, &pkey) != HTTPSIG_OK) {
            *why = "public_key is not a usable JWK (OKP Ed25519, EC P-256, RSA >= 2048 bits)";
            return rc;
        }
    } else {
        *why = "public_key must be a PEM string or a JWK object";
        return rc;
    }
    /* A dummy signature tells whether the key fits the alg: EINVALID means it would verify. */
    struct httpsig_key k = {.alg = alg, .pkey = pkey};
    static const unsigned char zero[512];
    size_t sig_len = alg == HTTPSIG_ALG_ED25519 || alg == HTTPSIG_ALG_ECDSA_P256_SHA256 ? 64 : 256;
    if (httpsig_verify_raw(&k, zero, 1, zero, sig_len) != HTTPSIG_EINVALID) {
        *why = "public_key does not fit alg";
        goto out;
    }
    if ((*material = public_pem(pkey)) == NULL) {
        rc = ROOST_ENOMEM;
        goto out;
    }
    rc = ROOST_OK;
out:
    EVP_PKEY_free(pkey);
    return rc;
}

/* Checks and normalises a base64 HMAC secret. ROOST_OK (*material set) or ROOST_EKEYMATERIAL. */
static int load_secret(const json_t *sec, char **material, const char **why)
{
    unsigned char *raw = NULL;
    size_t n = 0;
    *material = NULL;
    *why = "secret must be base64 of 32..1024 bytes";
    if (!json_is_string(sec) || json_string_length(sec) > 2 * HTTPSIG_MAX_SECRET_BYTES ||
        sf_base64_decode(json_string_value(sec), json_string_length(sec), &raw, &n) != 0) {
        return ROOST_EKEYMATERIAL;
    }
    int rc = ROOST_EKEYMATERIAL;
    if (n >= HMAC_MIN_BYTES && n <= HTTPSIG_MAX_SECRET_BYTES) {
        size_t out_len;
        rc = sf_base64_encode(raw, n, material, &out_len) == 0 ? ROOST_OK : ROOST_ENOMEM;
    }
    OPENSSL_cleanse(raw, n);
    free(raw);
    return rc;
}

static int run_add(struct job *job, struct store *st)
{
    struct keys_op *op = (struct keys_op *)job;
    op->key.created_at_ms = time_now_ms();
    return store_call(st, key_add, op->rq->principal.tenant_id, &op->key, op->key.created_at_ms);
}

static void done_add(struct job *job)
{
    struct keys_op *op = (struct keys_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    request_reply_json(op->rq, 201, key_json(&op->key));
}

void api_admin_keys_add(struct request *rq)
{
    const char *bad = NULL;
    if (body_param_only(rq, rq->body, "", &bad) != ROOST_OK) {
        request_reply_error(rq, ROOST_EUNKNOWNFIELD, NULL, json_pack("{s:s}", "field", bad));
        return;
    }
    const char *key_id, *agent_id, *alg_name;
    if (body_param_str(rq, rq->body, "key_id", ROOST_EKEYID, &key_id) != ROOST_OK ||
        key_id == NULL || !ids_valid_name(key_id, strlen(key_id))) {
        request_reply_error(rq, ROOST_EKEYID, NULL, NULL);
        return;
    }
    if (body_param_str(rq, rq->body, "agent_id", ROOST_EAGENTID, &agent_id) != ROOST_OK ||
        agent_id == NULL ||
        (strcmp(agent_id, "*") != 0 && !ids_valid_name(agent_id, strlen(agent_id)))) {
        request_reply_error(rq, ROOST_EAGENTID,
                            "agent_id must be an agent id, or * for a "
                            "producer key",
                            NULL);
        return;
    }
    enum httpsig_alg alg = HTTPSIG_ALG_NONE;
    if (body_param_str(rq, rq->body, "alg", ROOST_EKEYALG, &alg_name) != ROOST_OK ||
        alg_name == NULL || (alg = httpsig_alg_from_name(alg_name)) == HTTPSIG_ALG_NONE) {
        request_reply_error(rq, ROOST_EKEYALG, NULL, NULL);
        return;
    }
    const json_t *pk = json_object_get(rq->body, "public_key");
    const json_t *sec = json_object_get(rq->body, "secret");
    bool hmac = alg == HTTPSIG_ALG_HMAC_SHA256;
    if ((hmac && (sec == NULL || pk != NULL)) || (!hmac && (pk == NULL || sec != NULL))) {
        request_reply_error(rq, ROOST_EKEYMATERIAL,
                            hmac ? "hmac-sha256 takes \"secret\" (base64), not public_key"
                                 : "this alg takes \"public_key\" (PEM or JWK), not secret",
                            NULL);
        return;
    }
    struct keys_op *op = keys_op_new(rq);
    if (!op) {
        return;
    }
    const char *why = NULL;
    int rc = hmac ? load_secret(sec, &op->key.material, &why)
                  : api_keys_load_public(alg, pk, &op->key.material, &why);
    if (rc != ROOST_OK) {
        request_reply_error(rq, rc, rc == ROOST_EKEYMATERIAL ? why : NULL, NULL);
        return;
    }
    snprintf(op->key.key_id, sizeof op->key.key_id, "%s", key_id);
    snprintf(op->key.agent_id, sizeof op->key.agent_id, "%s", agent_id);
    snprintf(op->key.alg, sizeof op->key.alg, "%s", httpsig_alg_name(alg));
    op->job =
        (struct job){.run = run_add, .done = done_add, .write = true, .name = request_job_kind(rq)};
    workers_submit(runtime_workers(rq->rt, rq->principal.tenant_id), &op->job);
}

/* ---- GET /admin/keys ---- */

static int run_list(struct job *job, struct store *st)
{
    struct keys_op *op = (struct keys_op *)job;
    return store_call(st, key_list, op->rq->principal.tenant_id, op->after, (size_t)op->limit,
                      op->list, &op->n, &op->has_more);
}

static void done_list(struct job *job)
{
    struct keys_op *op = (struct keys_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    json_t *keys = json_array();
    for (size_t i = 0; i < op->n; i++) {
        json_array_append_new(keys, key_json(&op->list[i]));
    }
    json_t *next = page_token_json(op->has_more && op->n > 0 ? op->list[op->n - 1].key_id : NULL);
    request_reply_json(op->rq, 200, json_pack("{s:o, s:o}", "keys", keys, "next", next));
}

void api_admin_keys_list(struct request *rq)
{
    int64_t limit;
    int rc = request_param_int(rq, "limit", 100, ROOST_ELIMIT, &limit);
    if (rc) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    const char *next = request_param_str(rq, "next", &rc);
    if (rc) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    struct keys_op *op = keys_op_new(rq);
    if (!op) {
        return;
    }
    if (next) {
        if (page_token_parse(next, op->after, sizeof op->after) != ROOST_OK ||
            !ids_valid_name(op->after, strlen(op->after))) {
            request_reply_error(rq, ROOST_EPAGE, NULL, NULL);
            return;
        }
    }
    op->limit = limit;
    op->list = calloc((size_t)limit, sizeof *op->list);
    if (!op->list) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    op->job = (struct job){
        .run = run_list, .done = done_list, .write = false, .name = request_job_kind(rq)};
    workers_submit(runtime_workers(rq->rt, rq->principal.tenant_id), &op->job);
}

/* ---- POST /admin/keys/{key_id}/revoke ---- */

static int run_revoke(struct job *job, struct store *st)
{
    struct keys_op *op = (struct keys_op *)job;
    const char *tenant = op->rq->principal.tenant_id;
    store_key_cleanup(&op->key);
    int rc = store_call(st, key_revoke, tenant, op->rq->key_id, time_now_ms());
    return rc != ROOST_OK ? rc : store_call(st, key_get, tenant, op->rq->key_id, &op->key);
}

static void done_revoke(struct job *job)
{
    struct keys_op *op = (struct keys_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    request_reply_json(op->rq, 200, key_json(&op->key));
}

void api_admin_keys_revoke(struct request *rq)
{
    if (json_object_size(rq->body) != 0) {
        request_reply_error(rq, ROOST_EUNKNOWNFIELD, "revoke takes no body", NULL);
        return;
    }
    struct keys_op *op = keys_op_new(rq);
    if (op) {
        op->job = (struct job){
            .run = run_revoke, .done = done_revoke, .write = true, .name = request_job_kind(rq)};
        workers_submit(runtime_workers(rq->rt, rq->principal.tenant_id), &op->job);
    }
}

/* ---- GET /api/v1/keys/server ---- */

void api_server_keys(struct request *rq)
{
    json_t *jwks = json_loads(rq->rt->sign_key.jwks, 0, NULL);
    if (!jwks) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    request_reply_json(rq, 200, jwks);
}
