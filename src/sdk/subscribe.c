/* SPDX-License-Identifier: MIT */
/* roost_subscribe: the SSE wake-up stream of one agent as a blocking call with a callback per
 * ping, on the client's own connection (libcurl write callback → src/proto/sse.c parser). */
#include <openssl/crypto.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/sse.h"
#include "sdk/sdk.h"

#include "common/banned.h"

/* An error answer's body is kept up to this size for the error mapping. */
#define SUB_MAX_ERROR_BODY 16384

struct sub_ctx {
    struct roost_client *c;
    roost_ping_fn on_ping;
    void *ctx;
    struct sse_parser parser;
    bool checked; /* the status was looked at */
    bool stream;  /* 200: the body is the stream */
    bool stopped; /* the callback asked to stop */
};

static int on_event(void *arg, const struct sse_event *ev)
{
    struct sub_ctx *x = arg;
    int64_t hint = -1;
    json_error_t err;
    json_t *j = json_loadb(ev->data, ev->data_len, 0, &err);
    json_t *h = json_object_get(j, "cursor_hint");
    if (json_is_integer(h)) {
        hint = (int64_t)json_integer_value(h);
    }
    json_decref(j);
    if (x->on_ping(ev->event, hint, x->ctx) != 0) {
        x->stopped = true;
        return 1;
    }
    return 0;
}

static size_t on_data(char *ptr, size_t size, size_t nmemb, void *userdata)
{
    struct sub_ctx *x = userdata;
    struct roost_client *c = x->c;
    size_t n = size * nmemb;
    if (!x->checked) {
        long status = 0;
        curl_easy_getinfo(c->curl, CURLINFO_RESPONSE_CODE, &status);
        c->http_status = (int)status;
        x->checked = true;
        x->stream = status == 200;
    }
    if (!x->stream) {
        /* Keep (a bounded part of) the error body for sdk_error_from_response. */
        size_t room = SUB_MAX_ERROR_BODY > c->resp_len ? SUB_MAX_ERROR_BODY - c->resp_len : 0;
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
    return sse_parser_feed(&x->parser, ptr, n, on_event, x) == SSE_OK ? n : 0;
}

int roost_subscribe(struct roost_client *c, const char *agent_id, roost_ping_fn on_ping, void *ctx)
{
    if (c == NULL || on_ping == NULL) {
        return ROOST_EINVAL;
    }
    sdk_reset(c);
    struct sdk_str url, auth;
    sdk_str_init(&url, SDK_MAX_URL_BYTES * 4);
    sdk_str_init(&auth, SDK_MAX_TOKEN_BYTES + 64);
    struct curl_slist *hdrs = NULL, *next;
    struct sub_ctx x = {.c = c, .on_ping = on_ping, .ctx = ctx};
    sse_parser_init(&x.parser, 0, 64 * 1024);
    sdk_str_appendz(&url, c->base_url);
    int rc = sdk_path_agent(&url, agent_id, "/subscribe");
    if (rc != ROOST_OK || (rc = url.rc) != ROOST_OK) {
        rc = sdk_path_fail(c, rc);
        goto out;
    }
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
        rc = sdk_signer_headers(c->signer, "GET", url.data, c->token, NULL, 0, &hdrs, err,
                                sizeof err);
        if (rc != ROOST_OK) {
            rc = sdk_fail(c, rc, "%s", err);
            goto out;
        }
    }
    CURL *h = c->curl;
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, url.data);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->connect_timeout_ms);
    curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
    /* No overall timeout: a stream is open-ended. A silent one (no heartbeat) is dead. */
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 75L);
    curl_easy_setopt(h, CURLOPT_USERAGENT, "libroost/" ROOST_VERSION);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, c->curl_err);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_data);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, &x);
    if (c->ca_file != NULL) {
        curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
    }
    CURLcode cc = curl_easy_perform(h);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
    curl_easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
    if (x.stopped) {
        rc = ROOST_OK;
    } else if (x.checked && !x.stream) {
        struct sdk_error e;
        sdk_error_from_response(c->http_status, c->resp, c->resp_len, &e);
        snprintf(c->errcode, sizeof c->errcode, "%s", e.code);
        snprintf(c->errmsg, sizeof c->errmsg, "%s", e.message);
        rc = e.rc;
    } else if (x.parser.error != SSE_OK) {
        rc = sdk_fail(c, ROOST_EPROTO, "the event stream broke the SSE limits");
    } else {
        rc = sdk_fail(c, ROOST_ECONNECT, "the event stream ended: %s",
                      cc == CURLE_OK ? "closed by the server" : curl_easy_strerror(cc));
    }
out:
    curl_slist_free_all(hdrs);
    if (auth.data != NULL) {
        OPENSSL_cleanse(auth.data, auth.len);
    }
    sdk_str_cleanup(&auth);
    sdk_str_cleanup(&url);
    sse_parser_cleanup(&x.parser);
    return rc;
}
