-- SPDX-License-Identifier: MIT
-- Every secondary index holding `status` is rewritten by each claim and each ack (two of the three
-- writes of an event's life), and that upkeep was the largest share of mysqld's CPU per event
-- (doc/BENCHMARKS.md, MariaDB: dropping five such indexes cut it by ~40 %). inbox_quarantine
-- (tenant_id, status, agent_id, seq) and inbox_status (status, tenant_id, agent_id, available_at)
-- become one index that serves both the metrics snapshot (covering: counts and the oldest
-- available_at per tenant and agent, one status at a time) and the admin quarantine listing and
-- purge (status, tenant, agent in seq order). Numbered 0006: 0005 is taken by another branch.
-- statement
ALTER TABLE inbox ADD INDEX IF NOT EXISTS inbox_status_seq (status, tenant_id, agent_id, seq, available_at)
-- statement
ALTER TABLE inbox DROP INDEX IF EXISTS inbox_quarantine, DROP INDEX IF EXISTS inbox_status
