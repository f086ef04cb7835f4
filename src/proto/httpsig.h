/* SPDX-License-Identifier: MIT */
/* HTTP Message Signatures (RFC 9421): selecting a signature from the Signature-Input / Signature
 * dictionaries, building the signature base from an abstract message, and signing / verifying it
 * with ed25519, ecdsa-p256-sha256 (raw r||s), hmac-sha256, rsa-pss-sha512 and rsa-v1_5-sha256.
 * Pure: no I/O, no globals; every function is thread-safe (keys may be shared read-only).
 *
 * The signature base (§2.5) is one line per covered component plus the parameters line, joined
 * with LF and without a trailing LF:
 *
 *   "@method": POST
 *   "@path": /foo
 *   "content-digest";req: sha-512=:WZDP…ew==:
 *   "@signature-params": ("@method" "@path" "content-digest";req);created=1618884473;keyid="k"
 *
 * Policy (required components, created/expires window, nonce replay, key lookup by keyid) is the
 * caller's: this module exposes the parsed parameters (struct httpsig_params) to enforce it. */
#ifndef ROOST_PROTO_HTTPSIG_H
#define ROOST_PROTO_HTTPSIG_H

#include <jansson.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/sf.h"

#define HTTPSIG_MAX_COMPONENTS 64        /* covered components per signature */
#define HTTPSIG_MAX_BASE_BYTES 65536     /* signature base */
#define HTTPSIG_MAX_FIELD_LINES 64       /* field lines of one name combined */
#define HTTPSIG_MAX_SECRET_BYTES 1024    /* HMAC key */
#define HTTPSIG_MAX_KEY_TEXT_BYTES 16384 /* PEM / JWK input */

/* Result codes, precise enough for distinct 401 answers. */
#define HTTPSIG_ERR_MAP(X)                                                                         \
    X(OK, 0, "ok")                                                                                 \
    X(EMISSING, -1, "signature_missing")     /* no Signature(-Input), or label absent */           \
    X(EMALFORMED, -2, "signature_malformed") /* not a Dictionary, wrong types, bad params */       \
    X(EINVALID, -3, "signature_invalid")     /* cryptographic check failed */                      \
    X(EALG, -4, "signature_alg_unsupported") /* unknown alg, or alg does not fit the key */        \
    X(ECOMPONENT, -5, "signature_component_missing")    /* a covered component is absent */        \
    X(EBADCOMPONENT, -6, "signature_component_invalid") /* bad/duplicate/unsupported identifier */ \
    X(EKEY, -7, "signature_key_invalid")                /* key unusable / not loadable */          \
    X(ELIMIT, -8, "signature_too_large")                /* over an HTTPSIG_MAX_* bound */          \
    X(ENOMEM, -9, "out_of_memory")                                                                 \
    X(EEXPIRED, -10, "signature_expired") /* created/expires missing or outside the window */

enum httpsig_result {
#define HTTPSIG_ENUM(name, value, code) HTTPSIG_##name = value,
    HTTPSIG_ERR_MAP(HTTPSIG_ENUM)
#undef HTTPSIG_ENUM
};

/* Stable snake_case name of a result code (the table's third column). */
const char *httpsig_strerror(int rc);

enum httpsig_alg {
    HTTPSIG_ALG_NONE = 0, /* no / unknown alg */
    HTTPSIG_ALG_ED25519,
    HTTPSIG_ALG_ECDSA_P256_SHA256,
    HTTPSIG_ALG_HMAC_SHA256,
    HTTPSIG_ALG_RSA_PSS_SHA512,
    HTTPSIG_ALG_RSA_V1_5_SHA256,
};

/* "ed25519" → HTTPSIG_ALG_ED25519 …; HTTPSIG_ALG_NONE when unknown. And back (NULL for NONE). */
enum httpsig_alg httpsig_alg_from_name(const char *name);
const char *httpsig_alg_name(enum httpsig_alg alg);

