/* SPDX-License-Identifier: MIT */
/* One-line logging to stderr, logfmt (`ts=… level=info msg="…" key=value …`) or JSON. Never log
 * tokens, secrets or payloads. Thread-safe (one write(2) per line, or per batch of whole lines). */
#ifndef ROOST_LOG_H
#define ROOST_LOG_H

#include <stdbool.h>
#include <stddef.h>

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };

/* Parses "debug|info|warn|error"; returns -1 when unknown. */
int log_level_parse(const char *name);
void log_set_level(enum log_level level);
/* true: one JSON object per line ({"ts","level","msg",fields…}); false: logfmt (the default).
 * Callers always pass logfmt fields; the JSON form is derived from them. */
void log_set_json(bool json);
bool log_enabled(enum log_level level);
/* `fields` is preformatted logfmt (may be NULL); msg is quoted and escaped. */
void log_line(enum log_level level, const char *msg, const char *fields_fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* The same with the fields already formatted: `fields` is logfmt of `len` bytes, NUL-terminated
 * (for the lines of every request, where printf-style formatting is most of the cost). */
void log_line_text(enum log_level level, const char *msg, const char *fields, size_t len);

/* The longest line written (a longer one is cut). */
#define LOG_LINE_MAX 4096

/* Lines gathered and written together, for the access log (server/access_log.c): a batch holds
 * at most LOG_LINE_MAX bytes, the size a pipe writes whole (PIPE_BUF on Linux), so one write(2)
 * carries many lines and still never splits one or lets another thread's line into it. One
 * owner thread; zero-initialise it. */
struct log_batch {
    size_t len;
    char buf[LOG_LINE_MAX];
};
/* Adds a line as log_line_text would write it (writing the batch first when the line does not
 * fit); a LOG_ERROR line is written at once with what came before it. Returns whether lines are
 * waiting for log_batch_flush. */
bool log_batch_add(struct log_batch *b, enum log_level level, const char *msg, const char *fields,
                   size_t len);
/* Writes the gathered lines. */
void log_batch_flush(struct log_batch *b);

#define log_info(msg, ...) log_line(LOG_INFO, msg, __VA_ARGS__)
#define log_warn(msg, ...) log_line(LOG_WARN, msg, __VA_ARGS__)
#define log_error(msg, ...) log_line(LOG_ERROR, msg, __VA_ARGS__)
#define log_debug(msg, ...) log_line(LOG_DEBUG, msg, __VA_ARGS__)

#endif
