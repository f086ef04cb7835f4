-- SPDX-License-Identifier: MIT
-- Request-signing keys and the nonces seen with them (DESIGN §6.2). Keys are tenant-scoped; a
-- key_id is never reused within a tenant (revoked keys keep their row). agent_id '*' marks a
-- producer key. material: public key PEM, or the base64 HMAC secret for hmac-sha256.

CREATE TABLE keys (
    tenant_id  TEXT    NOT NULL,
    key_id     TEXT    NOT NULL,
    agent_id   TEXT    NOT NULL,
    alg        TEXT    NOT NULL,
    material   TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER,
    PRIMARY KEY (tenant_id, key_id)
) STRICT;

-- One row per (tenant, key, nonce) inside the signature window: a second use is a replay. Rows
-- live until expires_at (the signature's expires) and are then pruned by the scheduler.
CREATE TABLE nonces (
    tenant_id  TEXT    NOT NULL,
    key_id     TEXT    NOT NULL,
    nonce      TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (tenant_id, key_id, nonce)
) STRICT, WITHOUT ROWID;

CREATE INDEX nonces_expiry ON nonces (expires_at);
