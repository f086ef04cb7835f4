/* SPDX-License-Identifier: MIT */
/* Internals of libroost shared by the files of src/sdk: the client structure, the bounded string
 * builder used for URLs and paths, the HTTP transport and the JSON → result converters. Not
 * installed. */
#ifndef ROOST_SDK_H
#define ROOST_SDK_H

#include <curl/curl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/dynbuf.h"
#include "common/limits.h"
#include "roost/roost_client.h"

#define SDK_DEFAULT_CONNECT_TIMEOUT_MS 10000L
#define SDK_DEFAULT_REQUEST_TIMEOUT_MS 30000L
#define SDK_DEFAULT_MAX_RESPONSE_BYTES ((size_t)64 * 1024 * 1024)
#define SDK_MIN_RESPONSE_BYTES ((size_t)4096)
#define SDK_MAX_URL_BYTES 2048
/* Deepest JSON the SDK parses (payloads nest; jansson's own parser limit is 2048). */
#define SDK_MAX_JSON_DEPTH 512
/* Longest id-like argument put into a path or query (event ids, page tokens). */
#define SDK_MAX_ID_BYTES 1024

/* URLs and paths are built in a struct dynbuf (common/dynbuf.h) of at most SDK_MAX_URL_BYTES * 4
 * bytes. Its sticky error as a roost_rc: ROOST_OK, ROOST_ENOMEM, or ROOST_EINVAL (over max). */
int sdk_buf_rc(const struct dynbuf *b);
/* Percent-encodes every byte but the RFC 3986 unreserved ones (A-Z a-z 0-9 - . _ ~). */
void sdk_add_escaped(struct dynbuf *b, const char *z);

/* Normalises a server URL: "host:port" → "http://host:port", trailing '/' removed; only http and
 * https. Returns ROOST_OK and a heap copy in *out, ROOST_EINVAL, ROOST_ENOMEM. */
int sdk_url_normalize(const char *url, char **out);

/* With a token callback, asks it for the current token and keeps it when it is valid and new;
 * when the callback fails (or answers something invalid) the client keeps the token it had,
 * unless it answers ROOST_EUNAUTHENTICATED, which is returned (recorded on c). Then asks the
 * signing key callback, if any, and signs with the key it gives when that is a new one. */
int sdk_token_refresh(struct roost_client *c);

/* An id-like argument fit for a path, query or body (event id, lease token): present, not empty
 * and at most SDK_MAX_ID_BYTES; the server checks its format. */
bool sdk_id_ok(const char *id);
/* "/api/v1/agents/{agent}{tail}" with the agent id validated and escaped. ROOST_EAGENTID. */
int sdk_path_agent(struct dynbuf *s, const char *agent_id, const char *tail);
/* "/api/v1/agents/{agent}/inbox/{event_id}/{action}". ROOST_EAGENTID, ROOST_EEVENTID (empty or
 * longer than SDK_MAX_ID_BYTES). */
int sdk_path_event(struct dynbuf *s, const char *agent_id, const char *event_id,
                   const char *action);

struct roost_client {
    char *base_url;          /* normalised, no trailing '/' */
    char *token;             /* may be NULL */
    roost_token_fn token_fn; /* NULL: token is fixed (roost_client_set_token_callback) */
    void *token_arg;
    roost_signing_key_fn key_fn; /* NULL: the signing key is fixed */
    void *key_arg;
    uint64_t key_gen; /* of the key key_fn gave, 0: none yet */
    char *ca_file;    /* may be NULL */
    CURL *curl;       /* reused: keeps the connection alive between calls */
    long connect_timeout_ms;
    long request_timeout_ms;
    size_t max_response_bytes;
    /* Optional (the agent loop): while it reads non-zero, transfers are aborted, so a long poll
     * or an SSE stream ends within about a second of a stop. Borrowed. */
    const atomic_int *abort_flag;
    struct sdk_signer *signer; /* NULL: requests are not signed */

    /* the last call */
    struct dynbuf resp; /* the body; its max is max_response_bytes (set by sdk_reset) */
    int http_status;
    int64_t oldest_cursor;
    int64_t retry_after_s;
    char request_id[128];
    char server_version[64]; /* X-Roost-Version of the last response */
    char errcode[64];
    char errmsg[1024];
    char curl_err[CURL_ERROR_SIZE];
};

/* A loaded request-signing key (sign.c). Immutable once made: one signer may sign on several
 * threads. */
struct sdk_signer;
/* Loads `key` (PEM text, "base64:"+secret, or a file path) for key_id/alg (alg NULL: implied by
 * the key). ROOST_OK, ROOST_EKEYID, ROOST_EKEYALG, ROOST_EKEYMATERIAL, ROOST_EIO, ROOST_ENOMEM;
 * err gets a message. */
int sdk_signer_new(const char *key, const char *key_id, const char *alg, struct sdk_signer **out,
                   char *err, size_t errlen);
void sdk_signer_free(struct sdk_signer *s);
/* Appends Host, Content-Digest (when body_len > 0), Signature-Input and Signature for one
 * request to the full `url` to *list (RFC 9421, label sig1, fresh nonce, 60 s window).
 * ROOST_OK, ROOST_ENOMEM, ROOST_EINVAL (URL), ROOST_EINTERNAL; err gets a message. */
int sdk_signer_headers(const struct sdk_signer *s, const char *method, const char *url,
                       const char *token, const char *body, size_t body_len,
                       struct curl_slist **list, char *err, size_t errlen);

