-- Schema 6 → 7: the intake (intake.sql, run just before this file): enqueue requests an
-- application writes in its own transaction; and `schedules.paused_at`, set while an
-- operator has paused the schedule (it fires nothing until resumed; existing schedules read
-- as running). Runs once, in the initialisation transaction under the advisory lock, after
-- the older upgrades when the store was older still.
ALTER TABLE schedules ADD COLUMN IF NOT EXISTS paused_at BIGINT;
UPDATE meta SET value = 7 WHERE key = 'schema_version';
