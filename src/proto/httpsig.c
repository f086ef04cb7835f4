/* SPDX-License-Identifier: MIT */
/* RFC 9421 signature bases (§2), Signature-Input/Signature selection (§4), composing and signing
 * them, and verifying a selected signature. Every component value is produced into a bounded
 * buffer; Structured Field work goes through sf.c, keys and algorithms through httpsig_keys.c. */
#include "proto/httpsig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/dynbuf.h"
#include "common/strutil.h"

#include "common/banned.h"

const char *httpsig_strerror(int rc)
{
    switch (rc) {
#define HTTPSIG_CASE(name, value, code)                                                            \
    case value:                                                                                    \
        return code;
        HTTPSIG_ERR_MAP(HTTPSIG_CASE)
#undef HTTPSIG_CASE
    }
    return "unknown";
}

static const struct {
    const char *name;
    enum httpsig_alg alg;
} alg_names[] = {
    {"ed25519", HTTPSIG_ALG_ED25519},
    {"ecdsa-p256-sha256", HTTPSIG_ALG_ECDSA_P256_SHA256},
    {"hmac-sha256", HTTPSIG_ALG_HMAC_SHA256},
    {"rsa-pss-sha512", HTTPSIG_ALG_RSA_PSS_SHA512},
    {"rsa-v1_5-sha256", HTTPSIG_ALG_RSA_V1_5_SHA256},
};

enum httpsig_alg httpsig_alg_from_name(const char *name)
{
    for (size_t i = 0; name != NULL && i < sizeof alg_names / sizeof alg_names[0]; i++) {
        if (strcmp(alg_names[i].name, name) == 0) {
            return alg_names[i].alg;
        }
    }
    return HTTPSIG_ALG_NONE;
}

const char *httpsig_alg_name(enum httpsig_alg alg)
{
    for (size_t i = 0; i < sizeof alg_names / sizeof alg_names[0]; i++) {
        if (alg_names[i].alg == alg) {
            return alg_names[i].name;
        }
    }
    return NULL;
}

/* ---- bounded output buffer ---- */

/* The HTTPSIG code of a buffer's sticky error. */
static int buf_rc(const struct dynbuf *b)
{
    switch (b->err) {
    case DYNBUF_OK:
        return HTTPSIG_OK;
    case DYNBUF_ELIMIT:
        return HTTPSIG_ELIMIT;
    default:
        return HTTPSIG_ENOMEM;
    }
}

/* ---- parameters and selection ---- */

int httpsig_params_get(const struct sf_item *input, struct httpsig_params *p)
{
    memset(p, 0, sizeof *p);
    if (input == NULL || input->type != SF_INNER_LIST) {
        return HTTPSIG_EMALFORMED;
    }
    if (input->n_inner > HTTPSIG_MAX_COMPONENTS) {
        return HTTPSIG_ELIMIT;
    }
    for (size_t i = 0; i < input->n_inner; i++) {
        if (input->inner[i].type != SF_STRING) {
            return HTTPSIG_EMALFORMED;
        }
    }
    for (size_t i = 0; i < input->n_params; i++) {
        const char *k = input->params[i].key;
        const struct sf_item *v = &input->params[i].value;
        if (strcmp(k, "created") == 0 || strcmp(k, "expires") == 0) {
            if (v->type != SF_INTEGER) {
                return HTTPSIG_EMALFORMED;
            }
            if (k[0] == 'c') {
                p->has_created = true;
                p->created = v->num;
            } else {
                p->has_expires = true;
                p->expires = v->num;
            }
        } else if (strcmp(k, "nonce") == 0 || strcmp(k, "keyid") == 0 || strcmp(k, "alg") == 0 ||
                   strcmp(k, "tag") == 0) {
            if (v->type != SF_STRING) {
                return HTTPSIG_EMALFORMED;
            }
            if (k[0] == 'n') {
                p->nonce = v->str;
            } else if (k[0] == 'k') {
                p->keyid = v->str;
            } else if (k[0] == 'a') {
                p->alg = v->str;
                p->alg_id = httpsig_alg_from_name(v->str);
            } else {
                p->tag = v->str;
            }
        }
        /* Other parameters are extensions (RFC 9421 §6.3): covered by the base, not interpreted. */
    }
    p->components = input->inner;
    p->n_components = input->n_inner;
    return HTTPSIG_OK;
}

