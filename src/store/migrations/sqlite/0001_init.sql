-- SPDX-License-Identifier: MIT
-- Roost schema for SQLite (DESIGN §4.1). Times are INTEGER Unix milliseconds; status is the
-- enum store_status value (0 scheduled, 1 pending, 2 claimed, 3 completed, 4 quarantined,
-- 5 expired). agents.next_seq is the NEXT sequence number to assign (starts at 1), so the
-- agent's head is next_seq - 1.

CREATE TABLE tenants (
    tenant_id  TEXT    NOT NULL PRIMARY KEY,
    name       TEXT,
    created_at INTEGER NOT NULL,
    settings   TEXT    NOT NULL DEFAULT '{}'
) STRICT;

CREATE TABLE agents (
    tenant_id          TEXT    NOT NULL,
    agent_id           TEXT    NOT NULL,
    next_seq           INTEGER NOT NULL DEFAULT 1,
    purged_through_seq INTEGER NOT NULL DEFAULT 0,
    state              TEXT    NOT NULL DEFAULT '{}',
    state_cursor       INTEGER NOT NULL DEFAULT 0,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    last_seen_at       INTEGER,
    PRIMARY KEY (tenant_id, agent_id)
) STRICT;

-- A rowid table (not WITHOUT ROWID): payloads may be large, and the scheduler's partial indexes
-- stay small by pointing at rowids.
CREATE TABLE inbox (
    tenant_id        TEXT    NOT NULL,
    agent_id         TEXT    NOT NULL,
    seq              INTEGER NOT NULL,
    event_id         TEXT    NOT NULL UNIQUE,
    status           INTEGER NOT NULL,
    priority         INTEGER NOT NULL DEFAULT 0,
    correlation_id   TEXT,
    idempotency_key  TEXT,
    payload          TEXT,
    created_at       INTEGER NOT NULL,
    available_at     INTEGER NOT NULL,
    expires_at       INTEGER,
    claimed_at       INTEGER,
    claim_expires_at INTEGER,
    lease_token      TEXT,
    consumer         TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    timeouts         INTEGER NOT NULL DEFAULT 0,
    nacks            INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT,
    completed_at     INTEGER,
    PRIMARY KEY (tenant_id, agent_id, seq)
) STRICT;

-- Idempotency: one row per (tenant, agent, key).
CREATE UNIQUE INDEX inbox_idempotency ON inbox (tenant_id, agent_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- Claim: an exact-match walk in claim order (priority DESC, seq ASC), no sort step.
CREATE INDEX inbox_claim ON inbox (tenant_id, agent_id, status, priority DESC, seq);
-- The scheduler's and the admin's indexes are partial: each holds only the rows in the one status
-- it looks for, so a publish or an ack maintains as few B-trees as possible (every index is pages
-- written per commit).
-- Scavenger: expired leases.
CREATE INDEX inbox_scavenge ON inbox (claim_expires_at) WHERE status = 2;
-- Due delayed events.
CREATE INDEX inbox_due ON inbox (available_at) WHERE status = 0;
-- TTL expiry of events not yet claimed.
CREATE INDEX inbox_expiry ON inbox (expires_at) WHERE status IN (0, 1) AND expires_at IS NOT NULL;
-- Admin quarantine listing, paginated by (agent_id, seq).
CREATE INDEX inbox_quarantine ON inbox (tenant_id, agent_id, seq) WHERE status = 4;
