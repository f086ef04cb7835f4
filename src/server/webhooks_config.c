/* SPDX-License-Identifier: MIT */
/* The retry schedule of webhooks.retry_schedule_s (webhooks_config.h). */
#include "server/webhooks_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/banned.h"

int webhooks_parse_schedule(const char *text, int64_t *out, size_t *n, char *err, size_t errlen)
{
    *n = 0;
    const char *p = text != NULL ? text : "";
    while (*p != '\0') {
        p += strspn(p, " \t");
        char *end;
        long long v = strtoll(p, &end, 10);
        if (end == p || v < 0 || v > 31536000) {
            snprintf(err, errlen,
                     "webhooks.retry_schedule_s: expected seconds (0..31536000) separated by "
                     "commas");
            return -1;
        }
        if (*n == WEBHOOKS_SCHEDULE_MAX) {
            snprintf(err, errlen, "webhooks.retry_schedule_s: at most %d delays",
                     WEBHOOKS_SCHEDULE_MAX);
            return -1;
        }
        out[(*n)++] = v;
        p = end + strspn(end, " \t");
        if (*p == ',') {
            p++;
        } else if (*p != '\0') {
            snprintf(err, errlen, "webhooks.retry_schedule_s: unexpected '%c'", *p);
            return -1;
        }
    }
    if (*n == 0) {
        snprintf(err, errlen, "webhooks.retry_schedule_s: at least one delay");
        return -1;
    }
    return 0;
}

int webhooks_schedule_attempts(const char *text)
{
    int64_t schedule[WEBHOOKS_SCHEDULE_MAX];
    size_t n = 0;
    char err[128];
    if (webhooks_parse_schedule(text, schedule, &n, err, sizeof err) != 0) {
        return 0;
    }
    return (int)n + 1;
}
