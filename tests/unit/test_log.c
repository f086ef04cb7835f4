/* SPDX-License-Identifier: MIT */
/* log.c: logfmt lines as written, and the JSON form derived from the same logfmt fields (quoted
 * values with escapes, numbers, bare words, control characters), switched at run time. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "harness/check.h"

#include "common/banned.h"

/* Runs one log_line with stderr redirected to a file; returns the line (static buffer). */
static const char *capture(enum log_level level, const char *msg, const char *fields)
{
    static char line[8192];
    char path[] = "/tmp/roost-test-log-XXXXXX";
    int fd = mkstemp(path);
    int saved = dup(STDERR_FILENO);
    line[0] = '\0';
    if (fd < 0 || saved < 0) {
        return line;
    }
    dup2(fd, STDERR_FILENO);
    log_line(level, msg, "%s", fields);
    dup2(saved, STDERR_FILENO);
    close(saved);
    ssize_t n = pread(fd, line, sizeof line - 1, 0);
    line[n > 0 ? n : 0] = '\0';
    close(fd);
    unlink(path);
    return line;
}

static void test_log_logfmt_line(void)
{
    log_set_json(false);
    const char *l = capture(LOG_INFO, "say \"hi\"", "a=1 b=\"x y\"");
    CHECK(strncmp(l, "ts=", 3) == 0);
    CHECK(strstr(l, " level=info msg=\"say \\\"hi\\\"\" a=1 b=\"x y\"\n") != NULL);
    /* Below the level: nothing at all. */
    log_set_level(LOG_WARN);
    CHECK_STREQ(capture(LOG_INFO, "quiet", "a=1"), "");
    log_set_level(LOG_INFO);
}

static void test_log_json_line(void)
{
    log_set_json(true);
    const char *l = capture(LOG_ERROR, "req\tdone",
                            "req_id=ab12 status=200 duration_ms=1.250 neg=-3 zero=0 lead=007 "
                            "ver=1.2.3 q=\"a \\\"quoted\\\" \\\\ value\" dash=- flag tenant=t-1");
    json_error_t e;
    json_t *j = json_loads(l, 0, &e);
    CHECK(j != NULL);
    if (j != NULL) {
        CHECK_STREQ(json_string_value(json_object_get(j, "level")), "error");
        CHECK_STREQ(json_string_value(json_object_get(j, "msg")), "req\tdone");
        CHECK(json_is_string(json_object_get(j, "ts")));
        CHECK_STREQ(json_string_value(json_object_get(j, "req_id")), "ab12");
        CHECK(json_is_integer(json_object_get(j, "status")));
        CHECK_EQ(json_integer_value(json_object_get(j, "status")), 200);
        CHECK(json_is_real(json_object_get(j, "duration_ms")));
        CHECK_EQ(json_integer_value(json_object_get(j, "neg")), -3);
        CHECK_EQ(json_integer_value(json_object_get(j, "zero")), 0);
        /* Not JSON numbers: kept as strings. */
        CHECK_STREQ(json_string_value(json_object_get(j, "lead")), "007");
        CHECK_STREQ(json_string_value(json_object_get(j, "ver")), "1.2.3");
        CHECK_STREQ(json_string_value(json_object_get(j, "dash")), "-");
        CHECK_STREQ(json_string_value(json_object_get(j, "q")), "a \"quoted\" \\ value");
        CHECK(json_is_true(json_object_get(j, "flag")));
        CHECK_STREQ(json_string_value(json_object_get(j, "tenant")), "t-1");
    }
    json_decref(j);
    /* An unterminated quote (a truncated line) still gives valid JSON. */
    l = capture(LOG_INFO, "cut", "detail=\"never closed");
    j = json_loads(l, 0, &e);
    CHECK(j != NULL &&
          strcmp(json_string_value(json_object_get(j, "detail")), "never closed") == 0);
    json_decref(j);
    /* A very long field is cut, never overflowing, and the line stays one JSON object. */
    char big[6000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    char *fields = malloc(sizeof big + 16);
    if (fields != NULL) {
        snprintf(fields, sizeof big + 16, "long=\"%s\"", big);
        l = capture(LOG_INFO, "long", fields);
        j = json_loads(l, 0, &e);
        CHECK(j != NULL);
        json_decref(j);
        free(fields);
    }
    log_set_json(false);
}

/* The size of the file behind fd. */
static long file_size(int fd)
{
    return (long)lseek(fd, 0, SEEK_END);
}

/* A batch writes nothing until flushed or full, then only whole lines, in order; an error line
 * goes out at once with the lines before it. */
static void test_log_batch(void)
{
    log_set_json(false);
    char path[] = "/tmp/roost-test-logbatch-XXXXXX";
    int fd = mkstemp(path);
    int saved = dup(STDERR_FILENO);
    CHECK(fd >= 0 && saved >= 0);
    if (fd < 0 || saved < 0) {
        return;
    }
    dup2(fd, STDERR_FILENO);
    static struct log_batch b; /* 4 KiB: not on the stack of a test */
    char fields[96];
    long before_full = -1, after_error = -1;
    for (int i = 0; i < 60; i++) {
        int n = snprintf(fields, sizeof fields, "seq=%d pad=%060d", i, 0);
        CHECK(log_batch_add(&b, LOG_INFO, "request", fields, (size_t)n));
        if (i == 2) {
            before_full = file_size(fd);
        }
    }
    long after_full = file_size(fd);
    CHECK(log_batch_add(&b, LOG_ERROR, "request", "seq=60", 6) == false);
    after_error = file_size(fd);
    CHECK(log_batch_add(&b, LOG_DEBUG, "request", "seq=61", 6) == false); /* below the level */
    log_batch_flush(&b);
    dup2(saved, STDERR_FILENO);
    close(saved);
    CHECK(before_full == 0);                        /* held while the batch has room */
    CHECK(after_full > 0 && after_full < 60 * 100); /* full batches went out, the rest waits */
    char *text = calloc(1, (size_t)after_error + 1);
    CHECK(text != NULL && pread(fd, text, (size_t)after_error, 0) == after_error);
    if (text) {
        int next = 0;
        for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
            nl = strchr(line, '\n');
            CHECK(nl != NULL); /* every line whole */
            char want[32];
            snprintf(want, sizeof want, " seq=%d", next);
            CHECK_CASE(want, strncmp(line, "ts=", 3) == 0 && strstr(line, want) != NULL);
            next++;
        }
        CHECK(next == 61); /* 0…59, then the error line: nothing lost, nothing after it */
    }
    free(text);
    close(fd);
    unlink(path);
}

int main(void)
{
    RUN(test_log_logfmt_line);
    RUN(test_log_json_line);
    RUN(test_log_batch);
    return check_summary();
}
