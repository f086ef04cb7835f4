/* SPDX-License-Identifier: MIT */
/* The SSE wake-up stream reader shared by roost_subscribe() and the agent loop: request headers
 * (bearer token wiped after use, a fresh signature per connection), the libcurl streaming
 * options, the write callback that tells a stream from an error answer, and the rc of the end. */
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
    size_t keep = SDK_SSE_MAX_ERROR_BODY < c->resp.max ? SDK_SSE_MAX_ERROR_BODY : c->resp.max;
    size_t room = keep > c->resp.len ? keep - c->resp.len : 0;
    dynbuf_add(&c->resp, ptr, n < room ? n : room);
    /* The rest is read and dropped; only a failed allocation ends the transfer. */
    return c->resp.err == DYNBUF_OK ? n : 0;
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

/* Accept, Authorization and, with a signing key, the signature headers; a nonce is good for one
 * request only, so every connection signs afresh. */
static int build_headers(struct roost_client *c, const char *url, struct curl_slist **out)
{
    struct curl_slist *hdrs = curl_slist_append(NULL, "Accept: text/event-stream");
    int rc = hdrs != NULL ? sdk_append_auth(c, &hdrs) : sdk_fail(c, ROOST_ENOMEM, "out of memory");
    if (rc == ROOST_OK && c->signer != NULL) {
        char err[256];
        rc = sdk_signer_headers(c->signer, "GET", url, c->token, NULL, 0, &hdrs, err, sizeof err);
        if (rc != ROOST_OK) {
            rc = sdk_fail(c, rc, "%s", err);
        }
    }
    if (rc != ROOST_OK) {
        curl_slist_free_all(hdrs);
        hdrs = NULL;
    }
    *out = hdrs;
    return rc;
}

/* The streaming options on top of sdk_curl_setup: no overall timeout (a stream is open-ended),
 * but a silent one (no heartbeat) is dead. */
static int setup_handle(struct sdk_sse_reader *r, struct roost_client *c, const char *url,
                        struct curl_slist *hdrs, struct read_ctx *x)
{
    int rc = sdk_curl_setup(c, url, hdrs, on_data, x);
    if (rc != ROOST_OK) {
        return rc;
    }
    CURLcode cc = curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
    if (cc == CURLE_OK) {
        cc = curl_easy_setopt(c->curl, CURLOPT_LOW_SPEED_TIME, r->idle_timeout_s);
    }
    return sdk_curl_check(c, cc);
}

int sdk_sse_reader_read(struct sdk_sse_reader *r, struct roost_client *c, const char *agent_id)
{
    sdk_reset(c);
    r->sent = false;
    r->opened = false;
    struct dynbuf url;
    dynbuf_init(&url, SDK_MAX_URL_BYTES * 4);
    struct curl_slist *hdrs = NULL;
    struct read_ctx x = {.r = r, .c = c};
    dynbuf_adds(&url, c->base_url);
    int rc = sdk_path_agent(&url, agent_id, "/subscribe");
    if (rc != ROOST_OK || (rc = sdk_buf_rc(&url)) != ROOST_OK) {
        rc = sdk_path_fail(c, rc);
        goto out;
    }
    if ((rc = build_headers(c, url.s, &hdrs)) != ROOST_OK) {
        goto out;
    }
    /* A new connection is a new stream for the parser (it keeps the last id and retry:). */
    sse_parser_reset_stream(&r->parser);
    if ((rc = setup_handle(r, c, url.s, hdrs, &x)) != ROOST_OK) {
        goto out;
    }
    r->sent = true;
    CURLcode cc = curl_easy_perform(c->curl);
    sdk_curl_unhook(c);
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
        rc = sdk_fail_answer(c, c->http_status);
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
    dynbuf_cleanup(&url);
    return rc;
}
