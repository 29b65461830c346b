-- Schema 5 → 6: the idempotency key index `work_key`, which schema.sql (running next) builds:
-- an enqueue looks its key up there, so a key is held by one item. Not UNIQUE: a store
-- written before may hold a key twice, and it must still open (`leasehold check` reports
-- such items). Runs once, inside the initialisation transaction, after the older upgrades
-- when the store was older still.
UPDATE meta SET value = 6 WHERE key = 'schema_version';
