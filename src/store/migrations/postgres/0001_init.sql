-- Roost schema for PostgreSQL (the store's third dialect, src/store/store_pg*.c). The migrator
-- creates the schema (store URL parameter schema=, default "roost"), puts it first on the
-- search_path, and runs each file in one transaction under an advisory lock, so a file is
-- applied whole or not at all. Status numbers are those of src/store/store_sql.h.
--
-- Indexes are partial by status, as on SQLite: a row sits in the index of its state only, so
-- completed rows (the history retention deletes) are in none of the scheduler's indexes.
CREATE TABLE tenants (
    tenant_id  TEXT   NOT NULL PRIMARY KEY,
    name       TEXT,
    created_at BIGINT NOT NULL,
    settings   TEXT   NOT NULL DEFAULT '{}'
);

-- Every publish updates its agent's row (next_seq): no indexed column changes, so with free
-- space on the page the update is HOT (no index entry, pruned on the page).
CREATE TABLE agents (
    tenant_id          TEXT   NOT NULL,
    agent_id           TEXT   NOT NULL,
    next_seq           BIGINT NOT NULL DEFAULT 1,
    purged_through_seq BIGINT NOT NULL DEFAULT 0,
    state              TEXT   NOT NULL DEFAULT '{}',
    state_cursor       BIGINT NOT NULL DEFAULT 0,
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    last_seen_at       BIGINT,
    PRIMARY KEY (tenant_id, agent_id)
) WITH (fillfactor = 70);

CREATE TABLE inbox (
    tenant_id        TEXT    NOT NULL,
    agent_id         TEXT    NOT NULL,
    seq              BIGINT  NOT NULL,
    event_id         TEXT    NOT NULL,
    status           INTEGER NOT NULL,
    priority         INTEGER NOT NULL DEFAULT 0,
    correlation_id   TEXT,
    idempotency_key  TEXT,
    payload          TEXT,
    created_at       BIGINT  NOT NULL,
    available_at     BIGINT  NOT NULL,
    expires_at       BIGINT,
    claimed_at       BIGINT,
    claim_expires_at BIGINT,
    lease_token      TEXT,
    consumer         TEXT,
    attempts         INTEGER NOT NULL DEFAULT 0,
    timeouts         INTEGER NOT NULL DEFAULT 0,
    nacks            INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT,
    completed_at     BIGINT,
    PRIMARY KEY (tenant_id, agent_id, seq)
);

CREATE UNIQUE INDEX inbox_event ON inbox (event_id);
CREATE UNIQUE INDEX inbox_idempotency ON inbox (tenant_id, agent_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- The claim walk in claim order (pending rows only), the metrics' pending counts.
CREATE INDEX inbox_claim ON inbox (tenant_id, agent_id, priority DESC, seq) WHERE status = 1;
CREATE INDEX inbox_claimed ON inbox (tenant_id, agent_id) WHERE status = 2;
CREATE INDEX inbox_scheduled ON inbox (tenant_id, agent_id) WHERE status = 0;
CREATE INDEX inbox_scavenge ON inbox (claim_expires_at) WHERE status = 2;
CREATE INDEX inbox_due ON inbox (available_at) WHERE status = 0;
CREATE INDEX inbox_expiry ON inbox (expires_at) WHERE status IN (0, 1) AND expires_at IS NOT NULL;
CREATE INDEX inbox_quarantine ON inbox (tenant_id, agent_id, seq) WHERE status = 4;
CREATE INDEX inbox_correlation ON inbox (tenant_id, correlation_id, agent_id, seq)
    WHERE correlation_id IS NOT NULL;

CREATE TABLE keys (
    tenant_id  TEXT   NOT NULL,
    key_id     TEXT   NOT NULL,
    agent_id   TEXT   NOT NULL,
    alg        TEXT   NOT NULL,
    material   TEXT   NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT,
    PRIMARY KEY (tenant_id, key_id)
);

CREATE TABLE nonces (
    tenant_id  TEXT   NOT NULL,
    key_id     TEXT   NOT NULL,
    nonce      TEXT   NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, key_id, nonce)
);
CREATE INDEX nonces_expiry ON nonces (expires_at);

CREATE TABLE endpoints (
    tenant_id       TEXT    NOT NULL,
    endpoint_id     TEXT    NOT NULL,
    agent_id        TEXT    NOT NULL,
    url             TEXT    NOT NULL,
    secret          TEXT    NOT NULL,
    status          INTEGER NOT NULL DEFAULT 0,
    disabled_reason TEXT,
    created_at      BIGINT  NOT NULL,
    updated_at      BIGINT  NOT NULL,
    failing_since   BIGINT,
    PRIMARY KEY (tenant_id, endpoint_id)
);
CREATE UNIQUE INDEX endpoints_agent ON endpoints (tenant_id, agent_id);

CREATE TABLE webhook_attempts (
    tenant_id     TEXT    NOT NULL,
    endpoint_id   TEXT    NOT NULL,
    attempt_id    TEXT    NOT NULL,
    agent_id      TEXT    NOT NULL,
    event_id      TEXT    NOT NULL,
    at            BIGINT  NOT NULL,
    attempt       INTEGER NOT NULL,
    status_code   INTEGER NOT NULL,
    latency_ms    BIGINT  NOT NULL,
    error_class   TEXT    NOT NULL,
    response_head TEXT,
    PRIMARY KEY (tenant_id, endpoint_id, attempt_id)
);
CREATE INDEX webhook_attempts_event ON webhook_attempts (tenant_id, event_id, attempt_id);
CREATE INDEX webhook_attempts_at ON webhook_attempts (at);

CREATE TABLE devices (
    tenant_id        TEXT    NOT NULL,
    device_id        TEXT    NOT NULL,
    agent_id         TEXT    NOT NULL,
    name             TEXT    NOT NULL,
    address          TEXT    NOT NULL,
    scope_requested  TEXT    NOT NULL,
    scope_granted    TEXT,
    user_code        TEXT    NOT NULL,
    device_code_hash TEXT    NOT NULL,
    status           INTEGER NOT NULL,
    code_expires_at  BIGINT  NOT NULL,
    interval_s       INTEGER NOT NULL,
    last_poll_at     BIGINT  NOT NULL DEFAULT 0,
    created_at       BIGINT  NOT NULL,
    decided_at       BIGINT,
    decided_by       TEXT,
    revoked_reason   TEXT,
    refresh_gen      INTEGER NOT NULL DEFAULT 0,
    last_refresh_at  BIGINT,
    PRIMARY KEY (tenant_id, device_id)
);
CREATE UNIQUE INDEX devices_user_code ON devices (tenant_id, user_code);
CREATE UNIQUE INDEX devices_device_code ON devices (tenant_id, device_code_hash);

CREATE TABLE refresh_tokens (
    tenant_id  TEXT    NOT NULL,
    token_hash TEXT    NOT NULL,
    device_id  TEXT    NOT NULL,
    gen        INTEGER NOT NULL,
    created_at BIGINT  NOT NULL,
    used_at    BIGINT,
    PRIMARY KEY (tenant_id, token_hash)
);

CREATE TABLE ingest_sources (
    source_id  TEXT   NOT NULL PRIMARY KEY,
    tenant_id  TEXT   NOT NULL,
    name       TEXT   NOT NULL,
    scheme     TEXT   NOT NULL,
    config     TEXT   NOT NULL,
    secret     TEXT   NOT NULL,
    old_secret TEXT,
    old_until  BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL
);
CREATE INDEX ingest_sources_tenant ON ingest_sources (tenant_id, source_id);

CREATE TABLE ingest_receipts (
    tenant_id   TEXT    NOT NULL,
    source_id   TEXT    NOT NULL,
    receipt_id  TEXT    NOT NULL,
    at          BIGINT  NOT NULL,
    outcome     TEXT    NOT NULL,
    reason      TEXT    NOT NULL,
    delivery_id TEXT,
    size        BIGINT  NOT NULL,
    peer        TEXT    NOT NULL,
    events      INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, source_id, receipt_id)
);
CREATE INDEX ingest_receipts_at ON ingest_receipts (at);

-- The change log the other roostd nodes follow (store.h, tail): one row per agent a transaction
-- touched, written in that transaction's COMMIT round trip. Pruned by retention.
CREATE TABLE roost_changes (
    id        BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant_id TEXT   NOT NULL,
    agent_id  TEXT   NOT NULL,
    head      BIGINT NOT NULL,
    at_ms     BIGINT NOT NULL,
    -- the roostd process that wrote the row (its tailer skips it); 0 = an application
    origin    BIGINT NOT NULL DEFAULT 0
);
CREATE INDEX roost_changes_at ON roost_changes (at_ms);
