-- SPDX-License-Identifier: MIT
-- Pending rows only, for the metrics snapshot (store op metrics_snapshot): per-tenant pending
-- counts, the oldest available_at, and the agents with the deepest inboxes, all read from this
-- index alone. Without it the snapshot walked every row, the completed history of the retention
-- window included, once per refresh. `status` is a key column only so the index covers the
-- queries (SQLite 3.40 does not count a partial index's WHERE column as covered). Cost: one
-- index entry per pending row, written when a row becomes pending and removed when it is claimed
-- or expires.
CREATE INDEX inbox_pending ON inbox (tenant_id, agent_id, available_at, status) WHERE status = 1;
