/* SPDX-License-Identifier: MIT */
/* The one error table of Roost: enum values, names, messages, HTTP status and the stable JSON
 * error code are all generated from ROOST_ERRNO_MAP, so the server and the SDK agree on them. */
#ifndef ROOST_ERROR_H
#define ROOST_ERROR_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(ROOST_BUILDING) && defined(__GNUC__)
#define ROOST_EXPORT __attribute__((visibility("default")))
#else
#define ROOST_EXPORT
#endif

/* X(NAME, http_status, "json_code", "message") — the value is -(position in the table). */
#define ROOST_ERRNO_MAP(X)                                                                         \
    X(EINVAL, 400, "invalid_request", "the request is malformed")                                  \
    X(EJSON, 400, "invalid_json", "the body is not valid JSON")                                    \
    X(EJSONDEPTH, 400, "json_too_deep", "the JSON nesting is too deep")                            \
    X(EBODY, 400, "invalid_body", "the body must be a JSON object")                                \
    X(EUNKNOWNFIELD, 400, "unknown_field", "the body contains an unknown field")                   \
    X(EAGENTID, 400, "invalid_agent_id", "agent_id must match [A-Za-z0-9._-]{1,128}")              \
    X(EEVENTID, 400, "invalid_event_id", "event_id must be evt_ followed by a 26-char ULID")       \
    X(ECURSOR, 400, "invalid_cursor", "after_cursor must be an integer >= 0")                      \
    X(ELIMIT, 400, "invalid_limit", "limit is out of range")                                       \
    X(EWAIT, 400, "invalid_wait_s", "wait_s is out of range")                                      \
    X(ELEASE, 400, "invalid_lease_s", "lease_s is out of range")                                   \
    X(ELEASETOKEN, 400, "invalid_lease_token", "lease_token is missing or malformed")              \
    X(EDELAY, 400, "invalid_delay_s", "delay_s is out of range")                                   \
    X(EREASON, 400, "invalid_reason", "reason must be transient, shutdown or poison")              \
    X(EERRORTEXT, 400, "invalid_error", "error must be a string of at most 4096 bytes")            \
    X(ECONSUMER, 400, "invalid_consumer", "consumer must match [A-Za-z0-9._:-]{1,128}")            \
    X(EPRIORITY, 400, "invalid_priority", "priority must be an integer in -100..100")              \
    X(EPAYLOAD, 400, "invalid_payload", "payload must be a JSON object")                           \
    X(ERECIPIENTS, 400, "invalid_recipients", "recipients must be a non-empty list of agent ids")  \
    X(ECORRELATION, 400, "invalid_correlation_id", "correlation_id must be a short string")        \
    X(EIDEMKEY, 400, "invalid_idempotency_key", "idempotency_key must be a short string")          \
    X(EAVAILABLEAT, 400, "invalid_available_at", "available_at/delay_s is invalid")                \
    X(EEXPIRESAT, 400, "invalid_expires_at", "expires_at/ttl_s is invalid")                        \
    X(ESTATEPATCH, 400, "invalid_state_patch", "state_patch must be a JSON object")                \
    X(EBATCH, 400, "invalid_batch", "events must be a non-empty list within limits.max_batch")     \
    X(EACKS, 400, "invalid_acks", "acks must be a non-empty list within limits.max_batch")         \
    X(EPAGE, 400, "invalid_page_token", "the page token is malformed")                             \
    X(EQUERY, 400, "invalid_query", "the query string is malformed")                               \
    X(EFRAMING, 400, "bad_request_framing", "the HTTP message framing is invalid")                 \
    X(EHEADERS, 431, "header_fields_too_large", "too many or too large header fields")             \
    X(EUNAUTHENTICATED, 401, "unauthenticated", "a valid bearer token is required")                \
    X(EFORBIDDEN, 403, "forbidden", "the token lacks the scope for this request")                  \
    X(ENOTFOUND, 404, "not_found", "no such route")                                                \
    X(EEVENTNOTFOUND, 404, "event_not_found", "no such event")                                     \
    X(EMETHOD, 405, "method_not_allowed", "method not allowed on this route")                      \
    X(ELEASEMISMATCH, 409, "lease_mismatch", "the lease token is not the event's current lease")   \
    X(ESTATE, 409, "invalid_state", "the event is not in a state that allows this")                \
    X(ELEASECAP, 409, "lease_cap_reached", "the lease cannot be extended past lease.max_total_s")  \
    X(EGONE, 410, "cursor_expired", "the cursor is older than retention; resync from state")       \
    X(ETOOLARGE, 413, "body_too_large", "the request body exceeds limits.max_body_bytes")          \
    X(EPAYLOADTOOLARGE, 413, "payload_too_large", "a payload exceeds limits.max_payload_bytes")    \
    X(ESCANBUDGET, 503, "scan_budget_exceeded",                                                    \
      "the sorted listing took longer than limits.admin_scan_ms; page by agent id instead")        \
    X(ESTATETOOLARGE, 413, "state_too_large",                                                      \
      "the state_patch would make an agent's state exceed limits.max_state_bytes")                 \
    X(EMEDIATYPE, 415, "unsupported_media_type", "the body must be application/json")              \
    X(ERATELIMIT, 429, "too_many_requests", "too many requests")                                   \
    X(ENOMEM, 500, "out_of_memory", "out of memory")                                               \
    X(ESTORE, 500, "internal_error", "internal store error")                                       \
    X(EINTERNAL, 500, "internal_error", "internal error")                                          \
    X(ERETRY, 503, "unavailable", "the store is busy; retry")                                      \
    X(EUNAVAILABLE, 503, "unavailable", "the service is unavailable")                              \
    X(ESHUTDOWN, 503, "shutting_down", "the server is shutting down")                              \
    X(ECONNECT, 0, "connect_failed", "could not reach the server")                                 \
    X(EPROTO, 0, "protocol_error", "the server answered something unexpected")                     \
    X(EIO, 0, "io_error", "a local file operation failed")                                         \
    /* Appended, not grouped by status: existing values stay stable for SDK users. */              \
    X(EKEYID, 400, "invalid_key_id", "key_id must match [A-Za-z0-9._-]{1,128}")                    \
    X(EKEYALG, 400, "invalid_alg",                                                                 \
      "alg must be ed25519, ecdsa-p256-sha256, rsa-pss-sha512, rsa-v1_5-sha256 or hmac-sha256")    \
    X(EKEYMATERIAL, 400, "invalid_public_key", "the key cannot be loaded or does not fit alg")     \
    X(EKEYNOTFOUND, 404, "key_not_found", "no such key")                                           \
    X(EKEYEXISTS, 409, "key_exists", "a key with this key_id already exists")                      \
    X(ESIGMISSING, 401, "signature_missing", "a request signature is required")                    \
    X(ESIGMALFORMED, 401, "signature_malformed", "Signature / Signature-Input are malformed")      \
    X(ESIGINVALID, 401, "signature_invalid", "the signature does not verify")                      \
    X(ESIGALG, 401, "signature_alg_unsupported", "the signature alg does not fit the key")         \
    X(ESIGEXPIRED, 401, "signature_expired", "created/expires missing or outside the window")      \
    X(ESIGWINDOW, 401, "signature_window_too_long", "expires - created exceeds 300 s")             \
    X(ESIGCOMPONENT, 401, "signature_component_missing", "a required component is not covered")    \
    X(ENONCEMISSING, 401, "nonce_missing", "the signature has no nonce parameter")                 \
    X(ENONCEREUSED, 401, "nonce_reused", "this (keyid, nonce) was already used")                   \
    X(EDIGESTMISSING, 401, "digest_missing", "a body requires a Content-Digest header")            \
    X(EDIGESTMISMATCH, 401, "digest_mismatch", "Content-Digest does not match the body")           \
    X(EKEYUNKNOWN, 401, "key_unknown", "the signature's keyid is not a key of this tenant")        \
    X(EKEYREVOKED, 401, "key_revoked", "the signature's key is revoked")                           \
    X(EKEYWRONGAGENT, 401, "key_wrong_agent", "the signature's key belongs to another agent")      \
    X(EQUERYREPEAT, 400, "repeated_query_parameter", "a query parameter is given more than once")  \
    X(EENDPOINTNOTFOUND, 404, "endpoint_not_found", "no such webhook endpoint")                    \
    X(EENDPOINTEXISTS, 409, "endpoint_exists", "the agent already has a webhook endpoint")         \
    X(EHTTPSREQUIRED, 400, "https_required", "the webhook url must be an https:// URL")            \
    X(EDESTFORBIDDEN, 400, "destination_forbidden",                                                \
      "the webhook host resolves to an address roostd may not connect to")                         \
    X(EVERIFYFAILED, 422, "endpoint_verification_failed",                                          \
      "the endpoint did not answer the verification challenge")                                    \
    X(EWEBHOOKURL, 400, "invalid_url", "url must be an absolute https URL of at most 2048 bytes")  \
    X(EWEBHOOKSECRET, 400, "invalid_secret",                                                       \
      "secret must be whsec_ followed by the base64 of 24 to 64 random bytes")                     \
    X(EDEVICENOTFOUND, 404, "device_not_found", "no such device or user code")                     \
    X(ESOURCENOTFOUND, 404, "source_not_found", "no such inbound webhook source")                  \
    X(ESOURCEEXISTS, 409, "source_exists", "a source with this id already exists")                 \
    X(ESOURCECONFIG, 400, "invalid_source", "the source's scheme, secret or routing is invalid")   \
    X(EINGESTREFUSED, 401, "delivery_refused", "the delivery could not be verified")               \
    X(EINGESTUNROUTABLE, 422, "delivery_unroutable",                                               \
      "the delivery names no agent this source may deliver to")

