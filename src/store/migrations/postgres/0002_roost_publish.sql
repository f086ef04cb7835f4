-- Publishing from an application's own transaction (DESIGN §5.2), as MySQL's CALL roost_publish:
--
--   BEGIN;
--   INSERT INTO orders ...;
--   SELECT * FROM roost.roost_publish('t1', 'agent-7', '{"order": 42}', 0, NULL, NULL, 0, 0);
--   COMMIT;
--
-- Same arguments and result as the procedure (doc/MYSQL.md, doc/POSTGRES.md): tenant, agent,
-- payload (a JSON object), priority (-100..100), correlation_id, idempotency_key (a repeat returns
-- the first event and writes nothing), delay_ms (> 0 schedules), ttl_ms (> 0 expires); returns
-- (event_id, seq). The seq is allocated under the agent's row lock, the change row is written and
-- NOTIFY sent on the schema's channel: delivered to every roostd node only when the caller's
-- transaction commits, never on rollback.
--
-- SECURITY DEFINER with the search_path fixed to this schema (FROM CURRENT: the migrator's,
-- which is the schema alone): an application role needs only USAGE on the schema and EXECUTE on
-- this function, no rights on the tables (doc/POSTGRES.md, least privilege).
CREATE FUNCTION roost_publish(
    p_tenant TEXT, p_agent TEXT, p_payload TEXT, p_priority INTEGER DEFAULT 0,
    p_correlation_id TEXT DEFAULT NULL, p_idempotency_key TEXT DEFAULT NULL,
    p_delay_ms BIGINT DEFAULT 0, p_ttl_ms BIGINT DEFAULT 0,
    OUT event_id TEXT, OUT seq BIGINT)
LANGUAGE plpgsql SECURITY DEFINER SET search_path FROM CURRENT AS $roost$
DECLARE
    alphabet CONSTANT TEXT := '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
    v_now BIGINT := (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT;
    v_avail BIGINT;
    v_seq BIGINT;
    v_ulid TEXT := '';
    v_hex TEXT;
    v_hi BIGINT;
    v_lo BIGINT;
BEGIN
    IF p_tenant IS NULL OR p_tenant !~ '^[A-Za-z0-9._-]{1,128}$'
        OR p_agent IS NULL OR p_agent !~ '^[A-Za-z0-9._-]{1,128}$' THEN
        RAISE EXCEPTION 'roost_publish: invalid tenant or agent id' USING ERRCODE = '22023';
    END IF;
    -- Text that is not JSON raises the cast's own error (22P02).
    IF p_payload IS NULL OR json_typeof(p_payload::json) <> 'object' THEN
        RAISE EXCEPTION 'roost_publish: payload must be a JSON object' USING ERRCODE = '22023';
    END IF;
    IF COALESCE(p_priority, 0) NOT BETWEEN -100 AND 100 THEN
        RAISE EXCEPTION 'roost_publish: priority must be in -100..100' USING ERRCODE = '22023';
    END IF;
    IF NOT EXISTS (SELECT 1 FROM tenants t WHERE t.tenant_id = p_tenant) THEN
        INSERT INTO tenants (tenant_id, created_at) VALUES (p_tenant, v_now)
            ON CONFLICT DO NOTHING;
    END IF;
    -- Locks the agent row (creating it) before the idempotency lookup, so two publishes with the
    -- same key serialise here instead of colliding on the unique index (at READ COMMITTED the
    -- lookup after the lock sees the other's commit).
    INSERT INTO agents AS a (tenant_id, agent_id, next_seq, created_at, updated_at)
        VALUES (p_tenant, p_agent, 1, v_now, v_now)
        ON CONFLICT (tenant_id, agent_id) DO UPDATE SET next_seq = a.next_seq;
    IF p_idempotency_key IS NOT NULL THEN
        SELECT i.event_id, i.seq INTO event_id, seq FROM inbox i
            WHERE i.tenant_id = p_tenant AND i.agent_id = p_agent
            AND i.idempotency_key = p_idempotency_key;
        IF FOUND THEN
            RETURN;
        END IF;
    END IF;
    UPDATE agents a SET next_seq = a.next_seq + 1, updated_at = v_now
        WHERE a.tenant_id = p_tenant AND a.agent_id = p_agent RETURNING a.next_seq - 1 INTO v_seq;
    -- "evt_" + ULID: 48-bit milliseconds in 10 chars, then 80 random bits in 16 chars (from
    -- gen_random_uuid(): hex digits 1-10 and 18-27, none of them the version or variant bits).
    FOR i IN REVERSE 9..0 LOOP
        v_ulid := v_ulid || substr(alphabet, ((v_now >> (5 * i)) & 31)::INTEGER + 1, 1);
    END LOOP;
    v_hex := replace(gen_random_uuid()::TEXT, '-', '');
    v_hi := ('x' || substr(v_hex, 1, 10))::BIT(40)::BIGINT;
    v_lo := ('x' || substr(v_hex, 18, 10))::BIT(40)::BIGINT;
    FOR i IN REVERSE 7..0 LOOP
        v_ulid := v_ulid || substr(alphabet, ((v_hi >> (5 * i)) & 31)::INTEGER + 1, 1);
    END LOOP;
    FOR i IN REVERSE 7..0 LOOP
        v_ulid := v_ulid || substr(alphabet, ((v_lo >> (5 * i)) & 31)::INTEGER + 1, 1);
    END LOOP;
    v_avail := v_now + GREATEST(COALESCE(p_delay_ms, 0), 0);
    INSERT INTO inbox (tenant_id, agent_id, seq, event_id, status, priority, correlation_id,
                       idempotency_key, payload, created_at, available_at, expires_at)
        VALUES (p_tenant, p_agent, v_seq, 'evt_' || v_ulid,
                CASE WHEN v_avail > v_now THEN 0 ELSE 1 END, COALESCE(p_priority, 0),
                p_correlation_id, p_idempotency_key, p_payload, v_now, v_avail,
                CASE WHEN COALESCE(p_ttl_ms, 0) > 0 THEN v_now + p_ttl_ms END);
    INSERT INTO roost_changes (tenant_id, agent_id, head, at_ms)
        VALUES (p_tenant, p_agent, v_seq, v_now);
    -- The channel roostd listens on (store_pg_int.h), cut as a quoted identifier would be.
    PERFORM pg_notify(left('roost:' || current_schema(), 63), '');
    event_id := 'evt_' || v_ulid;
    seq := v_seq;
END
$roost$;

REVOKE ALL ON FUNCTION roost_publish(TEXT, TEXT, TEXT, INTEGER, TEXT, TEXT, BIGINT, BIGINT)
    FROM PUBLIC;
