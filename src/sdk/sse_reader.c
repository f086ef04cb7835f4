/* SPDX-License-Identifier: MIT */
/* The SSE wake-up stream reader shared by roost_subscribe() and the agent loop: request headers
 * (bearer token wiped after use, a fresh signature per connection), the libcurl streaming
 * options, the write callback that tells a stream from an error answer, and the rc of the end. */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sdk/sdk.h"
#include "sdk/sse_reader.h"

#include "common/banned.h"

/* One read: what the write callback learns about the answer. */
struct read_ctx {
    struct sdk_sse_reader *r;
    struct roost_client *c;
    bool checked; /* the status was looked at */
    bool stream;  /* 200: the body is the stream */
    bool stopped; /* on_ping asked to stop */
};

static int on_event(void *arg, const struct sse_event *ev)
{
    struct read_ctx *x = arg;
    int64_t hint = -1;
    json_error_t err;
    json_t *j = json_loadb(ev->data, ev->data_len, 0, &err);
    json_t *h = json_object_get(j, "cursor_hint");
    if (json_is_integer(h)) {
        hint = (int64_t)json_integer_value(h);
    }
    json_decref(j);
    if (x->r->on_ping(ev->event, hint, x->r->ctx) != 0) {
        x->stopped = true;
        return 1;
    }
    return 0;
}

/* Keeps a bounded part of an error answer's body for sdk_error_from_response. */
static size_t keep_error_body(struct roost_client *c, const char *ptr, size_t n)
{
    size_t room = SDK_SSE_MAX_ERROR_BODY > c->resp_len ? SDK_SSE_MAX_ERROR_BODY - c->resp_len : 0;
    size_t take = n < room ? n : room;
    if (c->resp_len + take + 1 > c->resp_cap) {
        char *p = realloc(c->resp, c->resp_len + take + 1);
        if (p == NULL) {
            return 0;
        }
        c->resp = p;
        c->resp_cap = c->resp_len + take + 1;
    }
    memcpy(c->resp + c->resp_len, ptr, take);
    c->resp_len += take;
    c->resp[c->resp_len] = '\0';
    return n;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct read_ctx *x = userdata;
    struct roost_client *c = x->c;
    size_t n = size * nmemb;
    if (!x->checked) {
        long status = 0;
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
        c->http_status = (int)status;
        x->checked = true;
        x->stream = status == 200;
        if (x->stream) {
            x->r->opened = true;
            if (x->r->on_open != NULL) {
                x->r->on_open(x->r->ctx);
            }
        }
    }
    if (!x->stream) {
        return keep_error_body(c, ptr, n);
    }
    return sse_parser_feed(&x->r->parser, ptr, n, on_event, x) == SSE_OK ? n : 0;
}

void sdk_sse_reader_init(struct sdk_sse_reader *r, roost_ping_fn on_ping,
                         void (*on_open)(void *ctx), void *ctx)
{
    memset(r, 0, sizeof *r);
    r->on_ping = on_ping;
    r->on_open = on_open;
    r->ctx = ctx;
    r->idle_timeout_s = SDK_SSE_IDLE_TIMEOUT_S;
    sse_parser_init(&r->parser, 0, SDK_SSE_MAX_EVENT_BYTES);
}

void sdk_sse_reader_cleanup(struct sdk_sse_reader *r)
{
    sse_parser_cleanup(&r->parser);
}

/* Accept, Authorization (built in a buffer wiped afterwards) and, with a signing key, the
 * signature headers; a nonce is good for one request only, so every connection signs afresh. */
