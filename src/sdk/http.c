/* SPDX-License-Identifier: MIT */
/* The HTTP transport of libroost: one reusable libcurl easy handle per client (keep-alive),
 * bounded response buffering, and the mapping of answers to roost_rc through the error table.
 *
 *   2xx                      → ROOST_OK (+ parsed JSON object when asked for)
 *   4xx/5xx {"error":{...}}  → roost_err_from_code(error.code), falling back on the status
 *   no answer                → ROOST_ECONNECT (errmsg carries libcurl's reason)
 */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/jsonutil.h"
#include "sdk/sdk.h"

#include "common/banned.h"

int sdk_rc_from_status(int status)
{
    switch (status) {
    case 400:
        return ROOST_EINVAL;
    case 401:
        return ROOST_EUNAUTHENTICATED;
    case 403:
        return ROOST_EFORBIDDEN;
    case 404:
        return ROOST_ENOTFOUND;
    case 405:
        return ROOST_EMETHOD;
    case 409:
        return ROOST_ESTATE;
    case 410:
        return ROOST_EGONE;
    case 413:
        return ROOST_ETOOLARGE;
    case 415:
        return ROOST_EMEDIATYPE;
    case 429:
        return ROOST_ERATELIMIT;
    case 502:
    case 503:
    case 504:
        return ROOST_EUNAVAILABLE;
    default:
        return status >= 500 && status <= 599 ? ROOST_EINTERNAL : ROOST_EPROTO;
    }
}

/* Copies at most len bytes of src (a JSON string, a header value; fewer at a NUL) into a fixed
 * buffer, cut to fit, replacing control characters so that a hostile server cannot write escape
 * sequences to a terminal through an error message or a header. */
static void copy_printable(char *dst, size_t dstlen, const char *src, size_t len)
{
    size_t o = 0;
    for (size_t i = 0; i < len && src[i] != '\0' && o + 1 < dstlen; i++) {
        unsigned char ch = (unsigned char)src[i];
        dst[o++] = (ch < 0x20 || ch == 0x7f) ? '?' : (char)ch;
    }
    dst[o] = '\0';
}

void sdk_error_from_response(int status, const char *body, size_t len, struct sdk_error *e)
{
    e->rc = sdk_rc_from_status(status);
    snprintf(e->code, sizeof e->code, "%s", roost_err_code(e->rc));
    snprintf(e->message, sizeof e->message, "HTTP %d", status);
    e->oldest_cursor = -1;

    json_t *doc = NULL;
    if (body == NULL || len == 0 ||
        jsonutil_parse_object(body, len, SDK_MAX_JSON_DEPTH, &doc) != ROOST_OK) {
        return;
    }
    json_t *err = json_object_get(doc, "error");
    if (json_is_object(err)) {
        const char *code = json_string_value(json_object_get(err, "code"));
        const char *msg = json_string_value(json_object_get(err, "message"));
        if (code != NULL) {
            int rc = roost_err_from_code(code);
            /* A code this SDK does not know (a newer server) keeps the status mapping, but the
             * server's code text is still reported. */
            if (rc != ROOST_EPROTO || strcmp(code, roost_err_code(ROOST_EPROTO)) == 0) {
                e->rc = rc;
            }
            copy_printable(e->code, sizeof e->code, code, strlen(code));
        }
        if (msg != NULL) {
            copy_printable(e->message, sizeof e->message, msg, strlen(msg));
        }
        json_t *oc = json_object_get(err, "oldest_cursor");
        if (json_is_integer(oc) && json_integer_value(oc) >= 0) {
            e->oldest_cursor = json_integer_value(oc);
        }
    }
    json_decref(doc);
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct roost_client *c = userdata;
    size_t n = size * nmemb;
    dynbuf_add(&c->resp, ptr, n);
    /* 0 aborts the transfer with CURLE_WRITE_ERROR; map_curl_error tells the limit from ENOMEM. */
    return c->resp.err == DYNBUF_OK ? n : 0;
}

/* Is the header line `line` (len bytes) the field `name`? Then *value points at its trimmed value
 * and *vlen is its length. */