/* The CURLOPT_XFERINFOFUNCTION of a client with an abort_flag (userdata: the client): non-zero
 * aborts the transfer. libcurl calls it at least once a second. */
int sdk_abort_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow);

/* The one libcurl setup of the SDK: resets c's handle (its connections stay cached) and sets what
 * every transfer shares: url, http/https only, no redirects, no signals, c's connect timeout, CA
 * file and abort flag, TCP keep-alive, the User-Agent, c->curl_err as the error buffer, `headers`
 * (borrowed until sdk_curl_unhook) and the body callback. The caller adds its own (timeouts,
 * method). ROOST_OK, or ROOST_ENOMEM / ROOST_EINTERNAL recorded on c. */
int sdk_curl_setup(struct roost_client *c, const char *url, struct curl_slist *headers,
                   curl_write_callback on_write, void *write_data);
/* ROOST_OK for CURLE_OK, else records the libcurl failure of a setopt on c and returns its rc. */
int sdk_curl_check(struct roost_client *c, CURLcode cc);
/* After a transfer: the handle forgets the caller's header list and error buffer. */
void sdk_curl_unhook(struct roost_client *c);
/* Appends "Authorization: Bearer <token>" when c has a token (the temporary line is wiped),
 * after asking the token callback, if any, for the current token (sdk_token_refresh).
 * ROOST_OK, or ROOST_ENOMEM or ROOST_EUNAUTHENTICATED recorded on c (*list is unchanged then). */
int sdk_append_auth(struct roost_client *c, struct curl_slist **list);
/* Records a non-2xx answer (its body in c->resp) as the last call's error through
 * sdk_error_from_response: errcode, errmsg, oldest_cursor. Returns the mapped rc. */
int sdk_fail_answer(struct roost_client *c, int status);

/* Clears the details of the previous call. */
void sdk_reset(struct roost_client *c);
/* Records a client-side error (errcode = roost_err_code(rc), errmsg formatted) and returns rc. */
int sdk_fail(struct roost_client *c, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same for calls that report into the caller's buffer instead of a client (token minting,
 * device logins): the message goes to errbuf (when given, cut to errlen); returns rc. */
int sdk_errbuf_fail(char *errbuf, size_t errlen, int rc, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The mapping of an HTTP status alone (no usable error body) to an rc. */
int sdk_rc_from_status(int status);

/* Details extracted from an error answer. */
struct sdk_error {
    int rc;
    char code[64];
    char message[512];
    int64_t oldest_cursor; /* -1 unless present */
};
/* Maps a non-2xx answer: {"error":{"code","message",...}} through roost_err_from_code(), falling
 * back on sdk_rc_from_status() for an unknown code, a missing or non-JSON body. Never fails. */
void sdk_error_from_response(int status, const char *body, size_t len, struct sdk_error *e);

/* Performs one request: method "GET"/"POST"/..., path relative to the base URL (already
 * escaped), optional body of body_len bytes, wait_s added to the request timeout. On a 2xx answer
 * returns ROOST_OK and, when json_out is not NULL, the parsed body object (new reference; a body
 * that is not a JSON object is ROOST_EPROTO). Other answers and failures return the mapped rc
 * with the client's error details set. */
int sdk_request(struct roost_client *c, const char *method, const char *path, const char *body,
                size_t body_len, int wait_s, json_t **json_out);
/* Same, with a JSON body built by the caller (borrowed; NULL: empty body). */
int sdk_request_json(struct roost_client *c, const char *method, const char *path,
                     const json_t *body, int wait_s, json_t **json_out);

/* Records the failure of sdk_path_agent / sdk_path_event with a message; returns rc. */
int sdk_path_fail(struct roost_client *c, int rc);
/* Records an answer without the documented shape (ROOST_EPROTO; rc ROOST_ENOMEM is kept). */
int sdk_shape_fail(struct roost_client *c, int rc, const char *what);
/* json_object_set_new that also fails on a NULL value (a failed json_string/json_integer). */
bool sdk_put(json_t *obj, const char *key, json_t *value);

/* Parses JSON text that must be an object (payload, state_patch, publish bodies). ROOST_OK and a
 * new reference, or ROOST_EJSON / ROOST_EJSONDEPTH / ROOST_EBODY / ROOST_ENOMEM. */
int sdk_parse_object(const char *text, json_t **out);

/* Converts one event object. ROOST_EPROTO when it is not an object or lacks event_id. */
int sdk_event_from_json(const json_t *obj, struct roost_event **out);
/* Converts the array under key "events" of `resp` into a new list (other fields left 0). */
int sdk_events_from_response(const json_t *resp, struct roost_events **out);
void sdk_event_free(struct roost_event *ev);
/* Converts the array under key "agents" (and the "next" page token) into a new list. */
int sdk_agents_from_response(const json_t *resp, struct roost_agents **out);

/* Compact JSON text of v with reals printed as short as still reads back exactly (caller frees).
 * NULL on ENOMEM. */
char *sdk_json_dump(const json_t *v);

/* String copy of an optional JSON string member: NULL when absent or null, ROOST_EPROTO when it
 * has another type. */
int sdk_dup_string_member(const json_t *obj, const char *key, char **out);
/* Heap copy (NULL stays NULL). */
char *sdk_strdup(const char *s);

#endif