bool httpsig_params_covers(const struct httpsig_params *p, const char *name)
{
    for (size_t i = 0; p != NULL && name != NULL && i < p->n_components; i++) {
        const struct sf_item *c = &p->components[i];
        if (c->n_params == 0 && c->len == strlen(name) && memcmp(c->str, name, c->len) == 0) {
            return true;
        }
    }
    return false;
}

int httpsig_params_check_time(const struct httpsig_params *p, int64_t now, int64_t max_window_s,
                              int64_t skew_s)
{
    /* Integers are bounded by SF (15 digits), so these sums cannot overflow. */
    if (p == NULL || !p->has_created || !p->has_expires || p->created > p->expires ||
        p->created > now + skew_s || p->expires < now - skew_s ||
        p->expires - p->created > max_window_s) {
        return HTTPSIG_EEXPIRED;
    }
    return HTTPSIG_OK;
}

int httpsig_params_parse(const char *text, size_t len, struct sf_item *out)
{
    struct sf_field f;
    memset(out, 0, sizeof *out);
    if (len > SF_MAX_INPUT_BYTES) {
        return HTTPSIG_ELIMIT;
    }
    /* An Item field cannot hold an Inner List; a one-member List can. */
    if (sf_parse(text, len, SF_FIELD_LIST, &f) != 0) {
        return HTTPSIG_EMALFORMED;
    }
    if (f.n_members != 1) {
        sf_field_cleanup(&f);
        return HTTPSIG_EMALFORMED;
    }
    struct httpsig_params p;
    int rc = httpsig_params_get(&f.members[0].value, &p);
    if (rc == HTTPSIG_OK) {
        /* Move the item out of the field so the caller owns it. */
        *out = f.members[0].value;
        memset(&f.members[0].value, 0, sizeof f.members[0].value);
    }
    sf_field_cleanup(&f);
    return rc;
}

void httpsig_signature_cleanup(struct httpsig_signature *s)
{
    if (s == NULL) {
        return;
    }
    free(s->label);
    sf_item_cleanup(&s->input);
    free(s->sig);
    memset(s, 0, sizeof *s);
}

int httpsig_parse(const char *sig_input, size_t sig_input_len, const char *signature,
                  size_t signature_len, const char *label, struct httpsig_signature *out)
{
    struct sf_field in = {0}, sg = {0};
    int rc;
    memset(out, 0, sizeof *out);
    if (sig_input == NULL || signature == NULL || sig_input_len == 0 || signature_len == 0) {
        return HTTPSIG_EMISSING;
    }
    if (sig_input_len > SF_MAX_INPUT_BYTES || signature_len > SF_MAX_INPUT_BYTES) {
        return HTTPSIG_ELIMIT;
    }
    if (sf_parse(sig_input, sig_input_len, SF_FIELD_DICT, &in) != 0 ||
        sf_parse(signature, signature_len, SF_FIELD_DICT, &sg) != 0) {
        rc = HTTPSIG_EMALFORMED;
        goto out;
    }
    if (label == NULL) {
        if (in.n_members == 0) {
            rc = HTTPSIG_EMISSING;
            goto out;
        }
        label = in.members[0].key;
    }
    const struct sf_item *iv = sf_dict_get(&in, label);
    const struct sf_item *sv = sf_dict_get(&sg, label);
    if (iv == NULL || sv == NULL) {
        rc = HTTPSIG_EMISSING;
        goto out;
    }
    if (sv->type != SF_BYTES) {
        rc = HTTPSIG_EMALFORMED;
        goto out;
    }
    struct httpsig_params check;
    if ((rc = httpsig_params_get(iv, &check)) != HTTPSIG_OK) {
        goto out;
    }
    out->label = strdup(label);
    out->sig = malloc(sv->len + 1);
    if (out->label == NULL || out->sig == NULL || sf_item_copy(&out->input, iv) != 0) {
        rc = HTTPSIG_ENOMEM;
        goto out;
    }
    memcpy(out->sig, sv->str, sv->len);
    out->sig_len = sv->len;
    rc = httpsig_params_get(&out->input, &out->params);
out:
    if (rc != HTTPSIG_OK) {
        httpsig_signature_cleanup(out);
    }
    sf_field_cleanup(&in);
    sf_field_cleanup(&sg);
    return rc;
}

