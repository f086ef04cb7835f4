/* SPDX-License-Identifier: MIT */
/* Building request targets: a bounded string builder, server URL normalisation and the API paths
 * with every caller-supplied segment validated and percent-encoded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/ids.h"
#include "sdk/sdk.h"

#include "common/banned.h"

void sdk_str_init(struct sdk_str *s, size_t max)
{
    s->data = NULL;
    s->len = 0;
    s->cap = 0;
    s->max = max != 0 ? max : (size_t)SDK_MAX_URL_BYTES * 4;
    s->rc = ROOST_OK;
}

void sdk_str_cleanup(struct sdk_str *s)
{
    free(s->data);
    s->data = NULL;
    s->len = 0;
    s->cap = 0;
}

char *sdk_str_take(struct sdk_str *s)
{
    char *p = NULL;
    if (s->rc == ROOST_OK) {
        if (s->data == NULL) {
            p = calloc(1, 1);
        } else {
            p = s->data;
            s->data = NULL;
        }
    }
    sdk_str_cleanup(s);
    return p;
}

/* Makes room for n more bytes plus the NUL. */
static bool str_reserve(struct sdk_str *s, size_t n)
{
    if (s->rc != ROOST_OK) {
        return false;
    }
    if (n > s->max || s->len > s->max - n) {
        s->rc = ROOST_EINVAL;
        return false;
    }
    size_t need = s->len + n + 1;
    if (need <= s->cap) {
        return true;
    }
    size_t cap = s->cap != 0 ? s->cap : 64;
    while (cap < need) {
        cap *= 2;
    }
    char *p = realloc(s->data, cap);
    if (p == NULL) {
        s->rc = ROOST_ENOMEM;
        return false;
    }
    s->data = p;
    s->cap = cap;
    return true;
}

void sdk_str_append(struct sdk_str *s, const char *p, size_t n)
{
    if (!str_reserve(s, n)) {
        return;
    }
    if (n > 0) {
        memcpy(s->data + s->len, p, n);
    }
    s->len += n;
    s->data[s->len] = '\0';
}

void sdk_str_appendz(struct sdk_str *s, const char *z)
{
    sdk_str_append(s, z, strlen(z));
}

static bool unreserved(unsigned char ch)
{
    /* Explicit ranges: isalnum() depends on the locale. */
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

void sdk_str_append_escaped(struct sdk_str *s, const char *z)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)z; *p != '\0'; p++) {
        if (unreserved(*p)) {
            sdk_str_append(s, (const char *)p, 1);
        } else {
            char enc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            sdk_str_append(s, enc, 3);
        }
    }
}

void sdk_str_appendf(struct sdk_str *s, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) {
        s->rc = ROOST_EINVAL;
        return;
    }
    if ((size_t)n < sizeof small) {
        sdk_str_append(s, small, (size_t)n);
        return;
    }
    if (!str_reserve(s, (size_t)n)) {
        return;
    }
    va_start(ap, fmt);
    vsnprintf(s->data + s->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    s->len += (size_t)n;
}

int sdk_url_normalize(const char *url, char **out)
{
    *out = NULL;
    if (url == NULL) {
        return ROOST_EINVAL;
    }
    size_t len = strlen(url);
    if (len == 0 || len > SDK_MAX_URL_BYTES) {
        return ROOST_EINVAL;
    }
    for (size_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)url[i];
        if (ch <= 0x20 || ch == 0x7f) {
            return ROOST_EINVAL; /* no spaces, no control characters (header/URL injection) */
        }
    }
    const char *sep = strstr(url, "://");
    bool bare = sep == NULL;
    if (!bare) {
        size_t scheme_len = (size_t)(sep - url);
        bool http = scheme_len == 4 && strncasecmp(url, "http", 4) == 0;
        bool https = scheme_len == 5 && strncasecmp(url, "https", 5) == 0;
        if (!http && !https) {
            return ROOST_EINVAL;
        }
        if (sep[3] == '\0' || sep[3] == '/') {
            return ROOST_EINVAL; /* no host */
        }
    }
    while (len > 0 && url[len - 1] == '/') {
        len--;
    }
    if (len == 0) {
        return ROOST_EINVAL;
    }
    struct sdk_str s;
    sdk_str_init(&s, SDK_MAX_URL_BYTES + 16);
    if (bare) {
        sdk_str_appendz(&s, "http://");
    }
    sdk_str_append(&s, url, len);
    int rc = s.rc;
    *out = sdk_str_take(&s);
    return *out != NULL ? ROOST_OK : rc;
}

int sdk_path_agent(struct sdk_str *s, const char *agent_id, const char *tail)
{
    if (agent_id == NULL || !ids_valid_name(agent_id, strlen(agent_id))) {
        return ROOST_EAGENTID;
    }
    sdk_str_appendz(s, "/api/v1/agents/");
    sdk_str_append_escaped(s, agent_id);
    sdk_str_appendz(s, tail);
    return s->rc;
}

int sdk_path_event(struct sdk_str *s, const char *agent_id, const char *event_id,
                   const char *action)
{
    if (event_id == NULL || event_id[0] == '\0' || strlen(event_id) > SDK_MAX_ID_BYTES) {
        return ROOST_EEVENTID;
    }
    int rc = sdk_path_agent(s, agent_id, "/inbox/");
    if (rc != ROOST_OK) {
        return rc;
    }
    sdk_str_append_escaped(s, event_id);
    sdk_str_appendz(s, "/");
    sdk_str_appendz(s, action);
    return s->rc;
}
