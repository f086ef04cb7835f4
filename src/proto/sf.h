/* SPDX-License-Identifier: MIT */
/* Structured Field Values for HTTP (RFC 9651): a bounded parser into a small owned tree and the
 * canonical serializer (§4.1). Pure: no I/O, no globals, safe to call from any thread.
 *
 *   sig1=("@method" "@path");created=1618884473;keyid="k", sig2=:AAEC:     (a Dictionary)
 *   `--key--inner list of 2 Items--' `--params (key, bare item)--'
 *
 * Every field kind is an array of members (struct sf_member): a Dictionary has keys, a List has
 * key NULL, an Item field is a one-member array. An Item carries a bare value and Parameters; an
 * Inner List is an Item of type SF_INNER_LIST whose `inner` array holds the member Items. */
#ifndef ROOST_PROTO_SF_H
#define ROOST_PROTO_SF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Limits: at or above the minimums RFC 9651 §3 asks parsers to support. */
#define SF_MAX_INPUT_BYTES 65536 /* whole field value */
#define SF_MAX_MEMBERS 1024      /* List / Dictionary members */
#define SF_MAX_INNER 256         /* Inner List members */
#define SF_MAX_PARAMS 256        /* Parameters per Item or Inner List */
#define SF_MAX_KEY_BYTES 64      /* Dictionary / Parameter key */
#define SF_MAX_INTEGER 999999999999999LL

enum sf_field_type { SF_FIELD_ITEM, SF_FIELD_LIST, SF_FIELD_DICT };

enum sf_type {
    SF_INTEGER,    /* num */
    SF_DECIMAL,    /* num = value * 1000 (exact: at most 3 fractional digits) */
    SF_STRING,     /* str/len: printable ASCII */
    SF_TOKEN,      /* str/len */
    SF_BYTES,      /* str/len: the decoded bytes */
    SF_BOOLEAN,    /* num = 0 or 1 */
    SF_DATE,       /* num = seconds since the epoch */
    SF_DISPLAY,    /* str/len: UTF-8 (validated) */
    SF_INNER_LIST, /* inner/n_inner */
};

struct sf_param;

struct sf_item {
    enum sf_type type;
    int64_t num;
    char *str; /* owned, NUL-terminated (bytes may also contain NULs: use len) */
    size_t len;
    struct sf_item *inner; /* owned; SF_INNER_LIST only; never nested further */
    size_t n_inner;
    struct sf_param *params; /* owned */
    size_t n_params;
};

/* A Parameter: its value is a bare item (no params, never SF_INNER_LIST). */
struct sf_param {
    char *key;
    struct sf_item value;
};

/* A List / Dictionary member or the single Item of an Item field (key NULL unless Dictionary). */
struct sf_member {
    char *key;
    struct sf_item value;
};

struct sf_field {
    enum sf_field_type type;
    struct sf_member *members; /* owned */
    size_t n_members;
};

/* Parses buf[0..len) (need not be NUL-terminated) as a field of `type`. An empty List or
 * Dictionary is valid (zero members); an empty Item field is not. Dictionary and Parameter keys
 * that repeat keep their first position and take the last value (RFC 9651 §4.2.2).
 * Returns 0 and fills *out (release with sf_field_cleanup), or -1 (malformed, over a limit or out
 * of memory; *out is then empty and needs no cleanup). */
int sf_parse(const char *buf, size_t len, enum sf_field_type type, struct sf_field *out);
void sf_field_cleanup(struct sf_field *f);
void sf_item_cleanup(struct sf_item *it);

/* Canonical serialization (RFC 9651 §4.1) of a field, a single item with its params, or an
 * Inner List with its params. *out is a NUL-terminated heap string the caller frees; *outlen may
 * be NULL. Returns 0, or -1 when the tree holds something not serializable (out-of-range number,
 * invalid key/token/string character, nested inner list) or on out of memory. */
int sf_serialize(const struct sf_field *f, char **out, size_t *outlen);
int sf_serialize_item(const struct sf_item *it, char **out, size_t *outlen);

/* Lookups (borrowed pointers, NULL when absent). */
const struct sf_item *sf_dict_get(const struct sf_field *f, const char *key);
const struct sf_item *sf_param_get(const struct sf_item *it, const char *key);

/* Deep copy of an item (params and inner list included). Returns 0 or -1 (ENOMEM). */
int sf_item_copy(struct sf_item *dst, const struct sf_item *src);

/* Standard base64 (RFC 4648 §4) as used by Byte Sequences. Encode always pads. Decode accepts a
 * missing "=" padding and non-zero pad bits (RFC 9651 §4.2.7: parsers SHOULD NOT fail on them) but
 * refuses any other "=" and any character outside the alphabet. Caller frees. 0 or -1. */
int sf_base64_encode(const unsigned char *in, size_t len, char **out, size_t *outlen);
int sf_base64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen);

#endif