int httpsig_parse_at(const char *sig_input, size_t sig_input_len, const char *signature,
                     size_t signature_len, size_t index, struct httpsig_signature *out)
{
    struct sf_field in;
    memset(out, 0, sizeof *out);
    if (sig_input == NULL || sig_input_len == 0) {
        return HTTPSIG_EMISSING;
    }
    if (sig_input_len > SF_MAX_INPUT_BYTES) {
        return HTTPSIG_ELIMIT;
    }
    if (sf_parse(sig_input, sig_input_len, SF_FIELD_DICT, &in) != 0) {
        return HTTPSIG_EMALFORMED;
    }
    int rc = HTTPSIG_EMISSING;
    if (index < in.n_members) {
        rc = httpsig_parse(sig_input, sig_input_len, signature, signature_len,
                           in.members[index].key, out);
    }
    sf_field_cleanup(&in);
    return rc;
}

/* ---- component values (§2.1, §2.2) ---- */

/* Fields whose Structured Field type is known, for ";sf" (§2.1.1). */
static const struct {
    const char *name;
    enum sf_field_type type;
} sf_fields[] = {
    {"signature", SF_FIELD_DICT},         {"signature-input", SF_FIELD_DICT},
    {"accept-signature", SF_FIELD_DICT},  {"content-digest", SF_FIELD_DICT},
    {"repr-digest", SF_FIELD_DICT},       {"want-content-digest", SF_FIELD_DICT},
    {"want-repr-digest", SF_FIELD_DICT},  {"priority", SF_FIELD_DICT},
    {"cdn-cache-control", SF_FIELD_DICT}, {"example-dict", SF_FIELD_DICT},
    {"cache-status", SF_FIELD_LIST},      {"proxy-status", SF_FIELD_LIST},
    {"example-list", SF_FIELD_LIST},      {"example-item", SF_FIELD_ITEM},
};

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* Appends one field line value: trimmed, obsolete line folding replaced by one SP (§2.1). A bare
 * CR or LF that is not folding is malformed. */
static int put_field_line(struct dynbuf *b, const char *v)
{
    size_t n = strlen(v), i = 0;
    while (i < n && is_ows(v[i])) {
        i++;
    }
    while (n > i && is_ows(v[n - 1])) {
        n--;
    }
    while (i < n) {
        if (v[i] == '\r' || v[i] == '\n') {
            if (v[i] == '\r') {
                i++;
            }
            if (i >= n || v[i] != '\n') {
                return HTTPSIG_EMALFORMED;
            }
            i++;
            if (i >= n || !is_ows(v[i])) {
                return HTTPSIG_EMALFORMED;
            }
            while (i < n && is_ows(v[i])) {
                i++;
            }
            dynbuf_addc(b, ' ');
            continue;
        }
        dynbuf_addc(b, v[i]);
        i++;
    }
    return buf_rc(b);
}

static bool bool_param(const struct sf_item *comp, const char *key, int *rc)
{
    const struct sf_item *v = sf_param_get(comp, key);
    if (v == NULL) {
        return false;
    }
    if (v->type != SF_BOOLEAN || v->num != 1) {
        *rc = HTTPSIG_EBADCOMPONENT;
    }
    return true;
}

