/* SPDX-License-Identifier: MIT */
/* logfmt lines, assembled in a stack buffer and written with one write(2) so threads never
 * interleave inside a line. */
#include "common/log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/timeutil.h"

static atomic_int current_level = LOG_INFO;
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

bool log_enabled(enum log_level level)
{
    return (int)level >= atomic_load(&current_level);
}

void log_line(enum log_level level, const char *msg, const char *fields_fmt, ...)
{
    if (!log_enabled(level)) {
        return;
    }
    char line[2048];
    char ts[TIME_RFC3339_LEN + 1];
    time_format_rfc3339(time_now_ms(), ts);
    size_t n = (size_t)snprintf(line, sizeof line, "ts=%s level=%s msg=\"", ts, names[level]);
    for (const char *p = msg; *p && n < sizeof line - 8; p++) {
        if (*p == '"' || *p == '\\') {
            line[n++] = '\\';
        }
        line[n++] = (*p == '\n') ? ' ' : *p;
    }
    line[n++] = '"';
    if (fields_fmt && *fields_fmt && n < sizeof line - 2) {
        line[n++] = ' ';
        va_list ap;
        va_start(ap, fields_fmt);
        int k = vsnprintf(line + n, sizeof line - n - 1, fields_fmt, ap);
        va_end(ap);
        if (k > 0) {
            n += (size_t)k < sizeof line - n - 1 ? (size_t)k : sizeof line - n - 2;
        }
    }
    line[n++] = '\n';
    ssize_t w = write(STDERR_FILENO, line, n);
    (void)w;
}
