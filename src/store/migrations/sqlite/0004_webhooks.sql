-- SPDX-License-Identifier: MIT
-- Webhook endpoints of server agents and the log of their delivery attempts (DESIGN §6.3). An
-- agent has at most one endpoint; the inbox stays the only source of truth (a disabled endpoint
-- loses nothing). status: 0 active, 1 disabled. failing_since: the first failed attempt of the
-- current run of failures (NULL after a success), from which webhooks.disable_after_s counts.
-- secret: the Standard Webhooks "whsec_" string as registered.

CREATE TABLE endpoints (
    tenant_id       TEXT    NOT NULL,
    endpoint_id     TEXT    NOT NULL,
    agent_id        TEXT    NOT NULL,
    url             TEXT    NOT NULL,
    secret          TEXT    NOT NULL,
    status          INTEGER NOT NULL DEFAULT 0,
    disabled_reason TEXT,
    created_at      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    failing_since   INTEGER,
    PRIMARY KEY (tenant_id, endpoint_id)
) STRICT, WITHOUT ROWID;

CREATE UNIQUE INDEX endpoints_agent ON endpoints (tenant_id, agent_id);

-- One row per delivery attempt, pruned after webhooks.attempt_retention_s. status_code 0: no
-- HTTP answer (error_class says why). response_head: the first bytes of the answer.
CREATE TABLE webhook_attempts (
    tenant_id     TEXT    NOT NULL,
    endpoint_id   TEXT    NOT NULL,
    attempt_id    TEXT    NOT NULL,
    agent_id      TEXT    NOT NULL,
    event_id      TEXT    NOT NULL,
    at            INTEGER NOT NULL,
    attempt       INTEGER NOT NULL,
    status_code   INTEGER NOT NULL,
    latency_ms    INTEGER NOT NULL,
    error_class   TEXT    NOT NULL,
    response_head TEXT,
    PRIMARY KEY (tenant_id, endpoint_id, attempt_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX webhook_attempts_event ON webhook_attempts (tenant_id, event_id, attempt_id);
CREATE INDEX webhook_attempts_at ON webhook_attempts (at);
