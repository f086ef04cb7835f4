/* SPDX-License-Identifier: MIT */
/* RFC 9651 Structured Fields: the parsing algorithms of §4.2 over a length-bounded slice and the
 * serialization algorithms of §4.1. The grammar nests at most List → Inner List → Item →
 * Parameters, so the parser needs no recursion; every array is capped before it grows. */
#include "proto/sf.h"

#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/dynbuf.h"
#include "common/strutil.h"

#include "common/banned.h"

/* ---- small helpers ---- */

static bool is_digit(unsigned char c)
{
    return c >= '0' && c <= '9';
}

static bool is_lcalpha(unsigned char c)
{
    return c >= 'a' && c <= 'z';
}

static bool is_alpha(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* RFC 9110 tchar. */
static bool is_tchar(unsigned char c)
{
    if (is_alpha(c) || is_digit(c)) {
        return true;
    }
    return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

static bool is_key_char(unsigned char c)
{
    return is_lcalpha(c) || is_digit(c) || c == '_' || c == '-' || c == '.' || c == '*';
}

/* Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF. */
static bool utf8_valid(const unsigned char *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        unsigned char c = s[i];
        size_t n;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        } else if (c >= 0xc2 && c <= 0xdf) {
            n = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            n = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            n = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (len - i <= n) {
            return false;
        }
        for (size_t k = 1; k <= n; k++) {
            if ((s[i + k] & 0xc0) != 0x80) {
                return false;
            }
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if ((n == 2 && cp < 0x800) || (n == 3 && (cp < 0x10000 || cp > 0x10ffff)) ||
            (cp >= 0xd800 && cp <= 0xdfff)) {
            return false;
        }
        i += n + 1;
    }
    return true;
}

static char *dup_bytes(const char *s, size_t len)
{
    char *d = malloc(len + 1);
    if (d == NULL) {
        return NULL;
    }
    if (len > 0) {
        memcpy(d, s, len);
    }
    d[len] = '\0';
    return d;
}

/* ---- base64 ---- */

int sf_base64_encode(const unsigned char *in, size_t len, char **out, size_t *outlen)
{
    return b64_encode(B64_STD, in, len, out, outlen);
}

/* RFC 9651 §4.2.7: parsers SHOULD NOT fail on missing padding or non-zero pad bits. */
int sf_base64_decode(const char *in, size_t len, unsigned char **out, size_t *outlen)
{
    return b64_decode(B64_STD, false, in, len, out, outlen);
}

/* ---- tree ---- */

void sf_item_cleanup(struct sf_item *it)
{
    if (it == NULL) {
        return;
    }
    free(it->str);
    for (size_t i = 0; i < it->n_inner; i++) {
        sf_item_cleanup(&it->inner[i]);
    }
    free(it->inner);
    for (size_t i = 0; i < it->n_params; i++) {
        free(it->params[i].key);
        sf_item_cleanup(&it->params[i].value);
    }
    free(it->params);
    memset(it, 0, sizeof *it);
}

void sf_field_cleanup(struct sf_field *f)
{
    if (f == NULL) {
        return;
    }
    for (size_t i = 0; i < f->n_members; i++) {
        free(f->members[i].key);
        sf_item_cleanup(&f->members[i].value);
    }
    free(f->members);
    memset(f, 0, sizeof *f);
}

int sf_item_copy(struct sf_item *dst, const struct sf_item *src)
{
    memset(dst, 0, sizeof *dst);
    dst->type = src->type;
    dst->num = src->num;
    dst->len = src->len;
    if (src->str != NULL && (dst->str = dup_bytes(src->str, src->len)) == NULL) {
        goto fail;
    }
    if (src->n_inner > 0) {
        dst->inner = calloc(src->n_inner, sizeof *dst->inner);
        if (dst->inner == NULL) {
            goto fail;
        }
        for (size_t i = 0; i < src->n_inner; i++) {
            /* Inner members never hold inner lists, so this recursion is one level deep. */
            if (src->inner[i].type == SF_INNER_LIST ||
                sf_item_copy(&dst->inner[i], &src->inner[i]) != 0) {
                goto fail;
            }
            dst->n_inner++;
        }
    }
    if (src->n_params > 0) {
        dst->params = calloc(src->n_params, sizeof *dst->params);
        if (dst->params == NULL) {
            goto fail;
        }
        for (size_t i = 0; i < src->n_params; i++) {
            const struct sf_param *sp = &src->params[i];
            struct sf_param *dp = &dst->params[i];
            if (sp->value.type == SF_INNER_LIST || sp->value.n_params > 0) {
                goto fail;
            }
            dp->key = dup_bytes(sp->key, strlen(sp->key));
            if (dp->key == NULL) {
                goto fail;
            }
            dst->n_params++;
            if (sf_item_copy(&dp->value, &sp->value) != 0) {
                goto fail;
            }
        }
    }
    return 0;
fail:
    sf_item_cleanup(dst);
    return -1;
}

const struct sf_item *sf_dict_get(const struct sf_field *f, const char *key)
{
    if (f == NULL || f->type != SF_FIELD_DICT) {
        return NULL;
    }
    for (size_t i = 0; i < f->n_members; i++) {
        if (strcmp(f->members[i].key, key) == 0) {
            return &f->members[i].value;
        }
    }
    return NULL;
}

const struct sf_item *sf_param_get(const struct sf_item *it, const char *key)
{
    if (it == NULL) {
        return NULL;
    }
    for (size_t i = 0; i < it->n_params; i++) {
        if (strcmp(it->params[i].key, key) == 0) {
            return &it->params[i].value;
        }
    }
    return NULL;
}

/* ---- parser ---- */

struct parser {
    const unsigned char *s;
    size_t len;
    size_t pos;
};

static bool at_end(const struct parser *p)
{
    return p->pos >= p->len;
}

static int peek(const struct parser *p)
{
    return p->pos < p->len ? p->s[p->pos] : -1;
}

static void skip_sp(struct parser *p)
{
    while (p->pos < p->len && p->s[p->pos] == ' ') {
        p->pos++;
    }
}

static void skip_ows(struct parser *p)
{
    while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t')) {
        p->pos++;
    }
}

/* §4.2.3.3 */
static int parse_key(struct parser *p, char **out)
{
    int c = peek(p);
    if (c < 0 || !(is_lcalpha((unsigned char)c) || c == '*')) {
        return -1;
    }
    size_t start = p->pos;
    while (p->pos < p->len && is_key_char(p->s[p->pos])) {
        p->pos++;
    }
    if (p->pos - start > SF_MAX_KEY_BYTES) {
        return -1;
    }
    *out = dup_bytes((const char *)p->s + start, p->pos - start);
    return *out == NULL ? -1 : 0;
}

/* §4.2.4: Integer or Decimal. Decimals are kept exactly, in thousandths. */
static int parse_number(struct parser *p, struct sf_item *it)
{
    bool neg = false;
    if (peek(p) == '-') {
        neg = true;
        p->pos++;
    }
    if (at_end(p) || !is_digit(p->s[p->pos])) {
        return -1;
    }
    int64_t ipart = 0, fpart = 0;
    size_t ndigits = 0, nfrac = 0;
    bool decimal = false;
    while (!at_end(p)) {
        unsigned char c = p->s[p->pos];
        if (is_digit(c)) {
            if (decimal) {
                fpart = fpart * 10 + (c - '0');
                nfrac++;
            } else {
                ipart = ipart * 10 + (c - '0');
            }
            ndigits++;
        } else if (!decimal && c == '.') {
            if (ndigits > 12) {
                return -1;
            }
            decimal = true;
        } else {
            break;
        }
        p->pos++;
        if ((!decimal && ndigits > 15) || (decimal && ndigits > 15) || nfrac > 3) {
            return -1;
        }
    }
    if (!decimal) {
        it->type = SF_INTEGER;
        it->num = neg ? -ipart : ipart;
        return 0;
    }
    if (nfrac == 0) {
        return -1; /* "1." */
    }
    for (size_t k = nfrac; k < 3; k++) {
        fpart *= 10;
    }
    it->type = SF_DECIMAL;
    it->num = ipart * 1000 + fpart;
    if (neg) {
        it->num = -it->num;
    }
    return 0;
}

/* §4.2.5 */
static int parse_string(struct parser *p, struct sf_item *it)
{
    p->pos++; /* the opening DQUOTE */
    /* Size the buffer by this string's extent, not the rest of the input: many short strings
     * must not each hold a copy-sized block. Unescaping only shrinks. */
    size_t start = p->pos, end = start;
    while (end < p->len && p->s[end] != '"') {
        end += p->s[end] == '\\' ? 2 : 1;
    }
    char *buf = malloc((end < p->len ? end : p->len) - start + 1);
    size_t o = 0;
    if (buf == NULL) {
        return -1;
    }
    while (!at_end(p)) {
        unsigned char c = p->s[p->pos++];
        if (c == '\\') {
            if (at_end(p)) {
                break;
            }
            c = p->s[p->pos++];
            if (c != '"' && c != '\\') {
                break;
            }
            buf[o++] = (char)c;
        } else if (c == '"') {
            buf[o] = '\0';
            it->type = SF_STRING;
            it->str = buf;
            it->len = o;
            return 0;
        } else if (c < 0x20 || c > 0x7e) {
            break;
        } else {
            buf[o++] = (char)c;
        }
    }
    free(buf);
    return -1;
}

/* §4.2.6 */
static int parse_token(struct parser *p, struct sf_item *it)
{
    size_t start = p->pos;
    p->pos++;
    while (!at_end(p) && (is_tchar(p->s[p->pos]) || p->s[p->pos] == ':' || p->s[p->pos] == '/')) {
        p->pos++;
    }
    it->type = SF_TOKEN;
    it->len = p->pos - start;
    it->str = dup_bytes((const char *)p->s + start, it->len);
    return it->str == NULL ? -1 : 0;
}

/* §4.2.7 */
static int parse_bytes(struct parser *p, struct sf_item *it)
{
    p->pos++;
    size_t start = p->pos;
    while (!at_end(p) && p->s[p->pos] != ':') {
        unsigned char c = p->s[p->pos];
        if (!(is_alpha(c) || is_digit(c) || c == '+' || c == '/' || c == '=')) {
            return -1;
        }
        p->pos++;
    }
    if (at_end(p)) {
        return -1;
    }
    size_t end = p->pos++;
    unsigned char *raw = NULL;
    size_t rawlen = 0;
    if (sf_base64_decode((const char *)p->s + start, end - start, &raw, &rawlen) != 0) {
        return -1;
    }
    raw[rawlen] = '\0'; /* the decoder leaves room for it */
    it->type = SF_BYTES;
    it->str = (char *)raw;
    it->len = rawlen;
    return 0;
}

/* Display Strings escape with lowercase hex only (RFC 9651 §4.2.10). */
static int hex_lower(unsigned char c)
{
    return c >= 'A' && c <= 'F' ? -1 : strutil_hexval(c);
}

/* §4.2.10 */
static int parse_display(struct parser *p, struct sf_item *it)
{
    p->pos++; /* '%' */
    if (peek(p) != '"') {
        return -1;
    }
    p->pos++;
    /* The first raw DQUOTE ends a Display String (an inner one is always %22). */
    const unsigned char *q = memchr(p->s + p->pos, '"', p->len - p->pos);
    char *buf = malloc((q != NULL ? (size_t)(q - p->s) : p->len) - p->pos + 1);
    size_t o = 0;
    if (buf == NULL) {
        return -1;
    }
    while (!at_end(p)) {
        unsigned char c = p->s[p->pos++];
        if (c < 0x20 || c > 0x7e) {
            break;
        }
        if (c == '%') {
            if (p->len - p->pos < 2) {
                break;
            }
            int h = hex_lower(p->s[p->pos]), l = hex_lower(p->s[p->pos + 1]);
            if (h < 0 || l < 0) {
                break;
            }
            p->pos += 2;
            buf[o++] = (char)(h << 4 | l);
        } else if (c == '"') {
            if (!utf8_valid((const unsigned char *)buf, o)) {
                break;
            }
            buf[o] = '\0';
            it->type = SF_DISPLAY;
            it->str = buf;
            it->len = o;
            return 0;
        } else {
            buf[o++] = (char)c;
        }
    }
    free(buf);
    return -1;
}

/* §4.2.3.1 */
static int parse_bare(struct parser *p, struct sf_item *it)
{
    int c = peek(p);
    if (c < 0) {
        return -1;
    }
    if (c == '-' || is_digit((unsigned char)c)) {
        return parse_number(p, it);
    }
    if (c == '"') {
        return parse_string(p, it);
    }
    if (c == '*' || is_alpha((unsigned char)c)) {
        return parse_token(p, it);
    }
    if (c == ':') {
        return parse_bytes(p, it);
    }
    if (c == '?') {
        p->pos++;
        c = peek(p);
        if (c != '0' && c != '1') {
            return -1;
        }
        p->pos++;
        it->type = SF_BOOLEAN;
        it->num = c == '1';
        return 0;
    }
    if (c == '@') {
        p->pos++;
        if (parse_number(p, it) != 0 || it->type != SF_INTEGER) {
            return -1;
        }
        it->type = SF_DATE;
        return 0;
    }
    if (c == '%') {
        return parse_display(p, it);
    }
    return -1;
}

/* §4.2.3.2: a later duplicate key overwrites the value in place. */
static int parse_params(struct parser *p, struct sf_item *it)
{
    while (peek(p) == ';') {
        p->pos++;
        skip_sp(p);
        char *key = NULL;
        struct sf_item v = {.type = SF_BOOLEAN, .num = 1};
        if (parse_key(p, &key) != 0) {
            return -1;
        }
        if (peek(p) == '=') {
            p->pos++;
            if (parse_bare(p, &v) != 0) {
                free(key);
                sf_item_cleanup(&v);
                return -1;
            }
        }
        struct sf_param *dup = NULL;
        for (size_t i = 0; i < it->n_params; i++) {
            if (strcmp(it->params[i].key, key) == 0) {
                dup = &it->params[i];
                break;
            }
        }
        if (dup != NULL) {
            free(key);
            sf_item_cleanup(&dup->value);
            dup->value = v;
            continue;
        }
        if (it->n_params >= SF_MAX_PARAMS) {
            free(key);
            sf_item_cleanup(&v);
            return -1;
        }
        struct sf_param *np = realloc(it->params, (it->n_params + 1) * sizeof *np);
        if (np == NULL) {
            free(key);
            sf_item_cleanup(&v);
            return -1;
        }
        it->params = np;
        it->params[it->n_params].key = key;
        it->params[it->n_params].value = v;
        it->n_params++;
    }
    return 0;
}

/* §4.2.3 */
static int parse_item(struct parser *p, struct sf_item *it)
{
    memset(it, 0, sizeof *it);
    if (parse_bare(p, it) != 0 || parse_params(p, it) != 0) {
        sf_item_cleanup(it);
        return -1;
    }
    return 0;
}

/* §4.2.1.2 */
static int parse_inner_list(struct parser *p, struct sf_item *it)
{
    memset(it, 0, sizeof *it);
    it->type = SF_INNER_LIST;
    p->pos++; /* '(' */
    while (!at_end(p)) {
        skip_sp(p);
        if (peek(p) == ')') {
            p->pos++;
            if (parse_params(p, it) != 0) {
                goto fail;
            }
            return 0;
        }
        if (it->n_inner >= SF_MAX_INNER) {
            goto fail;
        }
        struct sf_item *ni = realloc(it->inner, (it->n_inner + 1) * sizeof *ni);
        if (ni == NULL) {
            goto fail;
        }
        it->inner = ni;
        if (parse_item(p, &it->inner[it->n_inner]) != 0) {
            goto fail;
        }
        it->n_inner++;
        int c = peek(p);
        if (c != ' ' && c != ')') {
            goto fail;
        }
    }
fail:
    sf_item_cleanup(it);
    return -1;
}

static int parse_item_or_inner(struct parser *p, struct sf_item *it)
{
    if (peek(p) == '(') {
        return parse_inner_list(p, it);
    }
    return parse_item(p, it);
}

static int add_member(struct sf_field *f, char *key, struct sf_item *v)
{
    if (key != NULL) {
        for (size_t i = 0; i < f->n_members; i++) {
            if (strcmp(f->members[i].key, key) == 0) {
                free(key);
                sf_item_cleanup(&f->members[i].value);
                f->members[i].value = *v;
                return 0;
            }
        }
    }
    if (f->n_members >= SF_MAX_MEMBERS) {
        return -1;
    }
    struct sf_member *nm = realloc(f->members, (f->n_members + 1) * sizeof *nm);
    if (nm == NULL) {
        return -1;
    }
    f->members = nm;
    f->members[f->n_members].key = key;
    f->members[f->n_members].value = *v;
    f->n_members++;
    return 0;
}

/* §4.2.1 / §4.2.2: members separated by OWS "," OWS, no trailing comma. */
static int parse_members(struct parser *p, struct sf_field *f, bool dict)
{
    while (!at_end(p)) {
        char *key = NULL;
        struct sf_item v;
        if (dict) {
            if (parse_key(p, &key) != 0) {
                return -1;
            }
            if (peek(p) == '=') {
                p->pos++;
                if (parse_item_or_inner(p, &v) != 0) {
                    free(key);
                    return -1;
                }
            } else {
                memset(&v, 0, sizeof v);
                v.type = SF_BOOLEAN;
                v.num = 1;
                if (parse_params(p, &v) != 0) {
                    free(key);
                    sf_item_cleanup(&v);
                    return -1;
                }
            }
        } else if (parse_item_or_inner(p, &v) != 0) {
            return -1;
        }
        if (add_member(f, key, &v) != 0) {
            free(key);
            sf_item_cleanup(&v);
            return -1;
        }
        skip_ows(p);
        if (at_end(p)) {
            return 0;
        }
        if (p->s[p->pos] != ',') {
            return -1;
        }
        p->pos++;
        skip_ows(p);
        if (at_end(p)) {
            return -1;
        }
    }
    return 0;
}

int sf_parse(const char *buf, size_t len, enum sf_field_type type, struct sf_field *out)
{
    memset(out, 0, sizeof *out);
    out->type = type;
    if (len > SF_MAX_INPUT_BYTES || (buf == NULL && len > 0)) {
        return -1;
    }
    struct parser p = {(const unsigned char *)buf, len, 0};
    skip_sp(&p);
    int rc;
    if (type == SF_FIELD_ITEM) {
        struct sf_item v;
        rc = parse_item(&p, &v);
        if (rc == 0 && (rc = add_member(out, NULL, &v)) != 0) {
            sf_item_cleanup(&v);
        }
    } else {
        rc = parse_members(&p, out, type == SF_FIELD_DICT);
    }
    skip_sp(&p);
    if (rc != 0 || !at_end(&p)) {
        sf_field_cleanup(out);
        out->type = type;
        return -1;
    }
    return 0;
}

/* ---- serializer ---- */

#define SF_MAX_OUTPUT_BYTES (4u * SF_MAX_INPUT_BYTES)

/* The output, capped so that a hostile tree cannot grow it without bound, and whether the tree
 * was found unserializable. */
struct sbuf {
    struct dynbuf d;
    bool failed;
};

static void sb_put(struct sbuf *b, const char *s, size_t n)
{
    if (!b->failed) {
        dynbuf_add(&b->d, s, n);
    }
}

static void sb_putc(struct sbuf *b, char c)
{
    sb_put(b, &c, 1);
}

static void sb_puts(struct sbuf *b, const char *s)
{
    sb_put(b, s, strlen(s));
}

static void sb_put_u64(struct sbuf *b, uint64_t v)
{
    char tmp[24];
    size_t n = 0;
    do {
        tmp[sizeof tmp - 1 - n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v > 0);
    sb_put(b, tmp + sizeof tmp - n, n);
}

static void ser_key(struct sbuf *b, const char *key)
{
    size_t n = key == NULL ? 0 : strlen(key);
    if (n == 0 || n > SF_MAX_KEY_BYTES || !(is_lcalpha((unsigned char)key[0]) || key[0] == '*')) {
        b->failed = true;
        return;
    }
    for (size_t i = 0; i < n; i++) {
        if (!is_key_char((unsigned char)key[i])) {
            b->failed = true;
            return;
        }
    }
    sb_put(b, key, n);
}

static void ser_bare(struct sbuf *b, const struct sf_item *it)
{
    static const char hex[] = "0123456789abcdef";
    switch (it->type) {
    case SF_INTEGER:
    case SF_DATE:
        if (it->num > SF_MAX_INTEGER || it->num < -SF_MAX_INTEGER) {
            b->failed = true;
            return;
        }
        if (it->type == SF_DATE) {
            sb_putc(b, '@');
        }
        if (it->num < 0) {
            sb_putc(b, '-');
        }
        sb_put_u64(b, (uint64_t)(it->num < 0 ? -it->num : it->num));
        return;
    case SF_DECIMAL: {
        if (it->num > SF_MAX_INTEGER || it->num < -SF_MAX_INTEGER) {
            b->failed = true;
            return;
        }
        uint64_t a = (uint64_t)(it->num < 0 ? -it->num : it->num);
        if (it->num < 0) {
            sb_putc(b, '-');
        }
        sb_put_u64(b, a / 1000);
        sb_putc(b, '.');
        /* At least one fractional digit, trailing zeros dropped (§4.1.5). */
        unsigned f = (unsigned)(a % 1000);
        char d[3] = {(char)('0' + f / 100), (char)('0' + f / 10 % 10), (char)('0' + f % 10)};
        size_t nd = 3;
        while (nd > 1 && d[nd - 1] == '0') {
            nd--;
        }
        sb_put(b, d, nd);
        return;
    }
    case SF_STRING:
        sb_putc(b, '"');
        for (size_t i = 0; i < it->len; i++) {
            unsigned char c = (unsigned char)it->str[i];
            if (c < 0x20 || c > 0x7e) {
                b->failed = true;
                return;
            }
            if (c == '"' || c == '\\') {
                sb_putc(b, '\\');
            }
            sb_putc(b, (char)c);
        }
        sb_putc(b, '"');
        return;
    case SF_TOKEN:
        if (it->len == 0 || !(is_alpha((unsigned char)it->str[0]) || it->str[0] == '*')) {
            b->failed = true;
            return;
        }
        for (size_t i = 0; i < it->len; i++) {
            unsigned char c = (unsigned char)it->str[i];
            if (!(is_tchar(c) || c == ':' || c == '/')) {
                b->failed = true;
                return;
            }
        }
        sb_put(b, it->str, it->len);
        return;
    case SF_BYTES: {
        char *enc = NULL;
        size_t n = 0;
        if (sf_base64_encode((const unsigned char *)it->str, it->len, &enc, &n) != 0) {
            b->failed = true;
            return;
        }
        sb_putc(b, ':');
        sb_put(b, enc, n);
        sb_putc(b, ':');
        free(enc);
        return;
    }
    case SF_BOOLEAN:
        if (it->num != 0 && it->num != 1) {
            b->failed = true;
            return;
        }
        sb_puts(b, it->num ? "?1" : "?0");
        return;
    case SF_DISPLAY:
        if (!utf8_valid((const unsigned char *)it->str, it->len)) {
            b->failed = true;
            return;
        }
        sb_puts(b, "%\"");
        for (size_t i = 0; i < it->len; i++) {
            unsigned char c = (unsigned char)it->str[i];
            if (c == '%' || c == '"' || c < 0x20 || c > 0x7e) {
                char e[3] = {'%', hex[c >> 4], hex[c & 15]};
                sb_put(b, e, 3);
            } else {
                sb_putc(b, (char)c);
            }
        }
        sb_putc(b, '"');
        return;
    case SF_INNER_LIST:
        break;
    }
    b->failed = true;
}

static void ser_params(struct sbuf *b, const struct sf_item *it)
{
    for (size_t i = 0; i < it->n_params; i++) {
        const struct sf_param *pm = &it->params[i];
        sb_putc(b, ';');
        ser_key(b, pm->key);
        if (pm->value.type == SF_INNER_LIST || pm->value.n_params > 0) {
            b->failed = true;
            return;
        }
        if (pm->value.type == SF_BOOLEAN && pm->value.num == 1) {
            continue; /* a true parameter is just its key */
        }
        sb_putc(b, '=');
        ser_bare(b, &pm->value);
    }
}

/* Item (bare + params) or Inner List (members + params). */
static void ser_item(struct sbuf *b, const struct sf_item *it)
{
    if (it->type == SF_INNER_LIST) {
        sb_putc(b, '(');
        for (size_t i = 0; i < it->n_inner; i++) {
            if (it->inner[i].type == SF_INNER_LIST) {
                b->failed = true;
                return;
            }
            if (i > 0) {
                sb_putc(b, ' ');
            }
            ser_item(b, &it->inner[i]);
        }
        sb_putc(b, ')');
    } else {
        ser_bare(b, it);
    }
    ser_params(b, it);
}

static int finish(struct sbuf *b, char **out, size_t *outlen)
{
    sb_put(b, "", 0); /* an empty List or Dictionary still yields "" */
    if (b->failed || b->d.err != DYNBUF_OK) {
        dynbuf_cleanup(&b->d);
        *out = NULL;
        return -1;
    }
    *out = b->d.s;
    if (outlen != NULL) {
        *outlen = b->d.len;
    }
    return 0;
}

int sf_serialize_item(const struct sf_item *it, char **out, size_t *outlen)
{
    struct sbuf b = {.d = {.max = SF_MAX_OUTPUT_BYTES}};
    ser_item(&b, it);
    return finish(&b, out, outlen);
}

int sf_serialize(const struct sf_field *f, char **out, size_t *outlen)
{
    struct sbuf b = {.d = {.max = SF_MAX_OUTPUT_BYTES}};
    if (f->type == SF_FIELD_ITEM && f->n_members != 1) {
        b.failed = true;
    }
    for (size_t i = 0; i < f->n_members && !b.failed; i++) {
        const struct sf_member *m = &f->members[i];
        if (i > 0) {
            sb_puts(&b, ", ");
        }
        if (f->type == SF_FIELD_ITEM && m->value.type == SF_INNER_LIST) {
            b.failed = true;
        } else if (f->type == SF_FIELD_DICT) {
            ser_key(&b, m->key);
            if (m->value.type == SF_BOOLEAN && m->value.num == 1) {
                ser_params(&b, &m->value); /* a true member is its key and params */
            } else {
                sb_putc(&b, '=');
                ser_item(&b, &m->value);
            }
        } else {
            ser_item(&b, &m->value);
        }
    }
    return finish(&b, out, outlen);
}
