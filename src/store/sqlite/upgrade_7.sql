-- Schema 7 → 8: `attempt_errors`, the errors of each work item's attempts (existing items
-- start with none); `handler_pauses` (handlers an operator paused fleet-wide) and
-- `handler_rates` (the fleet's claims of a rate-limited handler in its current window),
-- empty on an upgraded store. Runs once, inside the initialisation transaction, after the
-- older upgrades when the store was older still.
-- The errors of a work item's attempts, newest kept (`ATTEMPT_ERRORS_KEPT` per item): one
-- row per failed or lapsed attempt, keyed by its claim generation, written in the
-- transaction that records the failure and removed with the item.
CREATE TABLE IF NOT EXISTS attempt_errors (
    work_id    TEXT NOT NULL,
    generation INTEGER NOT NULL,
    attempt    INTEGER NOT NULL,
    owner_id   TEXT NOT NULL,
    at         INTEGER NOT NULL,
    class      TEXT NOT NULL,
    code       TEXT NOT NULL,
    message    TEXT NOT NULL,
    PRIMARY KEY (work_id, generation)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS handler_pauses (
    handler   TEXT PRIMARY KEY,
    paused_at INTEGER NOT NULL,
    paused_by TEXT NOT NULL,
    reason    TEXT NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS handler_rates (
    handler      TEXT PRIMARY KEY,
    window_start INTEGER NOT NULL,
    claims       INTEGER NOT NULL
) WITHOUT ROWID;
UPDATE meta SET value = 8 WHERE key = 'schema_version';