static bool header_is(const char *line, size_t len, const char *name, const char **value,
                      size_t *vlen)
{
    size_t nlen = strlen(name);
    if (len <= nlen || line[nlen] != ':' || strncasecmp(line, name, nlen) != 0) {
        return false;
    }
    const char *v = line + nlen + 1;
    const char *end = line + len;
    while (v < end && (*v == ' ' || *v == '\t')) {
        v++;
    }
    while (end > v && (end[-1] == '\r' || end[-1] == '\n' || end[-1] == ' ' || end[-1] == '\t')) {
        end--;
    }
    *value = v;
    *vlen = (size_t)(end - v);
    return true;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct roost_client *c = userdata;
    size_t n = size * nmemb;
    const char *v;
    size_t vlen;
    if (n >= 5 && memcmp(ptr, "HTTP/", 5) == 0) {
        /* A new response (after 100 Continue, say): forget the previous one's headers. */
        c->request_id[0] = '\0';
        c->server_version[0] = '\0';
        c->retry_after_s = -1;
    } else if (header_is(ptr, n, "X-Roost-Version", &v, &vlen)) {
        copy_printable(c->server_version, sizeof c->server_version, v, vlen);
    } else if (header_is(ptr, n, "X-Request-Id", &v, &vlen)) {
        copy_printable(c->request_id, sizeof c->request_id, v, vlen);
    } else if (header_is(ptr, n, "Retry-After", &v, &vlen)) {
        /* Only the delta-seconds form; an HTTP-date is left as "unknown". */
        int64_t secs = 0;
        size_t i = 0;
        for (; i < vlen && i < 10 && v[i] >= '0' && v[i] <= '9'; i++) {
            secs = secs * 10 + (v[i] - '0');
        }
        if (i > 0 && i == vlen) {
            c->retry_after_s = secs;
        }
    }
    return n;
}

/* libcurl calls this at least once a second during a transfer. */
int sdk_abort_progress(void *userdata, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                       curl_off_t ulnow)
{
    (void)dltotal;
    (void)dlnow;
    (void)ultotal;
    (void)ulnow;
    const struct roost_client *c = userdata;
    return c->abort_flag != NULL && atomic_load(c->abort_flag) != 0;
}

static int map_curl_error(struct roost_client *c, CURLcode cc, const char *url)
{
    const char *why = c->curl_err[0] != '\0' ? c->curl_err : curl_easy_strerror(cc);
    switch (cc) {
    case CURLE_WRITE_ERROR:
    case CURLE_FILESIZE_EXCEEDED:
        if (c->resp.err == DYNBUF_ELIMIT || cc == CURLE_FILESIZE_EXCEEDED) {
            return sdk_fail(c, ROOST_EPROTO, "the response from %s exceeds %zu bytes", url,
                            c->max_response_bytes);
        }
        return sdk_fail(c, ROOST_ENOMEM, "out of memory reading the response from %s", url);
    case CURLE_OUT_OF_MEMORY:
        return sdk_fail(c, ROOST_ENOMEM, "out of memory");
    case CURLE_URL_MALFORMAT:
    case CURLE_UNSUPPORTED_PROTOCOL:
        return sdk_fail(c, ROOST_EINVAL, "bad server URL %s: %s", url, why);
    case CURLE_OPERATION_TIMEDOUT:
        return sdk_fail(c, ROOST_ECONNECT, "%s timed out: %s", url, why);
    case CURLE_ABORTED_BY_CALLBACK:
        return sdk_fail(c, ROOST_ECONNECT, "%s: aborted (stopping)", url);
    default:
        return sdk_fail(c, ROOST_ECONNECT, "cannot reach %s: %s", url, why);
    }
}

