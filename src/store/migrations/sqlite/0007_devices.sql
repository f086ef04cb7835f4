-- SPDX-License-Identifier: MIT
-- Device login (RFC 8628) and rotating refresh tokens (doc/CREDENTIALS.md). A device is one
-- enrolment of one agent: its authorization request (user code, hashed device code, what it asked
-- for, from where), the operator's decision, and its refresh-token family (the device id). Codes
-- and tokens are stored only as SHA-256 hex; status: 0 pending, 1 approved, 2 denied, 3 revoked.
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
    code_expires_at  INTEGER NOT NULL,
    interval_s       INTEGER NOT NULL,
    last_poll_at     INTEGER NOT NULL DEFAULT 0,
    created_at       INTEGER NOT NULL,
    decided_at       INTEGER,
    decided_by       TEXT,
    revoked_reason   TEXT,
    refresh_gen      INTEGER NOT NULL DEFAULT 0,
    last_refresh_at  INTEGER,
    PRIMARY KEY (tenant_id, device_id)
) STRICT, WITHOUT ROWID;

CREATE UNIQUE INDEX devices_user_code ON devices (tenant_id, user_code);
CREATE UNIQUE INDEX devices_device_code ON devices (tenant_id, device_code_hash);

-- Every refresh token a device was ever given (hashed): used_at is set when it is exchanged, so
-- a second use is a replay and revokes the family.
CREATE TABLE refresh_tokens (
    tenant_id  TEXT    NOT NULL,
    token_hash TEXT    NOT NULL,
    device_id  TEXT    NOT NULL,
    gen        INTEGER NOT NULL,
    created_at INTEGER NOT NULL,
    used_at    INTEGER,
    PRIMARY KEY (tenant_id, token_hash)
) STRICT, WITHOUT ROWID;