/* One header field line as received (name in any case, value untrimmed). Several lines of one
 * name are combined in order (§2.1). Borrowed, NUL-terminated. */
struct httpsig_header {
    const char *name;
    const char *value;
};

/* An abstract message. For a request set method (and the target parts); for a response set
 * status > 0 and optionally `request` (the request it answers, for ";req" components).
 * All strings borrowed and NUL-terminated; query excludes the "?" and is NULL when absent. */
struct httpsig_message {
    const char *method;
    const char *scheme;    /* "https" */
    const char *authority; /* Host as received, e.g. "Example.COM:443" */
    const char *path;      /* "/foo"; empty means "/" */
    const char *query;     /* "a=b&c=d" or NULL */
    int status;            /* responses only */
    const struct httpsig_header *headers;
    size_t n_headers;
    const struct httpsig_message *request;
};

/* Parameters of one signature, borrowed from its parsed Signature-Input member. */
struct httpsig_params {
    bool has_created;
    int64_t created;
    bool has_expires;
    int64_t expires;
    const char *nonce; /* NULL when absent */
    const char *keyid;
    const char *alg; /* the alg parameter as sent; alg_id is its meaning */
    enum httpsig_alg alg_id;
    const char *tag;
    const struct sf_item *components; /* covered component identifiers (Strings + params) */
    size_t n_components;
};

/* One selected signature: the Signature-Input member (an Inner List) and the Signature bytes. */
struct httpsig_signature {
    char *label;
    struct sf_item input; /* owned copy of the Inner List */
    unsigned char *sig;   /* owned */
    size_t sig_len;
    struct httpsig_params params; /* points into `input` */
};

/* Selects signature `label` (NULL: the first Signature-Input member) from the combined
 * Signature-Input and Signature field values. Errors: EMISSING (a field is NULL/empty, or has no
 * such label), EMALFORMED (not Dictionaries; member not an Inner List of Strings / not a Byte
 * Sequence; created/expires not Integers; nonce/keyid/alg/tag not Strings), ELIMIT, ENOMEM.
 * An alg parameter this module does not know is not an error here (alg_id NONE): verification
 * then fails with EALG. On success release *out with httpsig_signature_cleanup. */
int httpsig_parse(const char *sig_input, size_t sig_input_len, const char *signature,
                  size_t signature_len, const char *label, struct httpsig_signature *out);
void httpsig_signature_cleanup(struct httpsig_signature *s);

/* As httpsig_parse, selecting the index-th Signature-Input member (0-based), so a caller can try
 * every signature of a message (e.g. the one whose keyid is registered). EMISSING past the end. */
int httpsig_parse_at(const char *sig_input, size_t sig_input_len, const char *signature,
                     size_t signature_len, size_t index, struct httpsig_signature *out);

/* Parses a Signature-Input member value alone (the Inner List text, e.g. the part after
 * "sig1=") into *out (an SF_INNER_LIST; release with sf_item_cleanup). EMALFORMED or ENOMEM. */
int httpsig_params_parse(const char *text, size_t len, struct sf_item *out);

/* Fills *p from an Inner List (borrowing from it). EMALFORMED on wrong parameter types. */
int httpsig_params_get(const struct sf_item *input, struct httpsig_params *p);

/* True when the signature covers component `name` ("@method", "content-digest") without any
 * parameter (so "content-digest";req or ";bs" variants do not count). */
bool httpsig_params_covers(const struct httpsig_params *p, const char *name);

/* Time policy: both created and expires present, created <= now + skew_s, now - skew_s <=
 * expires, created <= expires and expires - created <= max_window_s. HTTPSIG_OK or
 * HTTPSIG_EEXPIRED. */
int httpsig_params_check_time(const struct httpsig_params *p, int64_t now, int64_t max_window_s,
                              int64_t skew_s);