int sdk_curl_setup(struct roost_client *c, const char *url, struct curl_slist *headers,
                   curl_write_callback on_write, void *write_data)
{
    CURL *h = c->curl;
    /* Reset drops the previous transfer's options but keeps the connection cache. */
    curl_easy_reset(h);
    CURLcode cc = CURLE_OK;
#define SET(opt, val)                                                                              \
    do {                                                                                           \
        if (cc == CURLE_OK) {                                                                      \
            cc = curl_easy_setopt(h, opt, val);                                                    \
        }                                                                                          \
    } while (0)
    SET(CURLOPT_URL, url);
    SET(CURLOPT_NOSIGNAL, 1L);
#if LIBCURL_VERSION_NUM >= 0x075500
    SET(CURLOPT_PROTOCOLS_STR, "http,https");
#else
    SET(CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
    SET(CURLOPT_FOLLOWLOCATION, 0L);
    SET(CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
    SET(CURLOPT_TCP_KEEPALIVE, 1L);
    SET(CURLOPT_USERAGENT, "libroost/" ROOST_VERSION);
    SET(CURLOPT_ERRORBUFFER, c->curl_err);
    SET(CURLOPT_WRITEFUNCTION, on_write);
    SET(CURLOPT_WRITEDATA, write_data);
    SET(CURLOPT_HTTPHEADER, headers);
    if (c->ca_file != NULL) {
        SET(CURLOPT_CAINFO, c->ca_file);
    }
    if (c->abort_flag != NULL) {
        SET(CURLOPT_NOPROGRESS, 0L);
        SET(CURLOPT_XFERINFOFUNCTION, sdk_abort_progress);
        SET(CURLOPT_XFERINFODATA, c);
    }
#undef SET
    return sdk_curl_check(c, cc);
}

int sdk_curl_check(struct roost_client *c, CURLcode cc)
{
    if (cc != CURLE_OK) {
        return sdk_fail(c, cc == CURLE_OUT_OF_MEMORY ? ROOST_ENOMEM : ROOST_EINTERNAL,
                        "libcurl: %s", curl_easy_strerror(cc));
    }
    return ROOST_OK;
}

void sdk_curl_unhook(struct roost_client *c)
{
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, NULL);
}

/* The request options on top of sdk_curl_setup: overall timeout, headers, size cap, method. */
static int setup_handle(struct roost_client *c, const char *method, const char *url,
                        const char *body, size_t body_len, int wait_s, struct curl_slist *headers)
{
    int rc = sdk_curl_setup(c, url, headers, on_body, c);
    if (rc != ROOST_OK) {
        return rc;
    }
    CURL *h = c->curl;
    long timeout_ms = c->request_timeout_ms;
    if (wait_s > 0) {
        timeout_ms += (long)wait_s * 1000L;
    }
    CURLcode cc = CURLE_OK;
#define SET(opt, val)                                                                              \
    do {                                                                                           \
        if (cc == CURLE_OK) {                                                                      \
            cc = curl_easy_setopt(h, opt, val);                                                    \
        }                                                                                          \
    } while (0)
    SET(CURLOPT_TIMEOUT_MS, timeout_ms);
    SET(CURLOPT_HEADERFUNCTION, on_header);
    SET(CURLOPT_HEADERDATA, c);
    SET(CURLOPT_MAXFILESIZE_LARGE, (curl_off_t)c->max_response_bytes);
    if (strcmp(method, "GET") == 0) {
        SET(CURLOPT_HTTPGET, 1L);
    } else {
        if (strcmp(method, "POST") == 0) {
            SET(CURLOPT_POST, 1L);
        } else {
            SET(CURLOPT_CUSTOMREQUEST, method);
        }
        /* POSTFIELDS is not copied: body outlives the transfer (it is the caller's). */
        SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body != NULL ? body_len : 0));
        SET(CURLOPT_POSTFIELDS, body != NULL ? body : "");
    }
#undef SET
    return sdk_curl_check(c, cc);
}

int sdk_append_auth(struct roost_client *c, struct curl_slist **list)
{
    int rc = sdk_token_refresh(c); /* before the signature too, which covers the token */
    if (rc != ROOST_OK) {
        return rc;
    }
    if (c->token == NULL) {
        return ROOST_OK;
    }
    /* The line holds the token: built in a buffer wiped right after libcurl copied it. */
    size_t n = strlen(c->token) + sizeof "Authorization: Bearer ";
    char *line = malloc(n);
    if (line == NULL) {
        return sdk_fail(c, ROOST_ENOMEM, "out of memory");
    }
    snprintf(line, n, "Authorization: Bearer %s", c->token);
    struct curl_slist *next = curl_slist_append(*list, line);
    OPENSSL_cleanse(line, n);
    free(line);
    if (next == NULL) {
        return sdk_fail(c, ROOST_ENOMEM, "out of memory");
    }
    *list = next;
    return ROOST_OK;
}

int sdk_fail_answer(struct roost_client *c, int status)
{
    struct sdk_error e;
    sdk_error_from_response(status, c->resp.s, c->resp.len, &e);
    c->oldest_cursor = e.oldest_cursor;
    snprintf(c->errcode, sizeof c->errcode, "%s", e.code);
    snprintf(c->errmsg, sizeof c->errmsg, "%s", e.message);
    return e.rc;
}

/* Builds the request headers (Accept, Content-Type, Authorization). */
static int build_headers(struct roost_client *c, bool has_body, struct curl_slist **out)
{
    struct curl_slist *list = NULL, *next;
    *out = NULL;
#define ADD(line)                                                                                  \
    do {                                                                                           \
        next = curl_slist_append(list, line);                                                      \
        if (next == NULL) {                                                                        \
            goto oom;                                                                              \
        }                                                                                          \
        list = next;                                                                               \
    } while (0)
    ADD("Accept: application/json");
    /* No "Expect: 100-continue" round trip for larger bodies. */
    ADD("Expect:");
    if (has_body) {
        ADD("Content-Type: application/json");
    }
#undef ADD
    int rc = sdk_append_auth(c, &list);
    if (rc != ROOST_OK) {
        curl_slist_free_all(list);
        return rc;
    }
    *out = list;
    return ROOST_OK;
oom:
    curl_slist_free_all(list);
    return sdk_fail(c, ROOST_ENOMEM, "out of memory");
}