static int field_value(const struct httpsig_message *m, const struct sf_item *comp,
                       struct dynbuf *out)
{
    int rc = HTTPSIG_OK;
    bool sf = bool_param(comp, "sf", &rc), bs = bool_param(comp, "bs", &rc);
    const struct sf_item *key = sf_param_get(comp, "key");
    if (rc != HTTPSIG_OK || (key != NULL && key->type != SF_STRING) ||
        (bs && (sf || key != NULL))) {
        return HTTPSIG_EBADCOMPONENT;
    }
    struct dynbuf joined = {.max = HTTPSIG_MAX_BASE_BYTES};
    size_t lines = 0;
    for (size_t i = 0; i < m->n_headers; i++) {
        if (m->headers[i].name == NULL || m->headers[i].value == NULL ||
            strcasecmp(m->headers[i].name, comp->str) != 0) {
            continue;
        }
        if (++lines > HTTPSIG_MAX_FIELD_LINES) {
            rc = HTTPSIG_ELIMIT;
            goto out;
        }
        if (lines > 1) {
            dynbuf_adds(&joined, ", ");
        }
        if (bs) {
            /* §2.1.3: each line is wrapped on its own as a Byte Sequence. */
            struct dynbuf line = {.max = HTTPSIG_MAX_BASE_BYTES};
            char *enc = NULL;
            size_t enclen = 0;
            rc = put_field_line(&line, m->headers[i].value);
            if (rc == HTTPSIG_OK && sf_base64_encode((const unsigned char *)(line.s ? line.s : ""),
                                                     line.len, &enc, &enclen) != 0) {
                rc = HTTPSIG_ENOMEM;
            }
            dynbuf_cleanup(&line);
            if (rc != HTTPSIG_OK) {
                goto out;
            }
            dynbuf_addc(&joined, ':');
            dynbuf_add(&joined, enc, enclen);
            dynbuf_addc(&joined, ':');
            free(enc);
        } else if ((rc = put_field_line(&joined, m->headers[i].value)) != HTTPSIG_OK) {
            goto out;
        }
    }
    if (lines == 0) {
        rc = HTTPSIG_ECOMPONENT;
        goto out;
    }
    if ((rc = buf_rc(&joined)) != HTTPSIG_OK) {
        goto out;
    }
    if (!sf && key == NULL) {
        dynbuf_add(out, joined.s, joined.len);
        rc = buf_rc(out);
        goto out;
    }
    /* ;sf and ;key re-serialize the combined value (§2.1.1, §2.1.2). */
    enum sf_field_type type = SF_FIELD_DICT;
    if (key == NULL) {
        size_t k = 0;
        for (; k < sizeof sf_fields / sizeof sf_fields[0]; k++) {
            if (strcmp(sf_fields[k].name, comp->str) == 0) {
                break;
            }
        }
        if (k == sizeof sf_fields / sizeof sf_fields[0]) {
            rc = HTTPSIG_EBADCOMPONENT;
            goto out;
        }
        type = sf_fields[k].type;
    }
    struct sf_field f;
    if (sf_parse(joined.s, joined.len, type, &f) != 0) {
        rc = HTTPSIG_EBADCOMPONENT;
        goto out;
    }
    char *ser = NULL;
    size_t serlen = 0;
    if (key != NULL) {
        const struct sf_item *member = sf_dict_get(&f, key->str);
        if (member == NULL) {
            rc = HTTPSIG_ECOMPONENT;
        } else if (sf_serialize_item(member, &ser, &serlen) != 0) {
            rc = HTTPSIG_ENOMEM;
        }
    } else if (sf_serialize(&f, &ser, &serlen) != 0) {
        rc = HTTPSIG_ENOMEM;
    }
    sf_field_cleanup(&f);
    if (rc == HTTPSIG_OK) {
        dynbuf_add(out, ser, serlen);
        rc = buf_rc(out);
    }
    free(ser);
out:
    dynbuf_cleanup(&joined);
    return rc;
}

/* application/x-www-form-urlencoded parsing of one name or value (WHATWG URL §5.1: "+" is a
 * space, bad "%" sequences stay literal), then percent-encoding with the form-urlencoded set
 * (everything but ALPHA / DIGIT / "*-._"), as §2.2.8 requires. */
static void query_reencode(struct dynbuf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '+') {
            c = ' ';
        } else if (c == '%' && i + 2 < n && strutil_hexval(s[i + 1]) >= 0 &&
                   strutil_hexval(s[i + 2]) >= 0) {
            c = (unsigned char)(strutil_hexval(s[i + 1]) << 4 | strutil_hexval(s[i + 2]));
            i += 2;
        }
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
            c == '*' || c == '-' || c == '.' || c == '_') {
            dynbuf_addc(b, (char)c);
        } else {
            char e[3] = {'%', hex[c >> 4], hex[c & 15]};
            dynbuf_add(b, e, 3);
        }
    }
}

