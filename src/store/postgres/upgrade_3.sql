-- Schema 3 → 4: a work item's priority within its handler's claim lane (0 for rows written
-- before), and the per-lane claim and waiting indexes in place of the global ones (as in
-- schema.sql). Runs once, in the initialisation transaction under the advisory lock, after
-- the older upgrades when the store was older still.
ALTER TABLE work ADD COLUMN IF NOT EXISTS priority BIGINT NOT NULL DEFAULT 0;
DROP INDEX IF EXISTS work_claim;
DROP INDEX IF EXISTS work_waiting;
CREATE INDEX IF NOT EXISTS work_lane ON work (compat, kind, handler, priority DESC, due_at, id)
    WHERE due_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS work_lane_waiting ON work (kind, handler, next_eligible_at)
    WHERE state IN ('pending', 'retry');
UPDATE meta SET value = 4 WHERE key = 'schema_version';
