-- SPDX-License-Identifier: MIT
-- "What happened to event X?": operators find a tenant's events by correlation id
-- (GET /api/v1/admin/events?correlation_id=, store_events_by_correlation). MariaDB has no partial
-- indexes, so every row gets an entry (a NULL key for rows without a correlation id); the key is
-- correlation_id alone: InnoDB appends the primary key (tenant_id, agent_id, seq) to it, which
-- gives the tenant match and the (agent, seq) order without another column. No lifecycle
-- statement changes correlation_id, so a claim or an ack never rewrites the entry.
-- statement
ALTER TABLE inbox ADD INDEX IF NOT EXISTS inbox_correlation (correlation_id);