static int query_param_value(const struct httpsig_message *m, const struct sf_item *name,
                             struct dynbuf *out)
{
    if (name == NULL || name->type != SF_STRING) {
        return HTTPSIG_EBADCOMPONENT;
    }
    const char *q = m->query ? m->query : "";
    size_t qlen = strlen(q), found = 0;
    int rc = HTTPSIG_OK;
    for (size_t pos = 0; pos <= qlen && rc == HTTPSIG_OK;) {
        const char *amp = memchr(q + pos, '&', qlen - pos);
        size_t end = amp ? (size_t)(amp - q) : qlen;
        if (end > pos) {
            const char *eq = memchr(q + pos, '=', end - pos);
            size_t nend = eq ? (size_t)(eq - q) : end;
            struct dynbuf nb = {.max = HTTPSIG_MAX_BASE_BYTES};
            query_reencode(&nb, q + pos, nend - pos);
            if (buf_rc(&nb) != 0) {
                rc = buf_rc(&nb);
            } else if (nb.len == name->len && memcmp(nb.s ? nb.s : "", name->str, nb.len) == 0) {
                if (++found == 1 && eq != NULL) {
                    query_reencode(out, eq + 1, end - nend - 1);
                }
                rc = buf_rc(out);
            }
            dynbuf_cleanup(&nb);
        }
        pos = end + 1;
    }
    if (rc != HTTPSIG_OK) {
        return rc;
    }
    /* §2.2.8: a name occurring more than once MUST NOT be included. */
    return found == 1 ? HTTPSIG_OK : HTTPSIG_ECOMPONENT;
}

/* @authority: host lowercased, the scheme's default port removed (§2.2.3). */
static void put_authority(struct dynbuf *b, const char *scheme, const char *auth)
{
    size_t n = strlen(auth);
    const char *colon = NULL;
    /* The port colon is the last one, after any IPv6 literal's "]". */
    for (size_t i = n; i > 0; i--) {
        if (auth[i - 1] == ':') {
            colon = auth + i - 1;
            break;
        }
        if (auth[i - 1] == ']') {
            break;
        }
    }
    if (colon != NULL && scheme != NULL &&
        ((strcasecmp(scheme, "https") == 0 && strcmp(colon, ":443") == 0) ||
         (strcasecmp(scheme, "http") == 0 && strcmp(colon, ":80") == 0))) {
        n = (size_t)(colon - auth);
    }
    for (size_t i = 0; i < n; i++) {
        char c = auth[i];
        dynbuf_addc(b, (char)(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c));
    }
}

static void put_lower(struct dynbuf *b, const char *s)
{
    for (; *s != '\0'; s++) {
        dynbuf_addc(b, (char)(*s >= 'A' && *s <= 'Z' ? *s - 'A' + 'a' : *s));
    }
}

static int derived_value(const struct httpsig_message *m, const struct sf_item *comp,
                         struct dynbuf *out)
{
    const char *id = comp->str;
    bool response = m->status > 0;
    for (size_t i = 0; i < comp->n_params; i++) {
        const char *k = comp->params[i].key;
        if (strcmp(k, "req") != 0 && !(strcmp(k, "name") == 0 && strcmp(id, "@query-param") == 0)) {
            return HTTPSIG_EBADCOMPONENT;
        }
    }
    if (strcmp(id, "@status") == 0) {
        if (!response) {
            return HTTPSIG_ECOMPONENT;
        }
        char st[16];
        int n = snprintf(st, sizeof st, "%03d", m->status);
        dynbuf_add(out, st, (size_t)n);
        return buf_rc(out);
    }
    if (strcmp(id, "@method") != 0 && strcmp(id, "@target-uri") != 0 &&
        strcmp(id, "@authority") != 0 && strcmp(id, "@scheme") != 0 &&
        strcmp(id, "@request-target") != 0 && strcmp(id, "@path") != 0 &&
        strcmp(id, "@query") != 0 && strcmp(id, "@query-param") != 0) {
        return HTTPSIG_EBADCOMPONENT; /* unknown, or @signature-params, which cannot be covered */
    }
    if (response) {
        return HTTPSIG_ECOMPONENT; /* request components of a response need ;req */
    }
    const char *path = m->path != NULL && m->path[0] != '\0' ? m->path : "/";
    if (strcmp(id, "@method") == 0) {
        if (m->method == NULL) {
            return HTTPSIG_ECOMPONENT;
        }
        dynbuf_adds(out, m->method);
    } else if (strcmp(id, "@authority") == 0 || strcmp(id, "@target-uri") == 0) {
        if (m->authority == NULL || (id[1] == 't' && m->scheme == NULL)) {
            return HTTPSIG_ECOMPONENT;
        }
        if (id[1] == 't') {
            put_lower(out, m->scheme);
            dynbuf_adds(out, "://");
        }
        put_authority(out, m->scheme, m->authority);
        if (id[1] == 't') {
            dynbuf_adds(out, path);
            if (m->query != NULL) {
                dynbuf_addc(out, '?');
                dynbuf_adds(out, m->query);
            }
        }
    } else if (strcmp(id, "@scheme") == 0) {
        if (m->scheme == NULL) {
            return HTTPSIG_ECOMPONENT;
        }
        put_lower(out, m->scheme);
    } else if (strcmp(id, "@request-target") == 0) {
        dynbuf_adds(out, path);
        if (m->query != NULL) {
            dynbuf_addc(out, '?');
            dynbuf_adds(out, m->query);
        }
    } else if (strcmp(id, "@path") == 0) {
        dynbuf_adds(out, path);
    } else if (strcmp(id, "@query") == 0) {
        dynbuf_addc(out, '?');
        dynbuf_adds(out, m->query != NULL ? m->query : "");
    } else {
        return query_param_value(m, sf_param_get(comp, "name"), out);
    }
    return buf_rc(out);
}

