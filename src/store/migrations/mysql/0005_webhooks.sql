-- SPDX-License-Identifier: MIT
-- Webhook endpoints of server agents and the log of their delivery attempts (DESIGN §6.3), as in
-- SQLite's 0004. Ids are ascii_bin, compared bytewise like SQLite.
-- statement
CREATE TABLE IF NOT EXISTS endpoints (
    tenant_id       VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    endpoint_id     VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    agent_id        VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    url             TEXT NOT NULL,
    secret          VARCHAR(512) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    status          INT NOT NULL DEFAULT 0,
    disabled_reason VARCHAR(256),
    created_at      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    failing_since   BIGINT,
    PRIMARY KEY (tenant_id, endpoint_id),
    UNIQUE KEY endpoints_agent (tenant_id, agent_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
-- statement
CREATE TABLE IF NOT EXISTS webhook_attempts (
    tenant_id     VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    endpoint_id   VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    attempt_id    VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    agent_id      VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    event_id      VARCHAR(64)  CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    at            BIGINT NOT NULL,
    attempt       INT NOT NULL,
    status_code   INT NOT NULL,
    latency_ms    BIGINT NOT NULL,
    error_class   VARCHAR(32) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    response_head TEXT,
    PRIMARY KEY (tenant_id, endpoint_id, attempt_id),
    KEY webhook_attempts_event (tenant_id, event_id, attempt_id),
    KEY webhook_attempts_at (at)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
