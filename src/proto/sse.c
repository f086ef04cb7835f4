/* SPDX-License-Identifier: MIT */
/* Incremental Server-Sent Events parser (see sse.h): a byte-level line splitter that accepts
 * CRLF, LF and CR in any mix and any split, and the field rules of the WHATWG event stream
 * interpretation. */
#include "proto/sse.h"

#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

void sse_parser_init(struct sse_parser *p, size_t max_line_bytes, size_t max_event_bytes)
{
    memset(p, 0, sizeof *p);
    p->max_line_bytes = max_line_bytes != 0 ? max_line_bytes : SSE_DEFAULT_MAX_LINE_BYTES;
    p->max_event_bytes = max_event_bytes != 0 ? max_event_bytes : SSE_DEFAULT_MAX_EVENT_BYTES;
    p->retry_ms = -1;
}

void sse_parser_cleanup(struct sse_parser *p)
{
    free(p->line.p);
    free(p->data.p);
    free(p->event.p);
    free(p->id.p);
    size_t ml = p->max_line_bytes, me = p->max_event_bytes;
    sse_parser_init(p, ml, me);
}

void sse_parser_reset_stream(struct sse_parser *p)
{
    p->line.len = 0;
    p->data.len = 0;
    p->event.len = 0;
    p->has_data = false;
    p->after_cr = false;
    p->bom_checked = false;
    p->bom_seen = 0;
    p->error = SSE_OK;
}

/* Appends n bytes keeping a NUL after them; fails beyond max bytes of content. */
static int buf_add(struct sse_buf *b, const char *s, size_t n, size_t max, int over_rc)
{
    if (n > max || b->len > max - n) {
        return over_rc;
    }
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap != 0 ? b->cap : 128;
        while (cap < b->len + n + 1) {
            cap *= 2;
        }
        if (cap > max + 1) {
            cap = max + 1;
        }
        char *np = realloc(b->p, cap);
        if (np == NULL) {
            return SSE_ENOMEM;
        }
        b->p = np;
        b->cap = cap;
    }
    if (n > 0) {
        memcpy(b->p + b->len, s, n);
    }
    b->len += n;
    b->p[b->len] = '\0';
    return SSE_OK;
}

static int buf_set(struct sse_buf *b, const char *s, size_t n, size_t max, int over_rc)
{
    b->len = 0;
    return buf_add(b, s, n, max, over_rc);
}

static int dispatch(struct sse_parser *p, sse_event_fn cb, void *ctx)
{
    if (!p->has_data) {
        /* An event without data is not dispatched; its type is forgotten. */
        p->event.len = 0;
        return SSE_OK;
    }
    /* The data buffer holds "line\n" per data field: drop the last newline. */
    if (p->data.len > 0 && p->data.p[p->data.len - 1] == '\n') {
        p->data.len--;
        p->data.p[p->data.len] = '\0';
    }
    struct sse_event ev = {
        .id = p->id.len > 0 ? p->id.p : "",
        .id_len = p->id.len,
        .event = p->event.len > 0 ? p->event.p : "message",
        .event_len = p->event.len > 0 ? p->event.len : 7,
        .data = p->data.p != NULL ? p->data.p : "",
        .data_len = p->data.len,
        .retry_ms = p->retry_ms,
    };
    int stop = cb != NULL ? cb(ctx, &ev) : 0;
    p->data.len = 0;
    p->event.len = 0;
    p->has_data = false;
    return stop != 0 ? SSE_ESTOPPED : SSE_OK;
}

/* Applies one complete line (without its terminator). */
static int process_line(struct sse_parser *p, const char *line, size_t len, sse_event_fn cb,
                        void *ctx)
{
    if (len == 0) {
        return dispatch(p, cb, ctx);
    }
    if (line[0] == ':') {
        return SSE_OK; /* comment */
    }
    const char *colon = memchr(line, ':', len);
    size_t name_len = colon != NULL ? (size_t)(colon - line) : len;
    const char *value = colon != NULL ? colon + 1 : line + len;
    size_t value_len = colon != NULL ? len - name_len - 1 : 0;
    if (value_len > 0 && value[0] == ' ') {
        value++;
        value_len--;
    }
#define FIELD_IS(lit) (name_len == sizeof(lit) - 1 && memcmp(line, lit, name_len) == 0)
    if (FIELD_IS("data")) {
        int rc = buf_add(&p->data, value, value_len, p->max_event_bytes, SSE_EEVENT);
        if (rc == SSE_OK) {
            rc = buf_add(&p->data, "\n", 1, p->max_event_bytes, SSE_EEVENT);
        }
        p->has_data = true;
        return rc;
    }
    if (FIELD_IS("event")) {
        return buf_set(&p->event, value, value_len, p->max_line_bytes, SSE_ELINE);
    }
    if (FIELD_IS("id")) {
        /* An id containing NUL is ignored (spec). */
        if (memchr(value, '\0', value_len) == NULL) {
            return buf_set(&p->id, value, value_len, p->max_line_bytes, SSE_ELINE);
        }
        return SSE_OK;
    }
    if (FIELD_IS("retry")) {
        /* Only ASCII digits; bounded so the value cannot overflow. */
        if (value_len == 0 || value_len > 12) {
            return SSE_OK;
        }
        int64_t v = 0;
        for (size_t i = 0; i < value_len; i++) {
            if (value[i] < '0' || value[i] > '9') {
                return SSE_OK;
            }
            v = v * 10 + (value[i] - '0');
        }
        p->retry_ms = v;
        return SSE_OK;
    }
#undef FIELD_IS
    return SSE_OK; /* unknown field: ignored */
}

int sse_parser_feed(struct sse_parser *p, const char *buf, size_t len, sse_event_fn cb, void *ctx)
{
    if (p->error != SSE_OK) {
        return p->error;
    }
    size_t i = 0;
    /* A UTF-8 BOM (EF BB BF) may open the stream, possibly split across feeds. */
    static const unsigned char bom[3] = {0xEF, 0xBB, 0xBF};
    while (!p->bom_checked && i < len) {
        if ((unsigned char)buf[i] == bom[p->bom_seen]) {
            p->bom_seen++;
            i++;
            if (p->bom_seen == 3) {
                p->bom_checked = true;
            }
            continue;
        }
        /* Not a BOM after all: the bytes matched so far are content. */
        p->bom_checked = true;
        if (p->bom_seen > 0) {
            int rc =
                buf_add(&p->line, (const char *)bom, p->bom_seen, p->max_line_bytes, SSE_ELINE);
            if (rc != SSE_OK) {
                return p->error = rc;
            }
        }
    }
    while (i < len) {
        /* Take the run of bytes up to the next line terminator in one step. */
        size_t start = i;
        while (i < len && buf[i] != '\n' && buf[i] != '\r') {
            i++;
        }
        if (i > start) {
            p->after_cr = false;
            int rc = buf_add(&p->line, buf + start, i - start, p->max_line_bytes, SSE_ELINE);
            if (rc != SSE_OK) {
                return p->error = rc;
            }
        }
        if (i == len) {
            break;
        }
        char ch = buf[i++];
        if (ch == '\n' && p->after_cr) {
            p->after_cr = false; /* the LF of a CRLF whose CR ended the line already */
            continue;
        }
        p->after_cr = ch == '\r';
        int rc = process_line(p, p->line.p != NULL ? p->line.p : "", p->line.len, cb, ctx);
        p->line.len = 0;
        if (rc != SSE_OK) {
            return p->error = rc;
        }
    }
    return SSE_OK;
}
