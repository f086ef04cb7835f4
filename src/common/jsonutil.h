/* SPDX-License-Identifier: MIT */
/* Bounded JSON parsing on top of jansson: size and nesting depth are checked before jansson
 * allocates anything, duplicate keys and NUL escapes are rejected, the top level must be an object.
 */
#ifndef ROOST_JSONUTIL_H
#define ROOST_JSONUTIL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* Parses buf[0..len) as one JSON object. Returns ROOST_OK and a new reference in *out, or
 * ROOST_EJSON (not JSON, bad UTF-8, duplicate key, NUL escape), ROOST_EJSONDEPTH (deeper than
 * max_depth), ROOST_EBODY (valid JSON but not an object), ROOST_ENOMEM. */
int jsonutil_parse_object(const char *buf, size_t len, size_t max_depth, json_t **out);
/* The fast path of jsonutil_parse_object: the value jansson would read from buf[0..len) (with
 * JSON_REJECT_DUPLICATES | JSON_DECODE_ANY) when the text is plain (ASCII, integers, no \u
 * escape, escape-free keys, shallow), else NULL, including for every text jansson refuses. */
json_t *jsonutil_parse_plain(const char *buf, size_t len);
/* Nesting depth of JSON text (brackets outside strings); stops counting past limit + 1. */
size_t jsonutil_depth(const char *buf, size_t len, size_t limit);
struct dynbuf;
/* Appends s as a JSON string (quoted, escaped as jansson's compact dump escapes it: `"`, `\`,
 * and control characters; other bytes as they are, so s must be valid UTF-8). s NULL appends
 * null. */
void jsonutil_add_string(struct dynbuf *b, const char *s);
/* Appends v in decimal. */
void jsonutil_add_int(struct dynbuf *b, int64_t v);
/* Serialises compactly (keys in insertion order). Caller frees with free(). NULL on ENOMEM. */
char *jsonutil_dump(const json_t *v);
/* Overwrites every string value in v (recursively, keys aside) with zeros, in place, before v
 * holding secrets (a refresh token, a private key) is released: jansson frees without wiping.
 * NULL is a no-op. */
void jsonutil_wipe(json_t *v);

#endif
