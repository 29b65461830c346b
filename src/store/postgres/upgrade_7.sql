-- Schema 7 → 8: `attempt_errors`, the errors of each work item's attempts (the same
-- table as schema.sql; existing items start with none). Runs once, in the initialisation
-- transaction under the advisory lock, after the older upgrades when the store was older
-- still.
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
UPDATE meta SET value = 8 WHERE key = 'schema_version';
