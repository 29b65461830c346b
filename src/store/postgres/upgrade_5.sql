-- Schema 5 → 6: the idempotency key index, as in schema.sql: an enqueue looks its key up
-- there, so a key is held by one item. Not UNIQUE: a store written before may hold a key
-- twice, and it must still open (`leasehold check` reports such items). Runs once, in the
-- initialisation transaction under the advisory lock, after the older upgrades when the
-- store was older still.
CREATE INDEX IF NOT EXISTS work_key ON work (idempotency_key, id);
UPDATE meta SET value = 6 WHERE key = 'schema_version';
