/* SPDX-License-Identifier: MIT */
/* The static files roostd serves: roost.js (/sdk/roost.js) and the dashboard (/ui/...). They are
 * embedded at build time by cmake/embed_static.cmake from sdk/js/ and ui/, so an install carries
 * no file paths. */
#ifndef ROOST_SERVER_STATIC_FILES_H
#define ROOST_SERVER_STATIC_FILES_H

#include <stddef.h>

struct static_file {
    const char *path;         /* URL path, e.g. "/sdk/roost.js" */
    const char *content_type; /* with charset for text */
    const unsigned char *data;
    size_t len;
    const char *etag; /* strong ETag, quoted */
};

extern const struct static_file static_files[];
extern const size_t static_files_count;

#endif
