/* SPDX-License-Identifier: MIT */
/* The operator's side of device login (api_oauth.c, doc/CREDENTIALS.md): list a tenant's devices
 * (pending ones show their user code, agent, requested scopes, name and address), approve or deny
 * a user code, revoke a device (its refresh tokens and signing keys die with it). tenant:admin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/ids.h"
#include "common/timeutil.h"
#include "server/api.h"
#include "server/api_json.h"
#include "server/auth.h"
#include "server/request.h"
#include "server/runtime.h"
#include "server/workers.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

struct devices_op {
    struct job job;
    struct request *rq;
    char user_code[STORE_USER_CODE_MAX + 1];
    char agent[STORE_ID_MAX + 1];
    char after[STORE_DEVICE_ID_MAX + 1];
    char scope[STORE_DEVICE_SCOPE_MAX + 1]; /* approve: what the operator grants ("" = as asked) */
    bool approve;
    int64_t limit;
    struct store_device *list;
    size_t n;
    bool has_more;
};

static void devices_op_free(void *p)
{
    struct devices_op *op = p;
    free(op->list);
    free(op);
}

static struct devices_op *devices_op_new(struct request *rq, size_t n)
{
    struct devices_op *op = request_op_new(rq, sizeof *op, devices_op_free);
    if (op == NULL) {
        return NULL;
    }
    op->rq = rq;
    if ((op->list = calloc(n, sizeof *op->list)) == NULL) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return NULL;
    }
    return op;
}

static const char *status_name(int s)
{
    static const char *const names[] = {"pending", "approved", "denied", "revoked"};
    return s >= 0 && s < 4 ? names[s] : "unknown";
}

static json_t *device_json(const struct store_device *d, int64_t now)
{
    bool pending = d->status == STORE_DEVICE_PENDING;
    return json_pack(
        "{s:s, s:s, s:s, s:s, s:s, s:s?, s:s?, s:s, s:b, s:o, s:o, s:o, s:s?, s:s?, s:I, s:o}",
        "device_id", d->device_id, "agent_id", d->agent_id, "name", d->name, "address", d->address,
        "scope_requested", d->scope_requested, "scope_granted",
        d->scope_granted[0] ? d->scope_granted : NULL, "user_code", pending ? d->user_code : NULL,
        "status", status_name(d->status), "code_expired", pending && now >= d->code_expires_at_ms,
        "created_at", time_json(d->created_at_ms), "code_expires_at",
        time_json(d->code_expires_at_ms), "decided_at", time_json(d->decided_at_ms), "decided_by",
        d->decided_by[0] ? d->decided_by : NULL, "revoked_reason",
        d->revoked_reason[0] ? d->revoked_reason : NULL, "refreshes", (json_int_t)d->refresh_gen,
        "last_refresh_at", time_json(d->last_refresh_at_ms));
}

/* User codes are shown as XXXX-XXXX; an operator may type them in lower case or without '-'. */
static bool user_code_norm(const char *in, char out[STORE_USER_CODE_MAX + 1])
{
    size_t n = 0;
    for (const char *p = in; *p; p++) {
        if (*p == '-' || *p == ' ') {
            continue;
        }
        char c = (char)(*p >= 'a' && *p <= 'z' ? *p - 32 : *p);
        if (c < 'A' || c > 'Z' || n == 8) {
            return false;
        }
        out[n < 4 ? n : n + 1] = c;
        n++;
    }
    if (n != 8) {
        return false;
    }
    out[4] = '-';
    out[9] = '\0';
    return true;
}

static void done_one(struct job *job)
{
    struct devices_op *op = (struct devices_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc,
                            job->rc == ROOST_ESTATE
                                ? "the device is not pending or its user code has expired"
                                : NULL,
                            NULL);
        return;
    }
    request_reply_json(op->rq, 200, device_json(&op->list[0], time_now_ms()));
}

/* ---- GET /api/v1/admin/devices ---- */

static int run_list(struct job *job, struct store *st)
{
    struct devices_op *op = (struct devices_op *)job;
    const char *tenant = op->rq->principal.tenant_id;
    op->n = 0;
    op->has_more = false;
    if (op->user_code[0] != '\0') {
        int rc = store_call(st, device_get, tenant, STORE_DEVICE_BY_USER_CODE, op->user_code,
                            &op->list[0]);
        op->n = rc == ROOST_OK ? 1 : 0;
        return rc == ROOST_EDEVICENOTFOUND ? ROOST_OK : rc;
    }
    return store_call(st, device_list, tenant, op->agent[0] ? op->agent : NULL, op->after,
                      (size_t)op->limit, op->list, &op->n, &op->has_more);
}

static void done_list(struct job *job)
{
    struct devices_op *op = (struct devices_op *)job;
    if (job->rc != ROOST_OK) {
        request_reply_error(op->rq, job->rc, NULL, NULL);
        return;
    }
    int64_t now = time_now_ms();
    json_t *list = json_array();
    for (size_t i = 0; i < op->n; i++) {
        json_array_append_new(list, device_json(&op->list[i], now));
    }
    json_t *next =
        page_token_json(op->has_more && op->n > 0 ? op->list[op->n - 1].device_id : NULL);
    request_reply_json(op->rq, 200, json_pack("{s:o, s:o}", "devices", list, "next", next));
}

