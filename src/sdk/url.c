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

int sdk_buf_rc(const struct dynbuf *b)
{
    switch (b->err) {
    case DYNBUF_OK:
        return ROOST_OK;
    case DYNBUF_ENOMEM:
        return ROOST_ENOMEM;
    default:
        return ROOST_EINVAL;
    }
}

static bool unreserved(unsigned char ch)
{
    /* Explicit ranges: isalnum() depends on the locale. */
    return (ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
           ch == '-' || ch == '.' || ch == '_' || ch == '~';
}

void sdk_add_escaped(struct dynbuf *b, const char *z)
{
    static const char hex[] = "0123456789ABCDEF";
    for (const unsigned char *p = (const unsigned char *)z; *p != '\0'; p++) {
        if (unreserved(*p)) {
            dynbuf_addc(b, (char)*p);
        } else {
            char enc[3] = {'%', hex[*p >> 4], hex[*p & 15]};
            dynbuf_add(b, enc, 3);
        }
    }
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
    struct dynbuf b;
    dynbuf_init(&b, SDK_MAX_URL_BYTES + 16);
    if (bare) {
        dynbuf_adds(&b, "http://");
    }
    dynbuf_add(&b, url, len);
    int rc = sdk_buf_rc(&b);
    if (rc != ROOST_OK) {
        dynbuf_cleanup(&b);
        return rc;
    }
    *out = b.s; /* never NULL: len > 0 was appended */
    return ROOST_OK;
}

int sdk_path_agent(struct dynbuf *s, const char *agent_id, const char *tail)
{
    if (agent_id == NULL || !ids_valid_name(agent_id, strlen(agent_id))) {
        return ROOST_EAGENTID;
    }
    dynbuf_adds(s, "/api/v1/agents/");
    sdk_add_escaped(s, agent_id);
    dynbuf_adds(s, tail);
    return sdk_buf_rc(s);
}

bool sdk_id_ok(const char *id)
{
    return id != NULL && id[0] != '\0' && strlen(id) <= SDK_MAX_ID_BYTES;
}

int sdk_path_event(struct dynbuf *s, const char *agent_id, const char *event_id, const char *action)
{
    if (!sdk_id_ok(event_id)) {
        return ROOST_EEVENTID;
    }
    int rc = sdk_path_agent(s, agent_id, "/inbox/");
    if (rc != ROOST_OK) {
        return rc;
    }
    sdk_add_escaped(s, event_id);
    dynbuf_adds(s, "/");
    dynbuf_adds(s, action);
    return sdk_buf_rc(s);
}
