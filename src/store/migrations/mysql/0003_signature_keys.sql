-- SPDX-License-Identifier: MIT
-- Request-signing keys and the nonces seen with them (DESIGN §6.2), as in SQLite's 0003. `keys` is
-- a reserved word in MySQL: every statement quotes it. Ids and nonces (RFC 9651 Strings: printable
-- ASCII) are ascii_bin, compared bytewise like SQLite.
-- statement
CREATE TABLE IF NOT EXISTS `keys` (
    tenant_id  VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    key_id     VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    agent_id   VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    alg        VARCHAR(32)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    material   MEDIUMTEXT NOT NULL,
    created_at BIGINT NOT NULL,
    revoked_at BIGINT,
    PRIMARY KEY (tenant_id, key_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
-- statement
CREATE TABLE IF NOT EXISTS nonces (
    tenant_id  VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    key_id     VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    nonce      VARCHAR(256) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    expires_at BIGINT NOT NULL,
    PRIMARY KEY (tenant_id, key_id, nonce),
    KEY nonces_expiry (expires_at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
