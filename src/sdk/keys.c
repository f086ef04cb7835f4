/* SPDX-License-Identifier: MIT */
/* Operator calls for request-signing keys: register, list, revoke (doc/API.md "Signature keys"). */
#include <stdlib.h>
#include <string.h>

#include "common/ids.h"
#include "sdk/sdk.h"

#include "common/banned.h"

/* Hands the last answer back as compact JSON text. */
static int answer_text(struct roost_client *c, const json_t *resp, char **json_out)
{
    if (json_out == NULL) {
        return ROOST_OK;
    }
    *json_out = json_dumps(resp, JSON_COMPACT);
    return *json_out != NULL ? ROOST_OK : sdk_fail(c, ROOST_ENOMEM, "out of memory");
}

/* The start of a call on one key: *json_out (optional) cleared, the client's last error reset,
 * key_id checked. ROOST_OK, ROOST_EINVAL (no client) or ROOST_EKEYID. */
static int key_call_start(struct roost_client *c, const char *key_id, char **json_out)
{
    if (json_out != NULL) {
        *json_out = NULL;
    }
    if (c == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    if (key_id == NULL || !ids_valid_name(key_id, strlen(key_id))) {
        return sdk_fail(c, ROOST_EKEYID, "%s", roost_strerror(ROOST_EKEYID));
    }
    return ROOST_OK;
}

int roost_admin_key_add(struct roost_client *c, const char *key_id, const char *agent_id,
                        const char *alg, const char *public_key_pem, const char *secret_b64,
                        char **json_out)
{
    int rc = key_call_start(c, key_id, json_out);
    if (rc != ROOST_OK) {
        return rc;
    }
    if (agent_id == NULL ||
        (strcmp(agent_id, "*") != 0 && !ids_valid_name(agent_id, strlen(agent_id)))) {
        return sdk_fail(c, ROOST_EAGENTID, "agent_id must match [A-Za-z0-9._-]{1,128} or be *");
    }
    if (alg == NULL || alg[0] == '\0' || strlen(alg) > 64) {
        return sdk_fail(c, ROOST_EKEYALG, "alg is required");
    }
    if ((public_key_pem == NULL) == (secret_b64 == NULL)) {
        return sdk_fail(c, ROOST_EKEYMATERIAL, "give exactly one of a public key and a secret");
    }
    json_t *body = json_object();
    json_t *resp = NULL;
    if (body == NULL || !sdk_put(body, "key_id", json_string(key_id)) ||
        !sdk_put(body, "agent_id", json_string(agent_id)) ||
        !sdk_put(body, "alg", json_string(alg)) ||
        !sdk_put(body, public_key_pem != NULL ? "public_key" : "secret",
                 json_string(public_key_pem != NULL ? public_key_pem : secret_b64))) {
        /* json_string refuses text that is not UTF-8. */
        rc = sdk_fail(c, ROOST_EKEYMATERIAL, "the key material is not UTF-8 text");
        goto out;
    }
    rc = sdk_request_json(c, "POST", "/api/v1/admin/keys", body, 0, &resp);
    if (rc == ROOST_OK) {
        rc = answer_text(c, resp, json_out);
    }
out:
    json_decref(body);
    json_decref(resp);
    return rc;
}

int roost_admin_keys_list(struct roost_client *c, int limit, const char *page, char **json_out)
{
    if (json_out != NULL) {
        *json_out = NULL;
    }
    if (c == NULL || json_out == NULL || limit < 0) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    if (page != NULL && (page[0] == '\0' || strlen(page) > SDK_MAX_ID_BYTES)) {
        return sdk_fail(c, ROOST_EPAGE, "bad page token");
    }
    struct dynbuf p;
    dynbuf_init(&p, SDK_MAX_URL_BYTES * 4);
    dynbuf_adds(&p, "/api/v1/admin/keys");
    char sep = '?';
    if (limit > 0) {
        dynbuf_addf(&p, "%climit=%d", sep, limit);
        sep = '&';
    }
    if (page != NULL) {
        dynbuf_addf(&p, "%cnext=", sep);
        sdk_add_escaped(&p, page);
    }
    json_t *resp = NULL;
    int rc = sdk_buf_rc(&p);
    if (rc != ROOST_OK) {
        rc = sdk_path_fail(c, rc);
    } else if ((rc = sdk_request(c, "GET", p.s, NULL, 0, 0, &resp)) == ROOST_OK) {
        rc = json_is_array(json_object_get(resp, "keys"))
                 ? answer_text(c, resp, json_out)
                 : sdk_shape_fail(c, ROOST_EPROTO, "key list");
    }
    json_decref(resp);
    dynbuf_cleanup(&p);
    return rc;
}

int roost_admin_key_revoke(struct roost_client *c, const char *key_id, char **json_out)
{
    int rc = key_call_start(c, key_id, json_out);
    if (rc != ROOST_OK) {
        return rc;
    }
    struct dynbuf p;
    dynbuf_init(&p, SDK_MAX_URL_BYTES * 4);
    dynbuf_adds(&p, "/api/v1/admin/keys/");
    sdk_add_escaped(&p, key_id);
    dynbuf_adds(&p, "/revoke");
    json_t *resp = NULL;
    rc = sdk_buf_rc(&p);
    if (rc != ROOST_OK) {
        rc = sdk_path_fail(c, rc);
    } else if ((rc = sdk_request(c, "POST", p.s, NULL, 0, 0, &resp)) == ROOST_OK) {
        rc = answer_text(c, resp, json_out);
    }
    json_decref(resp);
    dynbuf_cleanup(&p);
    return rc;
}
