/* SPDX-License-Identifier: MIT */
/* logfmt lines, assembled in a stack buffer and written with one write(2) so threads never
 * interleave inside a line. */
#include "common/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/timeutil.h"

#include "common/banned.h"

static atomic_int current_level = LOG_INFO;
static atomic_bool json_format = false;
static const char *const names[] = {"debug", "info", "warn", "error"};

int log_level_parse(const char *name)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(name, names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

void log_set_level(enum log_level level)
{
    atomic_store(&current_level, (int)level);
}

void log_set_json(bool json)
{
    atomic_store(&json_format, json);
}

bool log_enabled(enum log_level level)
{
    return (int)level >= atomic_load(&current_level);
}

/* Appends `len` bytes of s to line as a JSON string body (no quotes), escaping as needed. */
static size_t json_escape(char *line, size_t n, size_t cap, const char *s, size_t len)
{
    for (size_t i = 0; i < len && n + 7 < cap; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') {
            line[n++] = '\\';
            line[n++] = (char)c;
        } else if (c < 0x20) {
            n += (size_t)snprintf(line + n, cap - n, "\\u%04x", c);
        } else {
            line[n++] = (char)c;
        }
    }
    return n;
}

static bool is_number(const char *s, size_t len)
{
    size_t i = (len > 0 && s[0] == '-') ? 1 : 0, digits = 0, dots = 0;
    if (i == len) {
        return false;
    }
    for (; i < len; i++) {
        if (s[i] == '.') {
            dots++;
        } else if (s[i] >= '0' && s[i] <= '9') {
            digits++;
        } else {
            return false;
        }
    }
    /* No leading zeros ("007" is not JSON) and at most one dot with digits around it. */
    bool lead_zero =
        len - (s[0] == '-') > 1 && s[s[0] == '-'] == '0' && s[(s[0] == '-') + 1] != '.';
    return digits > 0 && dots <= 1 && !lead_zero && s[len - 1] != '.' && s[s[0] == '-'] != '.';
}

/* Turns logfmt fields (key=value, key="quoted \" value") into ,"key":value JSON members. */
static size_t fields_to_json(char *line, size_t n, size_t cap, const char *f)
{
    while (*f && n + 8 < cap) {
        while (*f == ' ') {
            f++;
        }
        const char *key = f;
        while (*f && *f != '=' && *f != ' ') {
            f++;
        }
        size_t klen = (size_t)(f - key);
        if (klen == 0) {
            break;
        }
        line[n++] = ',';
        line[n++] = '"';
        n = json_escape(line, n, cap, key, klen);
        line[n++] = '"';
        line[n++] = ':';
        if (*f != '=') {
            n += (size_t)snprintf(line + n, cap - n, "true");
            continue;
        }
        f++;
        if (*f == '"') {
            f++;
            line[n++] = '"';
            while (*f && *f != '"' && n + 8 < cap) {
                if (*f == '\\' && f[1]) {
                    f++;
                }
                n = json_escape(line, n, cap, f, 1);
                f++;
            }
            if (*f == '"') {
                f++;
            }
            line[n++] = '"';
        } else {
            const char *v = f;
            while (*f && *f != ' ') {
                f++;
            }
            size_t vlen = (size_t)(f - v);
            if (vlen > 0 && is_number(v, vlen) && n + vlen + 8 < cap) {
                memcpy(line + n, v, vlen);
                n += vlen;
            } else {
                line[n++] = '"';
                n = json_escape(line, n, cap, v, vlen);
                line[n++] = '"';
            }
        }
    }
    return n;
}

/* Copies s (NUL-terminated) to line at n, as far as cap allows. */
static size_t put(char *line, size_t n, size_t cap, const char *s)
{
    size_t k = strlen(s);
    if (k > cap - n) {
        k = cap - n;
    }
    memcpy(line + n, s, k);
    return n + k;
}

/* Formats one line with its newline into line[LOG_LINE_MAX]; returns its length. */
static size_t format_line(char *line, enum log_level level, const char *msg, const char *fields,
                          size_t k)
{
    char ts[TIME_RFC3339_LEN + 1];
    time_format_rfc3339(time_now_ms(), ts);
    size_t n;
    if (atomic_load(&json_format)) {
        n = put(line, 0, LOG_LINE_MAX, "{\"ts\":\"");
        n = put(line, n, LOG_LINE_MAX, ts);
        n = put(line, n, LOG_LINE_MAX, "\",\"level\":\"");
        n = put(line, n, LOG_LINE_MAX, names[level]);
        n = put(line, n, LOG_LINE_MAX, "\",\"msg\":\"");
        n = json_escape(line, n, LOG_LINE_MAX - 16, msg, strlen(msg));
        line[n++] = '"';
        n = fields_to_json(line, n, LOG_LINE_MAX - 4, fields);
        line[n++] = '}';
        line[n++] = '\n';
    } else {
        n = put(line, 0, LOG_LINE_MAX, "ts=");
        n = put(line, n, LOG_LINE_MAX, ts);
        n = put(line, n, LOG_LINE_MAX, " level=");
        n = put(line, n, LOG_LINE_MAX, names[level]);
        n = put(line, n, LOG_LINE_MAX, " msg=\"");
        for (const char *p = msg; *p && n < LOG_LINE_MAX - 8; p++) {
            if (*p == '"' || *p == '\\') {
                line[n++] = '\\';
            }
            line[n++] = (*p == '\n') ? ' ' : *p;
        }
        line[n++] = '"';
        if (k > 0) {
            if (k > LOG_LINE_MAX - n - 2) {
                k = LOG_LINE_MAX - n - 2;
            }
            line[n++] = ' ';
            memcpy(line + n, fields, k);
            n += k;
        }
        line[n++] = '\n';
    }
    return n;
}

static void write_all(const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(STDERR_FILENO, p, n);
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            return; /* a log that cannot be written is not worth stopping for */
        }
        p += w;
        n -= (size_t)w;
    }
}

static void emit(enum log_level level, const char *msg, const char *fields, size_t k)
{
    char line[LOG_LINE_MAX];
    write_all(line, format_line(line, level, msg, fields, k));
}

void log_line(enum log_level level, const char *msg, const char *fields_fmt, ...)
{
    if (!log_enabled(level)) {
        return;
    }
    char fields[2048];
    fields[0] = '\0';
    if (fields_fmt && *fields_fmt) {
        va_list ap;
        va_start(ap, fields_fmt);
        vsnprintf(fields, sizeof fields, fields_fmt, ap);
        va_end(ap);
    }
    emit(level, msg, fields, strlen(fields));
}

void log_line_text(enum log_level level, const char *msg, const char *fields, size_t len)
{
    if (!log_enabled(level)) {
        return;
    }
    emit(level, msg, fields, len);
}

bool log_batch_add(struct log_batch *b, enum log_level level, const char *msg, const char *fields,
                   size_t len)
{
    if (log_enabled(level)) {
        char line[LOG_LINE_MAX];
        size_t n = format_line(line, level, msg, fields, len);
        if (b->len + n > sizeof b->buf) {
            log_batch_flush(b);
        }
        memcpy(b->buf + b->len, line, n);
        b->len += n;
        if (level >= LOG_ERROR) {
            log_batch_flush(b); /* an error is never held back */
        }
    }
    return b->len > 0;
}

void log_batch_flush(struct log_batch *b)
{
    write_all(b->buf, b->len);
    b->len = 0;
}
