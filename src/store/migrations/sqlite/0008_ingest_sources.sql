-- SPDX-License-Identifier: MIT
-- Inbound webhook sources and their receipt log (DESIGN §6.5). source_id is the unguessable id of
-- the public URL /ingest/{source_id}, unique over every tenant (an ingest names no tenant).
-- config: the scheme's options and the routing as JSON text. secret: the current secret (or
-- token); old_secret stays valid until old_until (a rotation's overlap).
CREATE TABLE ingest_sources (
    source_id  TEXT    NOT NULL PRIMARY KEY,
    tenant_id  TEXT    NOT NULL,
    name       TEXT    NOT NULL,
    scheme     TEXT    NOT NULL,
    config     TEXT    NOT NULL,
    secret     TEXT    NOT NULL,
    old_secret TEXT,
    old_until  INTEGER,
    created_at INTEGER NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE INDEX ingest_sources_tenant ON ingest_sources (tenant_id, source_id);

-- One row per delivery, accepted, duplicate or refused, pruned after ingest.receipt_retention_s.
CREATE TABLE ingest_receipts (
    tenant_id   TEXT    NOT NULL,
    source_id   TEXT    NOT NULL,
    receipt_id  TEXT    NOT NULL,
    at          INTEGER NOT NULL,
    outcome     TEXT    NOT NULL,
    reason      TEXT    NOT NULL,
    delivery_id TEXT,
    size        INTEGER NOT NULL,
    peer        TEXT    NOT NULL,
    events      INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, source_id, receipt_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX ingest_receipts_at ON ingest_receipts (at);
