-- Schema 1 → 2: failover and holder facts on the checker's history. Existing columns
-- stay; rows written before read these as unknown (NULL). Runs once, in the
-- initialisation transaction under the advisory lock.
ALTER TABLE grants ADD COLUMN IF NOT EXISTS from_owner TEXT COLLATE "C";
ALTER TABLE grants ADD COLUMN IF NOT EXISTS from_generation BIGINT;
ALTER TABLE grants ADD COLUMN IF NOT EXISTS lapsed_ms BIGINT;
ALTER TABLE writes ADD COLUMN IF NOT EXISTS holder_id TEXT COLLATE "C";
ALTER TABLE writes ADD COLUMN IF NOT EXISTS holder_generation BIGINT;
CREATE INDEX IF NOT EXISTS grants_failovers ON grants (at, seq) WHERE from_owner IS NOT NULL;
CREATE INDEX IF NOT EXISTS writes_refused ON writes (at, seq) WHERE NOT accepted;
UPDATE meta SET value = 2 WHERE key = 'schema_version';
