/* SPDX-License-Identifier: MIT */
/* Clocks and RFC 3339 timestamps (UTC, milliseconds: 2026-12-02T18:35:06.123Z). */
#ifndef ROOST_TIMEUTIL_H
#define ROOST_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>

#define TIME_RFC3339_LEN 24 /* "YYYY-MM-DDTHH:MM:SS.mmmZ" */

/* Wall clock, Unix milliseconds. */
int64_t time_now_ms(void);
/* Monotonic clock in milliseconds, for durations and deadlines. */
int64_t time_mono_ms(void);
/* The same clock in microseconds, for metrics. */
int64_t time_mono_us(void);
/* Sleeps ms milliseconds (any length: whole seconds too). */
void time_sleep_ms(int64_t ms);
/* Formats ms as RFC 3339 UTC with milliseconds; out holds TIME_RFC3339_LEN + 1 bytes. */
void time_format_rfc3339(int64_t ms, char *out);
/* Parses an RFC 3339 date-time ("Z" or ±HH:MM offset, optional fraction up to 9 digits) into
 * Unix ms. Returns 0, or -1 when malformed or outside years 1970..9999. */
int time_parse_rfc3339(const char *s, size_t len, int64_t *ms);
/* "YYYY-MM-DD" of ms (UTC); out holds 11 bytes. */
void time_format_day(int64_t ms, char *out);

#endif