static bool bare_equal(const struct sf_item *a, const struct sf_item *b)
{
    return a->type == b->type && a->num == b->num && a->len == b->len &&
           (a->len == 0 || memcmp(a->str, b->str, a->len) == 0);
}

/* Two identifiers are the same component when name and parameter set match, in any order. */
static bool same_component(const struct sf_item *a, const struct sf_item *b)
{
    if (!bare_equal(a, b) || a->n_params != b->n_params) {
        return false;
    }
    for (size_t i = 0; i < a->n_params; i++) {
        const struct sf_item *v = sf_param_get(b, a->params[i].key);
        if (v == NULL || !bare_equal(v, &a->params[i].value)) {
            return false;
        }
    }
    return true;
}

static bool valid_component_name(const struct sf_item *c)
{
    if (c->type != SF_STRING || c->len == 0) {
        return false;
    }
    /* Field names are lowercase tokens; derived ones are "@" + lowercase token. */
    for (size_t i = c->str[0] == '@' ? 1 : 0; i < c->len; i++) {
        char ch = c->str[i];
        if (ch >= 'A' && ch <= 'Z') {
            return false;
        }
        if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
              strchr("!#$%&'*+-.^_`|~", ch))) {
            return false;
        }
    }
    return c->len > (c->str[0] == '@' ? 1u : 0u);
}

int httpsig_base_build(const struct httpsig_message *msg, const struct sf_item *input, char **out,
                       size_t *out_len)
{
    struct dynbuf b = {.max = HTTPSIG_MAX_BASE_BYTES};
    struct httpsig_params p;
    char *ser = NULL;
    size_t serlen = 0;
    *out = NULL;
    int rc = httpsig_params_get(input, &p);
    if (rc != HTTPSIG_OK) {
        return rc;
    }
    for (size_t i = 0; i < p.n_components; i++) {
        const struct sf_item *c = &p.components[i];
        if (!valid_component_name(c)) {
            rc = HTTPSIG_EBADCOMPONENT;
            goto out;
        }
        for (size_t j = 0; j < i; j++) {
            if (same_component(c, &p.components[j])) {
                rc = HTTPSIG_EBADCOMPONENT;
                goto out;
            }
        }
        if (sf_param_get(c, "tr") != NULL) {
            rc = HTTPSIG_EBADCOMPONENT; /* trailers are not supported */
            goto out;
        }
        const struct httpsig_message *m = msg;
        int err = HTTPSIG_OK;
        if (bool_param(c, "req", &err)) {
            if (err != HTTPSIG_OK || msg->status <= 0) {
                rc = HTTPSIG_EBADCOMPONENT; /* ;req only makes sense on a response */
                goto out;
            }
            if ((m = msg->request) == NULL) {
                rc = HTTPSIG_ECOMPONENT;
                goto out;
            }
        }
        free(ser);
        ser = NULL;
        if (sf_serialize_item(c, &ser, &serlen) != 0) {
            rc = HTTPSIG_ENOMEM;
            goto out;
        }
        dynbuf_add(&b, ser, serlen);
        dynbuf_adds(&b, ": ");
        size_t start = b.len;
        if (c->str[0] == '@') {
            rc = derived_value(m, c, &b);
        } else {
            for (size_t k = 0; k < c->n_params; k++) {
                const char *pk = c->params[k].key;
                if (strcmp(pk, "sf") != 0 && strcmp(pk, "key") != 0 && strcmp(pk, "bs") != 0 &&
                    strcmp(pk, "req") != 0) {
                    rc = HTTPSIG_EBADCOMPONENT;
                    goto out;
                }
            }
            rc = field_value(m, c, &b);
        }
        if (rc == HTTPSIG_OK) {
            rc = buf_rc(&b);
        }
        if (rc != HTTPSIG_OK) {
            goto out;
        }
        /* A value must stay on its line: a raw CR/LF would forge further base lines. */
        if (memchr(b.s + start, '\n', b.len - start) != NULL ||
            memchr(b.s + start, '\r', b.len - start) != NULL) {
            rc = HTTPSIG_EMALFORMED;
            goto out;
        }
        dynbuf_addc(&b, '\n');
    }
    free(ser);
    ser = NULL;
    if (sf_serialize_item(input, &ser, &serlen) != 0) {
        rc = HTTPSIG_EMALFORMED;
        goto out;
    }
    dynbuf_adds(&b, "\"@signature-params\": ");
    dynbuf_add(&b, ser, serlen);
    if ((rc = buf_rc(&b)) != HTTPSIG_OK) {
        goto out;
    }
    *out = b.s;
    if (out_len != NULL) {
        *out_len = b.len;
    }
    b.s = NULL;
out:
    free(ser);
    dynbuf_cleanup(&b);
    return rc;
}

