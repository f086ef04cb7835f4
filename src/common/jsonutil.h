/* SPDX-License-Identifier: MIT */
/* Bounded JSON parsing on top of jansson: size and nesting depth are checked before jansson
 * allocates anything, duplicate keys and NUL escapes are rejected, the top level must be an object.
 */
#ifndef ROOST_JSONUTIL_H
#define ROOST_JSONUTIL_H

#include <jansson.h>
#include <stddef.h>

/* Parses buf[0..len) as one JSON object. Returns ROOST_OK and a new reference in *out, or
 * ROOST_EJSON (not JSON, bad UTF-8, duplicate key, NUL escape), ROOST_EJSONDEPTH (deeper than
 * max_depth), ROOST_EBODY (valid JSON but not an object), ROOST_ENOMEM. */
int jsonutil_parse_object(const char *buf, size_t len, size_t max_depth, json_t **out);
/* Nesting depth of JSON text (brackets outside strings); stops counting past limit + 1. */
size_t jsonutil_depth(const char *buf, size_t len, size_t limit);
/* Serialises compactly (keys in insertion order). Caller frees with free(). NULL on ENOMEM. */
char *jsonutil_dump(const json_t *v);

#endif
