-- Schema 2 → 3: a work item's checkpoint, the resume state its handler saves under the
-- claim. Added last, where schema.sql also puts it (work rows are read by position); rows
-- written before have none (NULL). Runs once, inside the initialisation transaction,
-- after upgrade_1.sql when the store was older still.
ALTER TABLE work ADD COLUMN checkpoint TEXT;
UPDATE meta SET value = 3 WHERE key = 'schema_version';
