-- Schema 7 → 8: `attempt_errors`, the errors of each work item's attempts (existing items
-- start with none); `handler_pauses` (handlers an operator paused fleet-wide) and
-- `handler_rates` (the fleet's claims of a rate-limited handler in its current window),
-- empty on an upgraded store. Runs once, in the initialisation transaction under the
-- advisory lock, after the older upgrades when the store was older still.
-- The errors of a work item's attempts, newest kept (`ATTEMPT_ERRORS_KEPT` per item): one
-- row per failed or lapsed attempt, keyed by its claim generation, written in the
-- transaction that records the failure and removed with the item.
CREATE TABLE IF NOT EXISTS attempt_errors (
    work_id    TEXT COLLATE "C" NOT NULL,
    generation BIGINT NOT NULL,
    attempt    BIGINT NOT NULL,
    owner_id   TEXT COLLATE "C" NOT NULL,
    at         BIGINT NOT NULL,
    class      TEXT COLLATE "C" NOT NULL,
    code       TEXT COLLATE "C" NOT NULL,
    message    TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (work_id, generation)
);
CREATE TABLE IF NOT EXISTS handler_pauses (
    handler   TEXT COLLATE "C" PRIMARY KEY,
    paused_at BIGINT NOT NULL,
    paused_by TEXT COLLATE "C" NOT NULL,
    reason    TEXT COLLATE "C" NOT NULL
);
CREATE TABLE IF NOT EXISTS handler_rates (
    handler      TEXT COLLATE "C" PRIMARY KEY,
    window_start BIGINT NOT NULL,
    claims       BIGINT NOT NULL
);
UPDATE meta SET value = 8 WHERE key = 'schema_version';