static int build_headers(struct roost_client *c, const char *url, struct curl_slist **out)
{
    struct curl_slist *hdrs = NULL, *next;
    struct sdk_str auth;
    sdk_str_init(&auth, SDK_MAX_TOKEN_BYTES + 64);
    int rc = ROOST_OK;
    sdk_token_refresh(c);
    if ((hdrs = curl_slist_append(NULL, "Accept: text/event-stream")) == NULL) {
        rc = sdk_fail(c, ROOST_ENOMEM, "out of memory");
        goto out;
    }
    if (c->token != NULL) {
        sdk_str_appendf(&auth, "Authorization: Bearer %s", c->token);
        if (auth.rc != ROOST_OK || (next = curl_slist_append(hdrs, auth.data)) == NULL) {
            rc = sdk_fail(c, ROOST_ENOMEM, "out of memory");
            goto out;
        }
        hdrs = next;
    }
    if (c->signer != NULL) {
        char err[256];
        rc = sdk_signer_headers(c->signer, "GET", url, c->token, NULL, 0, &hdrs, err, sizeof err);
        if (rc != ROOST_OK) {
            rc = sdk_fail(c, rc, "%s", err);
        }
    }
out:
    if (auth.data != NULL) {
        OPENSSL_cleanse(auth.data, auth.len);
    }
    sdk_str_cleanup(&auth);
    if (rc != ROOST_OK) {
        curl_slist_free_all(hdrs);
        hdrs = NULL;
    }
    *out = hdrs;
    return rc;
}

static void setup_handle(struct sdk_sse_reader *r, struct roost_client *c, const char *url,
                         struct curl_slist *hdrs, struct read_ctx *x)
{
    CURL *h = c->curl;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    /* No overall timeout: a stream is open-ended. A silent one (no heartbeat) is dead. */
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, r->idle_timeout_s);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "libroost/" ROOST_VERSION);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->curl_err);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
    if (c->ca_file != NULL) {
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    }
    if (c->abort_flag != NULL) {
        curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, sdk_abort_progress);
        curl_easy_setopt(h, CURLOPT_XFERINFODATA, c);
    }
}

int sdk_sse_reader_read(struct sdk_sse_reader *r, struct roost_client *c, const char *agent_id)
{
    sdk_reset(c);
    r->sent = false;
    r->opened = false;
    struct sdk_str url;
    sdk_str_init(&url, SDK_MAX_URL_BYTES * 4);
    struct curl_slist *hdrs = NULL;
    struct read_ctx x = {.r = r, .c = c};
    sdk_str_appendz(&url, c->base_url);
    int rc = sdk_path_agent(&url, agent_id, "/subscribe");
    if (rc != ROOST_OK || (rc = url.rc) != ROOST_OK) {
        rc = sdk_path_fail(c, rc);
        goto out;
    }
    if ((rc = build_headers(c, url.data, &hdrs)) != ROOST_OK) {
        goto out;
    }
    /* A new connection is a new stream for the parser (it keeps the last id and retry:). */
    sse_parser_reset_stream(&r->parser);
    setup_handle(r, c, url.data, hdrs, &x);
    r->sent = true;
    CURLcode cc = curl_easy_perform(c->curl);
    /* The options point at our stack and heap: nothing may dangle into the next call. */
    curl_easy_setopt(c->curl, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(c->curl, CURLOPT_ERRORBUFFER, NULL);
    if (!x.checked) {
        /* No body arrived: the status alone still tells an error answer from a closed stream. */
        long status = 0;
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
        c->http_status = (int)status;
        x.checked = status != 0;
        x.stream = status == 200;
    }
    if (x.stopped) {
        rc = ROOST_OK;
    } else if (x.checked && !x.stream) {
        struct sdk_error e;
        sdk_error_from_response(c->http_status, c->resp, c->resp_len, &e);
        snprintf(c->errcode, sizeof c->errcode, "%s", e.code);
        snprintf(c->errmsg, sizeof c->errmsg, "%s", e.message);
        rc = e.rc;
    } else if (r->parser.error != SSE_OK) {
        rc = sdk_fail(c, ROOST_EPROTO, "the event stream broke the SSE limits");
    } else if (cc == CURLE_ABORTED_BY_CALLBACK) {
        rc = sdk_fail(c, ROOST_ECONNECT, "the event stream was aborted (stopping)");
    } else {
        rc = sdk_fail(c, ROOST_ECONNECT, "the event stream ended: %s",
                      cc == CURLE_OK ? "closed by the server" : curl_easy_strerror(cc));
    }
out:
    curl_slist_free_all(hdrs);
    sdk_str_cleanup(&url);
    return rc;
}