enum roost_error_position {
#define ROOST_ERROR_POS(name, status, code, msg) ROOST_POS_##name,
    ROOST_ERRNO_MAP(ROOST_ERROR_POS)
#undef ROOST_ERROR_POS
        ROOST_POS_COUNT_
};

/* Error codes: ROOST_OK is 0, every error is negative. */
typedef enum roost_rc {
    ROOST_OK = 0,
#define ROOST_ERROR_ENUM(name, status, code, msg) ROOST_##name = -(ROOST_POS_##name + 1),
    ROOST_ERRNO_MAP(ROOST_ERROR_ENUM)
#undef ROOST_ERROR_ENUM
} roost_rc;

/* Human message of a code ("ok" for ROOST_OK, "unknown error" for values outside the table). */
ROOST_EXPORT const char *roost_strerror(int rc);
/* Symbolic name, e.g. "ROOST_EGONE". */
ROOST_EXPORT const char *roost_err_name(int rc);
/* Stable snake_case JSON code, e.g. "cursor_expired" ("ok" for ROOST_OK). */
ROOST_EXPORT const char *roost_err_code(int rc);
/* HTTP status the server answers with (200 for ROOST_OK, 0 for client-side-only codes). */
ROOST_EXPORT int roost_err_http_status(int rc);
/* Maps a JSON error code back to the first matching rc; ROOST_EPROTO when unknown. */
ROOST_EXPORT int roost_err_from_code(const char *code);

#ifdef __cplusplus
}
#endif
#endif