int sdk_request(struct roost_client *c, const char *method, const char *path, const char *body,
                size_t body_len, int wait_s, json_t **json_out)
{
    if (json_out != NULL) {
        *json_out = NULL;
    }
    sdk_reset(c);
    struct curl_slist *headers = NULL;
    struct dynbuf url;
    dynbuf_init(&url, SDK_MAX_URL_BYTES * 4);
    dynbuf_adds(&url, c->base_url);
    dynbuf_adds(&url, path);
    int rc = sdk_buf_rc(&url);
    if (rc != ROOST_OK) {
        rc = sdk_fail(c, rc, rc == ROOST_ENOMEM ? "out of memory" : "request URL too long");
        goto out;
    }
    rc = build_headers(c, body != NULL, &headers);
    if (rc != ROOST_OK) {
        goto out;
    }
    if (c->signer != NULL) {
        char err[256];
        rc = sdk_signer_headers(c->signer, method, url.s, c->token, body, body_len, &headers, err,
                                sizeof err);
        if (rc != ROOST_OK) {
            rc = sdk_fail(c, rc, "%s", err);
            goto out;
        }
    }
    rc = setup_handle(c, method, url.s, body, body_len, wait_s, headers);
    if (rc != ROOST_OK) {
        goto out;
    }
    CURLcode cc = curl_easy_perform(c->curl);
    long status = 0;
    curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
    sdk_curl_unhook(c);
    if (cc != CURLE_OK) {
        rc = map_curl_error(c, cc, url.s);
        goto out;
    }
    c->http_status = (int)status;
    if (status < 200 || status > 299) {
        rc = sdk_fail_answer(c, (int)status);
        goto out;
    }
    if (json_out != NULL) {
        int prc = c->resp.len == 0
                      ? ROOST_EBODY
                      : jsonutil_parse_object(c->resp.s, c->resp.len, SDK_MAX_JSON_DEPTH, json_out);
        if (prc == ROOST_ENOMEM) {
            rc = sdk_fail(c, ROOST_ENOMEM, "out of memory parsing the response");
        } else if (prc != ROOST_OK) {
            rc = sdk_fail(c, ROOST_EPROTO,
                          "%s %s answered HTTP %ld with a body that is not a "
                          "JSON object",
                          method, path, status);
        }
    }
out:
    curl_slist_free_all(headers);
    dynbuf_cleanup(&url);
    return rc;
}

int sdk_request_json(struct roost_client *c, const char *method, const char *path,
                     const json_t *body, int wait_s, json_t **json_out)
{
    if (body == NULL) {
        return sdk_request(c, method, path, NULL, 0, wait_s, json_out);
    }
    char *text = sdk_json_dump(body);
    if (text == NULL) {
        if (json_out != NULL) {
            *json_out = NULL;
        }
        sdk_reset(c);
        return sdk_fail(c, ROOST_ENOMEM, "out of memory");
    }
    int rc = sdk_request(c, method, path, text, strlen(text), wait_s, json_out);
    free(text);
    return rc;
}

int sdk_parse_object(const char *text, json_t **out)
{
    return jsonutil_parse_object(text, strlen(text), SDK_MAX_JSON_DEPTH, out);
}

/* Reports a failure to build a path (bad agent or event id, over-long input, ENOMEM). */
int sdk_path_fail(struct roost_client *c, int rc)
{
    switch (rc) {
    case ROOST_EAGENTID:
        return sdk_fail(c, rc, "%s", roost_strerror(rc));
    case ROOST_EEVENTID:
        return sdk_fail(c, rc, "event_id must be a non-empty string of at most %d bytes",
                        SDK_MAX_ID_BYTES);
    case ROOST_ENOMEM:
        return sdk_fail(c, rc, "out of memory");
    default:
        return sdk_fail(c, rc, "request path too long");
    }
}

/* Reports a response that parsed as JSON but does not have the documented shape. */
int sdk_shape_fail(struct roost_client *c, int rc, const char *what)
{
    if (rc == ROOST_ENOMEM) {
        return sdk_fail(c, rc, "out of memory");
    }
    return sdk_fail(c, ROOST_EPROTO, "unexpected answer to %s (HTTP %d)", what, c->http_status);
}

/* Sets a key to a new JSON value, failing on ENOMEM (json_object_set_new steals the value even
 * on failure). */
bool sdk_put(json_t *obj, const char *key, json_t *value)
{
    return value != NULL && json_object_set_new(obj, key, value) == 0;
}
