/* SPDX-License-Identifier: MIT */
/* The webhook part of the store conformance suite (store_webhooks.h), run by
 * test_store_conformance.c on a fresh, migrated store of each backend. */
#ifndef ROOST_TEST_CONFORMANCE_WEBHOOKS_H
#define ROOST_TEST_CONFORMANCE_WEBHOOKS_H

struct store;

void conformance_webhooks_endpoints(struct store *st);
void conformance_webhooks_failure_run(struct store *st);
void conformance_webhooks_attempts(struct store *st);

#endif
