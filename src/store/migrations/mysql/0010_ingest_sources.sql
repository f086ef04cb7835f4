-- SPDX-License-Identifier: MIT
-- Inbound webhook sources and their receipt log (DESIGN §6.5), as in SQLite's 0008.
-- statement
CREATE TABLE IF NOT EXISTS ingest_sources (
    source_id  VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    tenant_id  VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    name       VARCHAR(512) NOT NULL,
    scheme     VARCHAR(32)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    config     MEDIUMTEXT NOT NULL,
    secret     VARCHAR(1024) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    old_secret VARCHAR(1024) CHARACTER SET ascii COLLATE ascii_bin,
    old_until  BIGINT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    PRIMARY KEY (source_id),
    KEY ingest_sources_tenant (tenant_id, source_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
-- statement
CREATE TABLE IF NOT EXISTS ingest_receipts (
    tenant_id   VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    source_id   VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    receipt_id  VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    at          BIGINT NOT NULL,
    outcome     VARCHAR(16) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    reason      VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    delivery_id VARCHAR(512),
    size        BIGINT NOT NULL,
    peer        VARCHAR(64) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    events      INT NOT NULL,
    PRIMARY KEY (tenant_id, source_id, receipt_id),
    KEY ingest_receipts_at (at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
