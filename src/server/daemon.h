/* SPDX-License-Identifier: MIT */
/* The daemon as one object, for main.c only: start order, the loop, signals (graceful shutdown on
 * SIGTERM/SIGINT, reload on SIGHUP) and cleanup. What requests share at run time is its
 * struct runtime (runtime.h). */
#ifndef ROOST_SERVER_DAEMON_H
#define ROOST_SERVER_DAEMON_H

#include <stddef.h>

#include "server/config.h"
#include "server/runtime.h"

struct event;
struct listener;

struct daemon {
    struct runtime rt;
    const struct config_source *source; /* how rt.cfg was built; SIGHUP rebuilds from it */
    struct listener *listener;
    struct event *sig_term, *sig_int, *sig_hup;
};

/* Starts listening and every component. Writes the ready file (if any) last. `source` (borrowed,
 * must outlive the daemon) is re-read on SIGHUP to reload the auth keys. On failure, err is set
 * and daemon_cleanup() must still run. 0 or -1. */
int daemon_start(struct daemon *d, struct config *cfg, const struct config_source *source,
                 const char *ready_file, char *err, size_t errlen);
/* SIGHUP: rebuilds the config from its sources, takes every reloadable key (doc/CONFIG.md) and
 * swaps in a new auth (keys, issuer, audience, empty token cache). On any error nothing changes
 * and the error is logged. Loop thread only. Returns 0 or -1. */
int daemon_reload(struct daemon *d);
/* Runs the loop until SIGTERM/SIGINT has drained every in-flight request. 0 or -1. */
int daemon_run(struct daemon *d);
void daemon_cleanup(struct daemon *d);

#endif
