-- SPDX-License-Identifier: MIT
-- Device login (RFC 8628) and rotating refresh tokens, as in SQLite's 0007 (doc/CREDENTIALS.md).
-- statement
CREATE TABLE IF NOT EXISTS devices (
    tenant_id        VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    device_id        VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    agent_id         VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    name             VARCHAR(256) NOT NULL,
    address          VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    scope_requested  TEXT NOT NULL,
    scope_granted    TEXT,
    user_code        VARCHAR(16)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    device_code_hash CHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    status           INT NOT NULL,
    code_expires_at  BIGINT NOT NULL,
    interval_s       INT NOT NULL,
    last_poll_at     BIGINT NOT NULL DEFAULT 0,
    created_at       BIGINT NOT NULL,
    decided_at       BIGINT,
    decided_by       VARCHAR(256),
    revoked_reason   VARCHAR(256),
    refresh_gen      BIGINT NOT NULL DEFAULT 0,
    last_refresh_at  BIGINT,
    PRIMARY KEY (tenant_id, device_id),
    UNIQUE KEY devices_user_code (tenant_id, user_code),
    UNIQUE KEY devices_device_code (tenant_id, device_code_hash)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
-- statement
CREATE TABLE IF NOT EXISTS refresh_tokens (
    tenant_id  VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    token_hash CHAR(64)     CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    device_id  VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    gen        BIGINT NOT NULL,
    created_at BIGINT NOT NULL,
    used_at    BIGINT,
    PRIMARY KEY (tenant_id, token_hash)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
