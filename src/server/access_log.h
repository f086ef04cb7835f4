/* SPDX-License-Identifier: MIT */
/* The access log: one line per answered request (request.c), gathered on the loop thread and
 * written when 4 KiB are gathered or ACCESS_LOG_FLUSH_MS after the first waiting line, so a busy
 * server makes one write(2) per ~20 requests instead of one each, off the answer's path. Error
 * lines (5xx) are written at once. A SIGKILL loses at most the last ACCESS_LOG_FLUSH_MS of lines;
 * a clean exit loses none. Loop thread only. */
#ifndef ROOST_SERVER_ACCESS_LOG_H
#define ROOST_SERVER_ACCESS_LOG_H

#include <stddef.h>

#include "common/log.h"

#define ACCESS_LOG_FLUSH_MS 50

struct event_base;
struct access_log;

/* NULL when out of memory. */
struct access_log *access_log_new(struct event_base *base);
/* One "request" line with logfmt `fields` of `len` bytes (see log_line_text). */
void access_log_add(struct access_log *al, enum log_level level, const char *fields, size_t len);
/* Writes what is gathered and frees it (NULL is fine). */
void access_log_free(struct access_log *al);

#endif
