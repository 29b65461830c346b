-- Schema 6 → 7: the intake (intake.sql, run just before this file): enqueue requests an
-- application writes in its own transaction. Runs once, in the initialisation transaction
-- under the advisory lock, after the older upgrades when the store was older still.
UPDATE meta SET value = 7 WHERE key = 'schema_version';
