-- SPDX-License-Identifier: MIT
-- "What happened to event X?": operators find a tenant's events by correlation id
-- (GET /api/v1/admin/events?correlation_id=, store_events_by_correlation). A partial index: only
-- rows that carry a correlation id have an entry, so publishes without one write nothing more.
CREATE INDEX inbox_correlation ON inbox (tenant_id, correlation_id, agent_id, seq)
    WHERE correlation_id IS NOT NULL;
