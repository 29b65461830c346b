-- Schema 4 → 5: what each authority publishes about itself (outcomes held in recovery, a
-- write stall) as JSON on its registration row; `{}` (nothing) for rows written before.
-- Runs once, inside the initialisation transaction, after the older upgrades when the
-- store was older still.
ALTER TABLE authorities ADD COLUMN published TEXT NOT NULL DEFAULT '{}';
UPDATE meta SET value = 5 WHERE key = 'schema_version';
