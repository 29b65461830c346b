-- Schema 6 → 7: `schedules.paused_at`, set while an operator has paused the schedule (it
-- fires nothing until resumed). Existing schedules read as running. Runs once, inside the
-- initialisation transaction, after the older upgrades when the store was older still.
ALTER TABLE schedules ADD COLUMN paused_at INTEGER;
UPDATE meta SET value = 7 WHERE key = 'schema_version';
