/* SPDX-License-Identifier: MIT */
/* Unit tests of src/proto/sse.c: every line ending, any split of the input (down to one byte at a
 * time), comments, BOM, id/retry rules and the line/event limits. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/check.h"
#include "proto/sse.h"

#include "common/banned.h"

/* Collected events rendered as "event|id|data;" (data newlines shown as '/'), plus the last
 * retry. */
struct got {
    char text[4096];
    size_t len;
    int n;
    int64_t retry;
    int stop_after; /* stop after this many events (0: never) */
};

static int on_event(void *ctx, const struct sse_event *ev)
{
    struct got *g = ctx;
    char data[1024];
    size_t n = ev->data_len < sizeof data - 1 ? ev->data_len : sizeof data - 1;
    for (size_t i = 0; i < n; i++) {
        data[i] = ev->data[i] == '\n' ? '/' : ev->data[i];
    }
    data[n] = '\0';
    int w =
        snprintf(g->text + g->len, sizeof g->text - g->len, "%s|%s|%s;", ev->event, ev->id, data);
    if (w > 0 && (size_t)w < sizeof g->text - g->len) {
        g->len += (size_t)w;
    }
    g->n++;
    g->retry = ev->retry_ms;
    return g->stop_after != 0 && g->n >= g->stop_after;
}

/* Feeds `in` in chunks of `step` bytes (0: all at once); returns the last rc. */
static int feed(const char *in, size_t len, size_t step, struct got *g, size_t max_line,
                size_t max_event)
{
    struct sse_parser p;
    sse_parser_init(&p, max_line, max_event);
    memset(g, 0, sizeof *g);
    g->retry = -2;
    int rc = SSE_OK;
    if (step == 0) {
        step = len;
    }
    for (size_t i = 0; i < len && rc == SSE_OK; i += step) {
        size_t n = len - i < step ? len - i : step;
        rc = sse_parser_feed(&p, in + i, n, on_event, g);
    }
    if (g->retry == -2) {
        g->retry = p.retry_ms;
    }
    sse_parser_cleanup(&p);
    return rc;
}

/* The same stream must give the same events whatever the split. */
static void check_all_splits(const char *label, const char *in, size_t len, const char *want)
{
    struct got g;
    for (size_t step = 0; step <= 7; step++) {
        int rc = feed(in, len, step, &g, 0, 0);
        if (rc != SSE_OK || strcmp(g.text, want) != 0) {
            fprintf(stderr, "[%s step %zu] rc %d got '%s' want '%s'\n", label, step, rc, g.text,
                    want);
        }
        CHECK(rc == SSE_OK && strcmp(g.text, want) == 0);
    }
}

static void test_sse_roostd_stream_every_line_ending(void)
{
    const char *lf =
        "retry: 3000\n\nid: 1045\nevent: inbox_updated\ndata: {\"cursor_hint\":1045}\n\n"
        "event: heartbeat\ndata: {\"cursor_hint\":1045}\n\n";
    const char *want = "inbox_updated|1045|{\"cursor_hint\":1045};heartbeat|1045|{\"cursor_hint\""
                       ":1045};";
    check_all_splits("lf", lf, strlen(lf), want);
    /* Same stream with CRLF, CR, and a mix. */
    const char *endings[] = {"\r\n", "\r", "\n"};
    for (int e = 0; e < 4; e++) {
        char buf[512];
        size_t o = 0;
        int line = 0;
        for (const char *s = lf; *s; s++) {
            if (*s == '\n') {
                /* In the mix a CR is never followed by an LF ending (that would be one CRLF). */
                static const char *const mixed[] = {"\n", "\r", "\r\n"};
                const char *end = e < 3 ? endings[e] : mixed[line++ % 3];
                size_t n = strlen(end);
                memcpy(buf + o, end, n);
                o += n;
            } else {
                buf[o++] = *s;
            }
        }
        char label[16];
        snprintf(label, sizeof label, "ending%d", e);
        check_all_splits(label, buf, o, want);
        struct got g;
        feed(buf, o, 1, &g, 0, 0);
        CHECK_EQ(g.retry, 3000);
    }
}

static void test_sse_fields_comments_and_defaults(void)
{
    /* Multi-line data, comments, a field without colon, no space after colon, unknown fields,
     * an event without data is not dispatched, the type resets after each dispatch. */
    const char in[] = ": hello\n"
                      "data:a\n"
                      "data: b\n"
                      "data\n"
                      "foo: bar\n"
                      "\n"
                      "event: only-type\n"
                      "\n"
                      "data: c\n"
                      "\n";
    check_all_splits("fields", in, sizeof in - 1, "message||a/b/;message||c;");
    /* One leading space is removed, not two; "data:" with empty value gives an empty line. */
    const char in2[] = "data:  x\n\ndata:\ndata:\n\n";
    check_all_splits("spaces", in2, sizeof in2 - 1, "message|| x;message||/;");
    /* The id persists across events; an id with NUL is ignored; "id" alone clears it. */
    const char in3[] = "id: 7\ndata: a\n\ndata: b\n\nid: 8\0x\ndata: c\n\nid\ndata: d\n\n";
    check_all_splits("ids", in3, sizeof in3 - 1, "message|7|a;message|7|b;message|7|c;message||d;");
    /* A stream ending without a blank line dispatches nothing for the unfinished event. */
    const char in4[] = "data: a\n\ndata: unfinished\n";
    check_all_splits("eof", in4, sizeof in4 - 1, "message||a;");
}

