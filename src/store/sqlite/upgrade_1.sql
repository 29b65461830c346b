-- Schema 1 → 2: failover and holder facts on the checker's history. Existing columns
-- stay; rows written before read these as unknown (NULL). Runs once, inside the
-- initialisation transaction, before schema.sql creates the indexes over them.
ALTER TABLE grants ADD COLUMN from_owner TEXT;
ALTER TABLE grants ADD COLUMN from_generation INTEGER;
ALTER TABLE grants ADD COLUMN lapsed_ms INTEGER;
ALTER TABLE writes ADD COLUMN holder_id TEXT;
ALTER TABLE writes ADD COLUMN holder_generation INTEGER;
UPDATE meta SET value = 2 WHERE key = 'schema_version';
