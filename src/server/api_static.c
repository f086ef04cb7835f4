/* SPDX-License-Identifier: MIT */
/* GET/HEAD of the embedded static files (static_files.h): /sdk/roost.js and the dashboard under
 * /ui. No authentication (they hold no data; the dashboard asks for a token itself). Each answer
 * carries a strong ETag and must be revalidated (If-None-Match → 304), so a new roostd's files
 * are picked up at once; the dashboard gets a Content-Security-Policy that allows only its own
 * origin. */
#include <event2/buffer.h>
#include <event2/http.h>
#include <stdbool.h>
#include <string.h>

#include "server/api.h"
#include "server/request.h"
#include "server/static_files.h"

/* Last: poisons unsafe functions for this file only. */
#include "common/banned.h"

/* The dashboard talks only to the roostd that served it; nothing inline, nothing framed. */
#define UI_CSP                                                                                     \
    "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "              \
    "connect-src 'self'; worker-src 'self'; base-uri 'none'; form-action 'none'; "                 \
    "frame-ancestors 'none'"

static const struct static_file *find_file(const char *path)
{
    /* /ui and /ui/ are the dashboard's page. */
    if (strcmp(path, "/ui") == 0 || strcmp(path, "/ui/") == 0) {
        path = "/ui/index.html";
    }
    for (size_t i = 0; i < static_files_count; i++) {
        if (strcmp(static_files[i].path, path) == 0) {
            return &static_files[i];
        }
    }
    return NULL;
}

/* True when an If-None-Match list names `etag` (or is "*"). */
static bool etag_matches(const char *inm, const char *etag)
{
    size_t n = strlen(etag);
    for (const char *p = inm; p && *p;) {
        while (*p == ' ' || *p == ',' || *p == '\t') {
            p++;
        }
        if (*p == '*') {
            return true;
        }
        if (strncmp(p, "W/", 2) == 0) {
            p += 2; /* weak comparison (RFC 9110 13.1.2) */
        }
        if (strncmp(p, etag, n) == 0 && (p[n] == '\0' || p[n] == ',' || p[n] == ' ')) {
            return true;
        }
        p = strchr(p, ',');
    }
    return false;
}

void api_static(struct request *rq)
{
    enum evhttp_cmd_type method = evhttp_request_get_command(rq->req);
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(rq->req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    const struct static_file *f = path ? find_file(path) : NULL;
    if (f == NULL) {
        request_reply_error(rq, ROOST_ENOTFOUND, NULL, NULL);
        return;
    }
    if (method != EVHTTP_REQ_GET && method != EVHTTP_REQ_HEAD) {
        request_reply_error(rq, ROOST_EMETHOD, NULL, NULL);
        return;
    }
    struct evkeyvalq *out = evhttp_request_get_output_headers(rq->req);
    evhttp_add_header(out, "ETag", f->etag);
    evhttp_add_header(out, "Cache-Control", "no-cache");
    evhttp_add_header(out, "X-Content-Type-Options", "nosniff");
    evhttp_add_header(out, "X-Roost-Version", ROOST_VERSION);
    if (strncmp(f->path, "/ui/", 4) == 0) {
        evhttp_add_header(out, "Content-Security-Policy", UI_CSP);
        evhttp_add_header(out, "Referrer-Policy", "no-referrer");
    } else {
        /* roost.js may be imported by a web app on another origin: any origin, unless the
         * router already echoed a listed one (http.cors_origins; two would void both). */
        if (evhttp_find_header(out, "Access-Control-Allow-Origin") == NULL) {
            evhttp_add_header(out, "Access-Control-Allow-Origin", "*");
        }
    }
    const char *inm =
        evhttp_find_header(evhttp_request_get_input_headers(rq->req), "If-None-Match");
    struct evbuffer *body = evbuffer_new();
    if (body == NULL) {
        request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
        return;
    }
    int status = 304;
    if (inm == NULL || !etag_matches(inm, f->etag)) {
        status = 200;
        /* evhttp 2.1 would send a HEAD answer's body: only GET gets one. */
        if (method == EVHTTP_REQ_GET &&
            evbuffer_add_reference(body, f->data, f->len, NULL, NULL) != 0) {
            evbuffer_free(body);
            request_reply_error(rq, ROOST_ENOMEM, NULL, NULL);
            return;
        }
    }
    request_reply_buffer(rq, status, f->content_type, body);
    evbuffer_free(body);
}
