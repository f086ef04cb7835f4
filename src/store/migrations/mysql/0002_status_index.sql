-- SPDX-License-Identifier: MIT
-- The metrics snapshot (store op metrics_snapshot, every metrics.refresh_ms) groups the rows of
-- one status at a time by tenant and agent: an index leading with status lets it read only the
-- unfinished rows, never the completed history kept for the retention window.
-- statement
CREATE INDEX IF NOT EXISTS inbox_status ON inbox (status, tenant_id, agent_id, available_at)
