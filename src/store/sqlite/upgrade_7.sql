-- Schema 7 → 8: `handler_pauses` (handlers an operator paused fleet-wide) and
-- `handler_rates` (the fleet's claims of a rate-limited handler in its current window).
-- A store of schema 7 has no paused handler and no window yet. Runs once, inside the
-- initialisation transaction, after the older upgrades when the store was older still.
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