static void test_sse_retry_rules(void)
{
    struct got g;
    const char ok[] = "retry: 1500\n\n";
    feed(ok, sizeof ok - 1, 1, &g, 0, 0);
    CHECK_EQ(g.retry, 1500);
    const char bad[] = "retry: 1500\nretry: 12x\nretry: -1\nretry:\nretry: 9999999999999\n\n";
    feed(bad, sizeof bad - 1, 0, &g, 0, 0);
    CHECK_EQ(g.retry, 1500);
    CHECK_EQ(g.n, 0);
}

static void test_sse_bom_is_stripped_only_at_start(void)
{
    const char in[] = "\xEF\xBB\xBF"
                      "data: a\n\n";
    check_all_splits("bom", in, sizeof in - 1, "message||a;");
    /* A partial BOM is content: the line "\xEF\xBBdata: a" is an unknown field. */
    const char part[] = "\xEF\xBB"
                        "data: a\n\ndata: b\n\n";
    check_all_splits("partial-bom", part, sizeof part - 1, "message||b;");
    /* A second BOM is not stripped. */
    const char two[] = "\xEF\xBB\xBF\xEF\xBB\xBF"
                       "data: a\n\ndata: b\n\n";
    check_all_splits("two-boms", two, sizeof two - 1, "message||b;");
}

static void test_sse_limits(void)
{
    struct got g;
    /* A line of exactly the limit passes; one byte more fails, in any split. */
    char line[80];
    memset(line, 'x', sizeof line);
    memcpy(line, "data: ", 6);
    char in[128];
    memcpy(in, line, 64);
    memcpy(in + 64, "\n\n", 2);
    CHECK_EQ(feed(in, 66, 1, &g, 64, 1024), SSE_OK);
    CHECK_EQ(g.n, 1);
    memcpy(in, line, 65);
    memcpy(in + 65, "\n\n", 2);
    CHECK_EQ(feed(in, 67, 1, &g, 64, 1024), SSE_ELINE);
    CHECK_EQ(feed(in, 67, 0, &g, 64, 1024), SSE_ELINE);
    CHECK_EQ(g.n, 0);
    /* An endless line without terminator fails once past the limit (bounded memory). */
    char big[4096];
    memset(big, 'a', sizeof big);
    CHECK_EQ(feed(big, sizeof big, 100, &g, 1000, 1024), SSE_ELINE);
    /* Data accumulated over many short lines is capped by the event limit. */
    char many[2048];
    size_t o = 0;
    while (o + 9 < sizeof many) {
        memcpy(many + o, "data: xx\n", 9);
        o += 9;
    }
    CHECK_EQ(feed(many, o, 3, &g, 64, 100), SSE_EEVENT);
    CHECK_EQ(g.n, 0);
    /* The same under the limit dispatches. */
    const char small[] = "data: xx\ndata: xx\n\n";
    CHECK_EQ(feed(small, sizeof small - 1, 1, &g, 64, 100), SSE_OK);
    CHECK_EQ(g.n, 1);
}

static void test_sse_errors_are_sticky_and_reset(void)
{
    struct sse_parser p;
    sse_parser_init(&p, 8, 64);
    struct got g;
    memset(&g, 0, sizeof g);
    CHECK_EQ(sse_parser_feed(&p, "data: toolong\n\n", 15, on_event, &g), SSE_ELINE);
    CHECK_EQ(sse_parser_feed(&p, "data: a\n\n", 9, on_event, &g), SSE_ELINE);
    sse_parser_reset_stream(&p);
    CHECK_EQ(sse_parser_feed(&p, "data: a\n\n", 9, on_event, &g), SSE_OK);
    CHECK_EQ(g.n, 1);
    /* The callback can stop the parser. */
    g.stop_after = 2;
    CHECK_EQ(sse_parser_feed(&p, "data: b\n\n", 9, on_event, &g), SSE_ESTOPPED);
    sse_parser_cleanup(&p);
    /* CR at the end of one feed, LF at the start of the next: one line ending, not two. */
    sse_parser_init(&p, 0, 0);
    memset(&g, 0, sizeof g);
    CHECK_EQ(sse_parser_feed(&p, "data: a\r", 8, on_event, &g), SSE_OK);
    CHECK_EQ(sse_parser_feed(&p, "\ndata: b\r", 9, on_event, &g), SSE_OK);
    CHECK_EQ(sse_parser_feed(&p, "\n\r\n", 3, on_event, &g), SSE_OK);
    CHECK_STREQ(g.text, "message||a/b;");
    sse_parser_cleanup(&p);
}

int main(void)
{
    RUN(test_sse_roostd_stream_every_line_ending);
    RUN(test_sse_fields_comments_and_defaults);
    RUN(test_sse_retry_rules);
    RUN(test_sse_bom_is_stripped_only_at_start);
    RUN(test_sse_limits);
    RUN(test_sse_errors_are_sticky_and_reset);
    return check_summary();
}
