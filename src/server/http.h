/* SPDX-License-Identifier: MIT */
/* The HTTP front of roostd (evhttp): listener, router, request parsing and replies. */
#ifndef ROOST_HTTP_H
#define ROOST_HTTP_H

#include <stddef.h>

struct server;

/* Creates the evhttp, binds cfg->listen (backlog 4096) and fills srv->base_url. */
int http_start(struct server *srv, char *err, size_t errlen);
/* Closes the listening socket; established connections keep being served. */
void http_stop_accepting(struct server *srv);
void http_free(struct server *srv);

#endif
