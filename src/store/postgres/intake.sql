-- The intake (docs/ARCHITECTURE.md#intake): enqueue requests an application writes inside
-- its own transaction with a plain INSERT (or `leasehold_enqueue`), taking none of the
-- store's locks, so they exist exactly when that transaction commits. Every claim and every
-- enqueue moves the committed requests into work items, oldest first, under the write lock;
-- a request the move refuses goes to `intake_refused` with the reason. Part of schema.sql
-- and of the upgrade that adds it (schema 6 → 7); every statement is idempotent.
--
-- A request names its handler's version (stamped as the handler's compatibility key) or
-- the key itself, never both; `not_before` is an instant in epoch milliseconds (none:
-- claimable once moved).
CREATE TABLE IF NOT EXISTS intake (
    seq               BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id                TEXT COLLATE "C" NOT NULL,
    handler           TEXT COLLATE "C" NOT NULL,
    handler_version   TEXT COLLATE "C",
    compat            TEXT COLLATE "C",
    payload           TEXT COLLATE "C" NOT NULL DEFAULT '{}',
    logical_effect_id TEXT COLLATE "C",
    idempotency_key   TEXT COLLATE "C",
    max_attempts      BIGINT NOT NULL DEFAULT 5,
    not_before        BIGINT,
    priority          BIGINT NOT NULL DEFAULT 0,
    CONSTRAINT intake_version_or_key CHECK ((handler_version IS NULL) <> (compat IS NULL))
);

-- Requests the move refused (an idempotency key held by another effect, an invalid id or
-- version), as written, with why and when; they wait for a person.
CREATE TABLE IF NOT EXISTS intake_refused (
    seq               BIGINT PRIMARY KEY,
    id                TEXT COLLATE "C" NOT NULL,
    handler           TEXT COLLATE "C" NOT NULL,
    handler_version   TEXT COLLATE "C",
    compat            TEXT COLLATE "C",
    payload           TEXT COLLATE "C" NOT NULL,
    logical_effect_id TEXT COLLATE "C",
    idempotency_key   TEXT COLLATE "C",
    max_attempts      BIGINT NOT NULL,
    not_before        BIGINT,
    priority          BIGINT NOT NULL,
    reason            TEXT COLLATE "C" NOT NULL,
    refused_at        BIGINT NOT NULL
);

-- The SQL entry point (docs/INTAKE.md): one request, in the caller's transaction; answers
-- its `seq`. `delay_ms` counts from now on the database server's clock.
CREATE OR REPLACE FUNCTION leasehold_enqueue(
    id                text,
    handler           text,
    payload           text    DEFAULT '{}',
    handler_version   text    DEFAULT NULL,
    compat            text    DEFAULT NULL,
    idempotency_key   text    DEFAULT NULL,
    logical_effect_id text    DEFAULT NULL,
    delay_ms          bigint  DEFAULT 0,
    priority          integer DEFAULT 0,
    max_attempts      integer DEFAULT 5
) RETURNS bigint LANGUAGE sql VOLATILE AS $$
    INSERT INTO intake (id, handler, payload, handler_version, compat, idempotency_key,
                        logical_effect_id, not_before, priority, max_attempts)
    VALUES ($1, $2, $3, $4, $5, $6, $7,
            CASE WHEN $8 > 0
                 THEN floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint + $8 END,
            $9, $10)
    RETURNING seq
$$;
