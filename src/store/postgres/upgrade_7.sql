-- Schema 7 → 8: `handler_pauses` (handlers an operator paused fleet-wide) and
-- `handler_rates` (the fleet's claims of a rate-limited handler in its current window).
-- A store of schema 7 has no paused handler and no window yet. Runs once, in the
-- initialisation transaction under the advisory lock, after the older upgrades when the
-- store was older still.
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
