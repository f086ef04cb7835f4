-- SPDX-License-Identifier: MIT
-- Fewer index writes per event (doc/BENCHMARKS.md, "Fewer B-trees per event"). inbox_claim held
-- every row with `status` in its key, so a claim (1 → 2) and an ack (2 → 3) each deleted and
-- re-inserted the row's entry, and inbox_pending held the pending rows a second time. Now one
-- partial index holds the pending rows: the claim walk reads it in claim order (priority DESC,
-- seq), and the metrics snapshot reads it alone (available_at and status as trailing columns
-- make it covering: SQLite 3.40 does not count a partial index's WHERE column as covered). A
-- claim removes the row's entry, an ack touches no claim index at all. The admin per-agent counts
-- of scheduled and claimed rows keep an index each (two small partial indexes, one entry per row
-- in that status, `status` again a key column so that they cover the counts), so an agent
-- listing never walks an agent's completed history.
-- Index entries written per full cycle (publish, claim, ack; table rows aside): 11 before, 8 now.
DROP INDEX inbox_claim;
DROP INDEX inbox_pending;
CREATE INDEX inbox_claim ON inbox (tenant_id, agent_id, priority DESC, seq, available_at, status)
    WHERE status = 1;
CREATE INDEX inbox_claimed ON inbox (tenant_id, agent_id, status) WHERE status = 2;
CREATE INDEX inbox_scheduled ON inbox (tenant_id, agent_id, status) WHERE status = 0;