void api_admin_devices_list(struct request *rq)
{
    int64_t limit;
    int rc = request_param_int(rq, "limit", 100, ROOST_ELIMIT, &limit);
    if (rc) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    const char *next = request_param_str(rq, "next", &rc);
    const char *agent = rc ? NULL : request_param_str(rq, "agent_id", &rc);
    const char *code = rc ? NULL : request_param_str(rq, "user_code", &rc);
    if (rc) {
        request_reply_error(rq, rc, NULL, NULL);
        return;
    }
    struct devices_op *op = devices_op_new(rq, (size_t)limit);
    if (op == NULL) {
        return;
    }
    if (next != NULL && (page_token_parse(next, op->after, sizeof op->after) != ROOST_OK ||
                         !ids_valid_name(op->after, strlen(op->after)))) {
        request_reply_error(rq, ROOST_EPAGE, NULL, NULL);
        return;
    }
    if (agent != NULL) {
        if (!ids_valid_name(agent, strlen(agent))) {
            request_reply_error(rq, ROOST_EAGENTID, NULL, NULL);
            return;
        }
        snprintf(op->agent, sizeof op->agent, "%s", agent);
    }
    if (code != NULL && !user_code_norm(code, op->user_code)) {
        request_reply_error(rq, ROOST_EDEVICENOTFOUND, "user_code looks like XXXX-XXXX", NULL);
        return;
    }
    op->limit = limit;
    op->job = (struct job){
        .run = run_list, .done = done_list, .write = false, .name = request_job_kind(rq)};
    workers_submit(runtime_workers(rq->rt, rq->principal.tenant_id), &op->job);
}

/* ---- POST /api/v1/admin/devices/approve and /deny ---- */

static int run_decide(struct job *job, struct store *st)
{
    struct devices_op *op = (struct devices_op *)job;
    const char *tenant = op->rq->principal.tenant_id;
    struct store_device *d = &op->list[0];
    int rc = store_call(st, device_get, tenant, STORE_DEVICE_BY_USER_CODE, op->user_code, d);
    if (rc != ROOST_OK) {
        return rc;
    }
    const char *scope = op->scope[0] ? op->scope : d->scope_requested;
    int64_t now = time_now_ms();
    rc = store_call(st, device_decide, tenant, d->device_id, op->approve, scope,
                    op->rq->principal.sub, now);
    char id[STORE_DEVICE_ID_MAX + 1]; /* device_get clears *d first */
    snprintf(id, sizeof id, "%s", d->device_id);
    return rc != ROOST_OK ? rc : store_call(st, device_get, tenant, STORE_DEVICE_BY_ID, id, d);
}

static void decide(struct request *rq, bool approve)
{
    const char *bad = NULL;
    if (body_param_only(rq, rq->body, "", &bad) != ROOST_OK) {
        request_reply_error(rq, ROOST_EUNKNOWNFIELD, NULL, json_pack("{s:s}", "field", bad));
        return;
    }
    const char *code = NULL, *scope = NULL;
    int rc = body_param_str(rq, rq->body, "user_code", ROOST_EDEVICENOTFOUND, &code);
    if (rc == ROOST_OK && approve) {
        rc = body_param_str(rq, rq->body, "scope", ROOST_EINVAL, &scope);
    }
    if (rc != ROOST_OK || code == NULL) {
        request_reply_error(rq, rc != ROOST_OK ? rc : ROOST_EDEVICENOTFOUND, NULL, NULL);
        return;
    }
    struct devices_op *op = devices_op_new(rq, 1);
    if (op == NULL) {
        return;
    }
    if (!user_code_norm(code, op->user_code)) {
        request_reply_error(rq, ROOST_EDEVICENOTFOUND, "user_code looks like XXXX-XXXX", NULL);
        return;
    }
    if (scope != NULL) {
        struct auth_principal p;
        auth_principal_clear(&p);
        if (auth_parse_scopes(scope, &p) != 0 || p.n_scopes == 0) {
            request_reply_error(rq, ROOST_EINVAL, "scope must name Roost scopes", NULL);
            return;
        }
        snprintf(op->scope, sizeof op->scope, "%s", scope);
    }
    op->approve = approve;
    op->job = (struct job){
        .run = run_decide, .done = done_one, .write = true, .name = request_job_kind(rq)};
    workers_submit(runtime_workers(rq->rt, rq->principal.tenant_id), &op->job);
}

void api_admin_devices_approve(struct request *rq)
{
    decide(rq, true);
}

void api_admin_devices_deny(struct request *rq)
{
    decide(rq, false);
}

/* ---- POST /api/v1/admin/devices/{key}/revoke ---- */

static int run_revoke(struct job *job, struct store *st)
{
    struct devices_op *op = (struct devices_op *)job;
    const char *tenant = op->rq->principal.tenant_id;
    int rc = store_call(st, device_revoke, tenant, op->rq->key_id, "revoked by an operator",
                        op->rq->principal.sub, time_now_ms());
    return rc != ROOST_OK ? rc
                          : store_call(st, device_get, tenant, STORE_DEVICE_BY_ID, op->rq->key_id,
                                       &op->list[0]);
}

void api_admin_devices_revoke(struct request *rq)
{
    if (json_object_size(rq->body) != 0) {
        request_reply_error(rq, ROOST_EUNKNOWNFIELD, "revoke takes no body", NULL);
        return;
    }
    struct devices_op *op = devices_op_new(rq, 1);
    if (op != NULL) {
        op->job = (struct job){
            .run = run_revoke, .done = done_one, .write = true, .name = request_job_kind(rq)};
        workers_submit(runtime_workers(rq->rt, rq->principal.tenant_id), &op->job);
    }
}
