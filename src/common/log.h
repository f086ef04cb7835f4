/* SPDX-License-Identifier: MIT */
/* One-line logging to stderr, logfmt (`ts=… level=info msg="…" key=value …`) or JSON. Never log
 * tokens, secrets or payloads. Thread-safe (one write(2) per line). */
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

#define log_info(msg, ...) log_line(LOG_INFO, msg, __VA_ARGS__)
#define log_warn(msg, ...) log_line(LOG_WARN, msg, __VA_ARGS__)
#define log_error(msg, ...) log_line(LOG_ERROR, msg, __VA_ARGS__)
#define log_debug(msg, ...) log_line(LOG_DEBUG, msg, __VA_ARGS__)

#endif
