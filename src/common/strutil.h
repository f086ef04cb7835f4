/* SPDX-License-Identifier: MIT */
/* Bounded parsing of text: decimal integers within a range, hex digits, percent-decoding. Every
 * function reads a length-bounded slice and never assumes NUL termination of its input. */
#ifndef ROOST_STRUTIL_H
#define ROOST_STRUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Parses all of s[0..len) as a decimal integer in [min, max]: an optional '+' or '-', then one or
 * more digits, nothing else (no blanks, no trailing bytes). 0 with *out set, or -1 (malformed,
 * out of range) with *out untouched. */
int strutil_parse_i64(const char *s, size_t len, int64_t min, int64_t max, int64_t *out);

/* The value of one hex digit (0-9, a-f, A-F), or -1. */
int strutil_hexval(int c);

/* Decodes the hex string hex[0..len) (even length, either case) into out (cap bytes); *out_len
 * gets the byte count. 0, or -1 (odd length, a non-hex digit, cap too small). */
int strutil_hex_decode(const char *hex, size_t len, unsigned char *out, size_t cap,
                       size_t *out_len);

/* Strict percent-decoding (RFC 3986 §2.1) of src[0..len) into dst, NUL-terminated within cap
 * bytes: every '%' must start "%XX" and %00 is refused (the result is a C string); '+' stays '+'.
 * 0, or -1 (malformed, too long for cap). */
int strutil_percent_decode(const char *src, size_t len, char *dst, size_t cap);

/* The last line of s[0..len) with text in it (not only blanks), without its line end: where an
 * error's reason is (a Python traceback ends with the exception, a shell with the failing
 * command's message). *start gets its offset; returns its length (0 when s has no such line). */
size_t strutil_last_line(const char *s, size_t len, size_t *start);

#endif
