-- SPDX-License-Identifier: MIT
-- Roost schema for MySQL/MariaDB (DESIGN §4.1), InnoDB, utf8mb4. Times are BIGINT Unix
-- milliseconds; status is the enum store_status value (0 scheduled, 1 pending, 2 claimed,
-- 3 completed, 4 quarantined, 5 expired). agents.next_seq is the NEXT sequence number to assign.
-- Ids are ascii_bin so they compare and sort bytewise, like strcmp() and SQLite.
--
-- Statement separator: the migrator (store_mysql.c) splits this file on lines that are exactly
-- "-- statement" and sends each piece as one query, so a procedure body may contain ';'.
-- DDL commits implicitly in MySQL, so every statement is written to be re-runnable
-- (IF NOT EXISTS, DROP IF EXISTS + CREATE): a migration interrupted halfway is simply applied again.
-- statement
CREATE TABLE IF NOT EXISTS tenants (
    tenant_id  VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL PRIMARY KEY,
    name       VARCHAR(255),
    created_at BIGINT   NOT NULL,
    settings   LONGTEXT NOT NULL DEFAULT '{}'
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
-- statement
CREATE TABLE IF NOT EXISTS agents (
    tenant_id          VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    agent_id           VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    next_seq           BIGINT   NOT NULL DEFAULT 1,
    purged_through_seq BIGINT   NOT NULL DEFAULT 0,
    state              LONGTEXT NOT NULL DEFAULT '{}',
    state_cursor       BIGINT   NOT NULL DEFAULT 0,
    created_at         BIGINT   NOT NULL,
    updated_at         BIGINT   NOT NULL,
    last_seen_at       BIGINT,
    PRIMARY KEY (tenant_id, agent_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
-- statement
-- MariaDB has no partial indexes: the scheduler's indexes lead with status instead.
CREATE TABLE IF NOT EXISTS inbox (
    tenant_id        VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    agent_id         VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    seq              BIGINT   NOT NULL,
    event_id         CHAR(30) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    status           TINYINT  NOT NULL,
    priority         SMALLINT NOT NULL DEFAULT 0,
    correlation_id   VARCHAR(256),
    idempotency_key  VARCHAR(256),
    payload          LONGTEXT,
    created_at       BIGINT   NOT NULL,
    available_at     BIGINT   NOT NULL,
    expires_at       BIGINT,
    claimed_at       BIGINT,
    claim_expires_at BIGINT,
    lease_token      CHAR(29) CHARACTER SET ascii COLLATE ascii_bin,
    consumer         VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin,
    attempts         INT      NOT NULL DEFAULT 0,
    timeouts         INT      NOT NULL DEFAULT 0,
    nacks            INT      NOT NULL DEFAULT 0,
    last_error       TEXT,
    completed_at     BIGINT,
    PRIMARY KEY (tenant_id, agent_id, seq),
    UNIQUE KEY inbox_event (event_id),
    -- NULL keys never collide, so unkeyed publishes share the index freely.
    UNIQUE KEY inbox_idempotency (tenant_id, agent_id, idempotency_key),
    -- Claim: an exact-match walk in claim order (priority DESC, seq ASC), no sort step.
    KEY inbox_claim (tenant_id, agent_id, status, priority DESC, seq),
    KEY inbox_scavenge (status, claim_expires_at),
    KEY inbox_due (status, available_at),
    KEY inbox_expiry (status, expires_at),
    KEY inbox_quarantine (tenant_id, status, agent_id, seq)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
-- statement
-- The change log the tailers of every roostd node follow (store.h, tail): one row per agent a
-- transaction touched, written in that transaction. Pruned by retention.
CREATE TABLE IF NOT EXISTS roost_changes (
    id        BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,
    tenant_id VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    agent_id  VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin NOT NULL,
    head      BIGINT NOT NULL,
    at_ms     BIGINT NOT NULL,
    -- the roostd process that wrote the row (its tailer skips it); 0 = an application
    origin    BIGINT NOT NULL DEFAULT 0,
    KEY roost_changes_at (at_ms)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_bin
-- statement
DROP PROCEDURE IF EXISTS roost_publish
-- statement
-- Publishing from an application's own transaction (DESIGN §5.2):
--   START TRANSACTION; INSERT INTO orders ...;
--   CALL roost_publish('t1', 'agent-7', '{"order":42}', 0, NULL, NULL, 0, 0, @id, @seq); COMMIT;
-- Id parameters are ascii_bin like the columns: a parameter in another character set would turn
-- every lookup below into a full scan that locks the whole agents table.
-- p_delay_ms > 0 schedules the event, p_ttl_ms > 0 gives it an expiry; a repeated
-- p_idempotency_key returns the existing event and writes nothing. Times come from NOW(3).
CREATE PROCEDURE roost_publish(
    IN p_tenant VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin,
    IN p_agent VARCHAR(128) CHARACTER SET ascii COLLATE ascii_bin,
    IN p_payload LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin, IN p_priority INT,
    IN p_correlation_id VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
    IN p_idempotency_key VARCHAR(256) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin,
    IN p_delay_ms BIGINT, IN p_ttl_ms BIGINT,
    OUT p_event_id CHAR(30) CHARACTER SET ascii COLLATE ascii_bin, OUT p_seq BIGINT)
    MODIFIES SQL DATA
proc: BEGIN
    DECLARE alphabet CHAR(32) DEFAULT '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    DECLARE v_now BIGINT DEFAULT CAST(UNIX_TIMESTAMP(NOW(3)) * 1000 AS SIGNED);
    DECLARE v_avail BIGINT;
    DECLARE v_seq BIGINT;
    DECLARE v_rand BINARY(10);
    DECLARE v_hi BIGINT UNSIGNED;
    DECLARE v_lo BIGINT UNSIGNED;
    DECLARE v_ulid VARCHAR(26) DEFAULT '';
    DECLARE i INT DEFAULT 9;
    SET p_event_id = NULL, p_seq = NULL;
    IF p_tenant IS NULL OR CAST(p_tenant AS BINARY) NOT REGEXP '^[A-Za-z0-9._-]{1,128}$'
        OR p_agent IS NULL OR CAST(p_agent AS BINARY) NOT REGEXP '^[A-Za-z0-9._-]{1,128}$' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'roost_publish: invalid tenant or agent id';
    END IF;
    IF p_payload IS NULL OR NOT JSON_VALID(p_payload) OR JSON_TYPE(p_payload) <> 'OBJECT' THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'roost_publish: payload must be a JSON object';
    END IF;
    IF COALESCE(p_priority, 0) NOT BETWEEN -100 AND 100 THEN
        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'roost_publish: priority must be in -100..100';
    END IF;
    -- A plain read first: INSERT IGNORE on an existing row would share-lock it until commit.
    IF NOT EXISTS (SELECT 1 FROM tenants WHERE tenant_id = p_tenant) THEN
        INSERT IGNORE INTO tenants (tenant_id, created_at) VALUES (p_tenant, v_now);
    END IF;
    -- Locks the agent row (creating it) before the idempotency lookup, so two publishes with
    -- the same key serialise here instead of colliding on the unique index.
    INSERT INTO agents (tenant_id, agent_id, next_seq, created_at, updated_at)
        VALUES (p_tenant, p_agent, 1, v_now, v_now)
        ON DUPLICATE KEY UPDATE next_seq = next_seq;
    -- A locking read: it sees the latest commit even when the application's transaction runs
    -- at REPEATABLE READ (a plain read would see its snapshot and then hit the unique index).
    IF p_idempotency_key IS NOT NULL THEN
        SELECT event_id, seq INTO p_event_id, p_seq FROM inbox
            WHERE tenant_id = p_tenant AND agent_id = p_agent
            AND idempotency_key = p_idempotency_key LIMIT 1 FOR UPDATE;
        IF p_event_id IS NOT NULL THEN
            LEAVE proc;
        END IF;
    END IF;
    SELECT next_seq INTO v_seq FROM agents
        WHERE tenant_id = p_tenant AND agent_id = p_agent FOR UPDATE;
    UPDATE agents SET next_seq = next_seq + 1, updated_at = v_now
        WHERE tenant_id = p_tenant AND agent_id = p_agent;
    -- "evt_" + ULID: 48-bit milliseconds in 10 chars, then 80 random bits in 16 chars.
    WHILE i >= 0 DO
        SET v_ulid = CONCAT(v_ulid, SUBSTRING(alphabet, ((v_now >> (5 * i)) & 31) + 1, 1));
        SET i = i - 1;
    END WHILE;
    SET v_rand = RANDOM_BYTES(10);
    SET v_hi = CAST(CONV(HEX(SUBSTRING(v_rand, 1, 5)), 16, 10) AS UNSIGNED);
    SET v_lo = CAST(CONV(HEX(SUBSTRING(v_rand, 6, 5)), 16, 10) AS UNSIGNED);
    SET i = 7;
    WHILE i >= 0 DO
        SET v_ulid = CONCAT(v_ulid, SUBSTRING(alphabet, ((v_hi >> (5 * i)) & 31) + 1, 1));
        SET i = i - 1;
    END WHILE;
    SET i = 7;
    WHILE i >= 0 DO
        SET v_ulid = CONCAT(v_ulid, SUBSTRING(alphabet, ((v_lo >> (5 * i)) & 31) + 1, 1));
        SET i = i - 1;
    END WHILE;
    SET v_avail = v_now + GREATEST(COALESCE(p_delay_ms, 0), 0);
    INSERT INTO inbox (tenant_id, agent_id, seq, event_id, status, priority, correlation_id,
                       idempotency_key, payload, created_at, available_at, expires_at)
        VALUES (p_tenant, p_agent, v_seq, CONCAT('evt_', v_ulid),
                IF(v_avail > v_now, 0, 1), COALESCE(p_priority, 0), p_correlation_id,
                p_idempotency_key, JSON_COMPACT(p_payload), v_now, v_avail,
                IF(COALESCE(p_ttl_ms, 0) > 0, v_now + p_ttl_ms, NULL));
    INSERT INTO roost_changes (tenant_id, agent_id, head, at_ms)
        VALUES (p_tenant, p_agent, v_seq, v_now);
    SET p_event_id = CONCAT('evt_', v_ulid), p_seq = v_seq;
END
