-- SPDX-License-Identifier: MIT
-- Scheduler indexes that a claim and an ack barely touch (doc/internals.md, "Indexes"). The
-- indexes that led with `status` (inbox_claim, inbox_scavenge, inbox_due, inbox_expiry,
-- inbox_status_seq) were each rewritten by every claim and every ack, and that upkeep was most of
-- mysqld's CPU per event (doc/BENCHMARKS.md, MariaDB). MariaDB has no partial indexes, so each
-- index now leads with a column that is non-NULL only in the states it serves: stored generated
-- columns, computed by the server on every write from `status` and the column they copy, so no
-- statement sets them and they cannot drift. InnoDB rewrites a secondary index entry only when
-- one of its columns changes value; with these a claim rewrites inbox_open and inbox_lease, an
-- ack only inbox_lease (plus inbox_ttl for an event with a TTL).
--
-- The status numbers are those of store_sql.h (0 scheduled, 1 pending, 2 claimed, 3 completed,
-- 4 quarantined, 5 expired), which never change (0001).
--   open_state       status while scheduled, pending or quarantined: the claim (pending, per
--                    agent in claim order), the quarantine listing and purge, the per-status
--                    counts of the metrics snapshot and of the agents listing
--   ready_priority   priority while pending (NULL otherwise, so a quarantined agent's rows sit in
--                    seq order right after its pending ones)
--   lease_expires_at claim_expires_at while claimed: the scavenger, release-all, claimed counts
--   due_at           available_at while scheduled: the due-promoter
--   ttl_at           expires_at while scheduled or pending: TTL expiry
-- One ALTER: one table copy fills the new columns of every existing row (the backfill), and
-- every clause is IF [NOT] EXISTS, so the migration is simply run again if it was interrupted.
-- statement
ALTER TABLE inbox
    ADD COLUMN IF NOT EXISTS open_state TINYINT
        AS (IF(status IN (0, 1, 4), status, NULL)) PERSISTENT,
    ADD COLUMN IF NOT EXISTS ready_priority SMALLINT AS (IF(status = 1, priority, NULL)) PERSISTENT,
    ADD COLUMN IF NOT EXISTS lease_expires_at BIGINT
        AS (IF(status = 2, claim_expires_at, NULL)) PERSISTENT,
    ADD COLUMN IF NOT EXISTS due_at BIGINT AS (IF(status = 0, available_at, NULL)) PERSISTENT,
    ADD COLUMN IF NOT EXISTS ttl_at BIGINT AS (IF(status IN (0, 1), expires_at, NULL)) PERSISTENT,
    ADD INDEX IF NOT EXISTS inbox_open
        (open_state, tenant_id, agent_id, ready_priority DESC, seq, available_at),
    ADD INDEX IF NOT EXISTS inbox_lease (lease_expires_at, claimed_at),
    ADD INDEX IF NOT EXISTS inbox_due_at (due_at),
    ADD INDEX IF NOT EXISTS inbox_ttl (ttl_at),
    DROP INDEX IF EXISTS inbox_claim,
    DROP INDEX IF EXISTS inbox_scavenge,
    DROP INDEX IF EXISTS inbox_due,
    DROP INDEX IF EXISTS inbox_expiry,
    DROP INDEX IF EXISTS inbox_status_seq