/* Builds the signature base for the covered components and parameters in `input` (an Inner
 * List as in Signature-Input). *out is NUL-terminated, caller frees; *out_len may be NULL.
 * Errors: ECOMPONENT (a covered field/derived component is absent from the message, a
 * @query-param name absent or repeated, ;req without a request, ;key member absent),
 * EBADCOMPONENT (not a String, unknown derived component, unsupported or conflicting parameter
 * such as ;tr or ;sf with ;bs, duplicate identifier, ;sf on a field of unknown type, a field
 * value that is not valid for ;sf/;key), EMALFORMED (value holding CR/LF), ELIMIT, ENOMEM. */
int httpsig_base_build(const struct httpsig_message *msg, const struct sf_item *input, char **out,
                       size_t *out_len);

/* A signing or verification key: an EVP_PKEY (Ed25519, P-256, RSA, RSA-PSS; public or private,
 * borrowed) or an HMAC secret (borrowed) for HTTPSIG_ALG_HMAC_SHA256. */
struct httpsig_key {
    enum httpsig_alg alg;
    EVP_PKEY *pkey;
    const unsigned char *secret;
    size_t secret_len;
};

/* Signs / verifies raw bytes. ecdsa signatures are raw 64-byte r||s. Sign errors: EALG (alg
 * unsupported for signing or not fitting the key), EKEY, ENOMEM. Verify: EINVALID on any
 * mismatch (wrong length included; HMAC compared in constant time), EALG, EKEY. */
int httpsig_sign_raw(const struct httpsig_key *key, const unsigned char *data, size_t len,
                     unsigned char **sig, size_t *sig_len);
int httpsig_verify_raw(const struct httpsig_key *key, const unsigned char *data, size_t len,
                       const unsigned char *sig, size_t sig_len);

/* Verifies signature `s` over `msg` with `key`: the signature's alg parameter, when present, must
 * name key->alg (EALG otherwise); then the base is built (its errors) and checked (EINVALID).
 * Does not check created/expires/nonce/keyid: that is policy, see struct httpsig_params. */
int httpsig_verify(const struct httpsig_message *msg, const struct httpsig_signature *s,
                   const struct httpsig_key *key);

/* Composes a Signature-Input member value: the components (each an SF Item text, e.g. "@method"
 * or "\"content-digest\";req" — a bare name gets quoted), then created (when >= 0), expires
 * (when >= 0), nonce, keyid, alg, tag (each when not NULL), in that order. *out caller frees.
 * EBADCOMPONENT for a component that does not parse, EMALFORMED for a bad string, ENOMEM. */
int httpsig_params_build(const char *const *components, size_t n, int64_t created, int64_t expires,
                         const char *nonce, const char *keyid, const char *alg, const char *tag,
                         char **out);

/* Signs `msg` under `label` with the Signature-Input member value `params` (as from
 * httpsig_params_build). Writes the dictionary members "label=(…);…" into *sig_input and
 * "label=:…:" into *signature (both NUL-terminated, caller frees). Errors as
 * httpsig_base_build, httpsig_sign_raw, and EMALFORMED for a bad label or params. */
int httpsig_sign(const struct httpsig_message *msg, const char *label, const char *params,
                 const struct httpsig_key *key, char **sig_input, char **signature);

/* Key loading. PEM: SPKI / PKCS#1 public keys, PKCS#8 / PKCS#1 / SEC1 private keys (also the
 * RSASSA-PSS OID). JWK: OKP Ed25519, EC P-256, RSA; "d" present → private key. *out is a new
 * reference the caller frees with EVP_PKEY_free. EKEY on anything unusable, ELIMIT when the input
 * exceeds HTTPSIG_MAX_KEY_TEXT_BYTES. */
int httpsig_key_from_pem(const char *pem, size_t len, EVP_PKEY **out);
int httpsig_key_from_jwk(const json_t *jwk, EVP_PKEY **out);

#endif
