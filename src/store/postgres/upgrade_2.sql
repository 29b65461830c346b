-- Schema 2 → 3: a work item's checkpoint, the resume state its handler saves under the
-- claim; rows written before have none (NULL). Runs once, in the initialisation
-- transaction under the advisory lock, after upgrade_1.sql when the store was older still.
ALTER TABLE work ADD COLUMN IF NOT EXISTS checkpoint TEXT COLLATE "C";
UPDATE meta SET value = 3 WHERE key = 'schema_version';
