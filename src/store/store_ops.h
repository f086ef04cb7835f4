/* SPDX-License-Identifier: MIT */
/* The store operations written once for every backend, by subject (store_<subject>.c): the
 * entries of the operations table (struct store_ops; semantics in store.h). Each is one function
 * with its statements beside it in every dialect (store_stmt.h), run through the store's dialect
 * (store_lifecycle.h: struct store_dialect). Internal to src/store/. */
#ifndef ROOST_STORE_OPS_H
#define ROOST_STORE_OPS_H

#include <stdbool.h>
#include <stdint.h>

#include "store/store.h"

/* ---- inbox and cursor reads (store_inbox.c) ---- */
int store_inbox_peek(struct store *st, const char *tenant_id, const char *agent_id, int64_t now_ms,
                     struct store_event *out, bool *found);

#endif
