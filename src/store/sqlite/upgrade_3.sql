-- Schema 3 → 4: a work item's priority within its handler's claim lane (0 for rows written
-- before), added last where schema.sql also puts it (work rows are read by position). The
-- claim and waiting indexes become per lane: the old ones are dropped here and schema.sql,
-- which runs next, builds `work_lane` and `work_lane_waiting`. Runs once, inside the
-- initialisation transaction, after the older upgrades when the store was older still.
ALTER TABLE work ADD COLUMN priority INTEGER NOT NULL DEFAULT 0;
DROP INDEX IF EXISTS work_claim;
DROP INDEX IF EXISTS work_waiting;
UPDATE meta SET value = 4 WHERE key = 'schema_version';