int httpsig_verify(const struct httpsig_message *msg, const struct httpsig_signature *s,
                   const struct httpsig_key *key)
{
    if (s == NULL || key == NULL) {
        return HTTPSIG_EMISSING;
    }
    if (key->alg == HTTPSIG_ALG_NONE || (s->params.alg != NULL && s->params.alg_id != key->alg)) {
        return HTTPSIG_EALG;
    }
    char *base = NULL;
    size_t n = 0;
    int rc = httpsig_base_build(msg, &s->input, &base, &n);
    if (rc == HTTPSIG_OK) {
        rc = httpsig_verify_raw(key, (const unsigned char *)base, n, s->sig, s->sig_len);
    }
    free(base);
    return rc;
}

/* ---- composing and signing ---- */

static int add_param(struct sf_item *it, const char *key, const struct sf_item *v)
{
    struct sf_param *np = realloc(it->params, (it->n_params + 1) * sizeof *np);
    if (np == NULL) {
        return HTTPSIG_ENOMEM;
    }
    it->params = np;
    np[it->n_params].key = strdup(key);
    if (np[it->n_params].key == NULL || sf_item_copy(&np[it->n_params].value, v) != 0) {
        free(np[it->n_params].key);
        return HTTPSIG_ENOMEM;
    }
    it->n_params++;
    return HTTPSIG_OK;
}

static int add_string_param(struct sf_item *it, const char *key, const char *val)
{
    if (val == NULL) {
        return HTTPSIG_OK;
    }
    struct sf_item v = {.type = SF_STRING, .str = (char *)val, .len = strlen(val)};
    return add_param(it, key, &v);
}

int httpsig_params_build(const char *const *components, size_t n, int64_t created, int64_t expires,
                         const char *nonce, const char *keyid, const char *alg, const char *tag,
                         char **out)
{
    struct sf_item list = {.type = SF_INNER_LIST};
    struct dynbuf tmp = {.max = SF_MAX_INPUT_BYTES};
    int rc = HTTPSIG_OK;
    *out = NULL;
    if (n > HTTPSIG_MAX_COMPONENTS) {
        return HTTPSIG_ELIMIT;
    }
    if (n > 0 && (list.inner = calloc(n, sizeof *list.inner)) == NULL) {
        return HTTPSIG_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        const char *c = components[i];
        dynbuf_reset(&tmp);
        if (c[0] == '"') {
            dynbuf_adds(&tmp, c);
        } else {
            /* A bare name, maybe with parameters: quote the name part. */
            size_t nl = strcspn(c, ";");
            dynbuf_addc(&tmp, '"');
            dynbuf_add(&tmp, c, nl);
            dynbuf_addc(&tmp, '"');
            dynbuf_adds(&tmp, c + nl);
        }
        struct sf_field f;
        if (buf_rc(&tmp) != 0 || sf_parse(tmp.s, tmp.len, SF_FIELD_ITEM, &f) != 0) {
            rc = buf_rc(&tmp) != 0 ? buf_rc(&tmp) : HTTPSIG_EBADCOMPONENT;
            goto out;
        }
        if (f.members[0].value.type != SF_STRING || !valid_component_name(&f.members[0].value)) {
            sf_field_cleanup(&f);
            rc = HTTPSIG_EBADCOMPONENT;
            goto out;
        }
        list.inner[list.n_inner++] = f.members[0].value;
        memset(&f.members[0].value, 0, sizeof f.members[0].value);
        sf_field_cleanup(&f);
    }
    struct sf_item num = {.type = SF_INTEGER};
    if (created >= 0) {
        num.num = created;
        if ((rc = add_param(&list, "created", &num)) != HTTPSIG_OK) {
            goto out;
        }
    }
    if (expires >= 0) {
        num.num = expires;
        if ((rc = add_param(&list, "expires", &num)) != HTTPSIG_OK) {
            goto out;
        }
    }
    if ((rc = add_string_param(&list, "nonce", nonce)) != HTTPSIG_OK ||
        (rc = add_string_param(&list, "keyid", keyid)) != HTTPSIG_OK ||
        (rc = add_string_param(&list, "alg", alg)) != HTTPSIG_OK ||
        (rc = add_string_param(&list, "tag", tag)) != HTTPSIG_OK) {
        goto out;
    }
    if (sf_serialize_item(&list, out, NULL) != 0) {
        rc = HTTPSIG_EMALFORMED;
    }
out:
    dynbuf_cleanup(&tmp);
    sf_item_cleanup(&list);
    return rc;
}

static bool valid_label(const char *label)
{
    size_t n = label == NULL ? 0 : strlen(label);
    if (n == 0 || n > SF_MAX_KEY_BYTES ||
        !((label[0] >= 'a' && label[0] <= 'z') || label[0] == '*')) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        char c = label[i];
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-' ||
              c == '.' || c == '*')) {
            return false;
        }
    }
    return true;
}

int httpsig_sign(const struct httpsig_message *msg, const char *label, const char *params,
                 const struct httpsig_key *key, char **sig_input, char **signature)
{
    struct sf_item input;
    struct httpsig_params p;
    char *base = NULL, *ser = NULL, *b64 = NULL;
    unsigned char *sig = NULL;
    size_t baselen = 0, siglen = 0, b64len = 0;
    struct dynbuf si = {.max = SF_MAX_INPUT_BYTES}, sg = {.max = SF_MAX_INPUT_BYTES};
    *sig_input = NULL;
    *signature = NULL;
    if (!valid_label(label) || params == NULL) {
        return HTTPSIG_EMALFORMED;
    }
    int rc = httpsig_params_parse(params, strlen(params), &input);
    if (rc != HTTPSIG_OK) {
        return rc;
    }
    if ((rc = httpsig_params_get(&input, &p)) != HTTPSIG_OK) {
        goto out;
    }
    if (key == NULL || (p.alg != NULL && p.alg_id != key->alg)) {
        rc = HTTPSIG_EALG;
        goto out;
    }
    if ((rc = httpsig_base_build(msg, &input, &base, &baselen)) != HTTPSIG_OK ||
        (rc = httpsig_sign_raw(key, (const unsigned char *)base, baselen, &sig, &siglen)) !=
            HTTPSIG_OK) {
        goto out;
    }
    if (sf_serialize_item(&input, &ser, NULL) != 0 ||
        sf_base64_encode(sig, siglen, &b64, &b64len) != 0) {
        rc = HTTPSIG_ENOMEM;
        goto out;
    }
    dynbuf_adds(&si, label);
    dynbuf_addc(&si, '=');
    dynbuf_adds(&si, ser);
    dynbuf_adds(&sg, label);
    dynbuf_adds(&sg, "=:");
    dynbuf_add(&sg, b64, b64len);
    dynbuf_addc(&sg, ':');
    if ((rc = buf_rc(&si) != 0 ? buf_rc(&si) : buf_rc(&sg)) != HTTPSIG_OK) {
        goto out;
    }
    *sig_input = si.s;
    *signature = sg.s;
    si.s = NULL;
    sg.s = NULL;
out:
    dynbuf_cleanup(&si);
    dynbuf_cleanup(&sg);
    free(b64);
    free(ser);
    free(sig);
    free(base);
    sf_item_cleanup(&input);
    return rc;
}
