-- Schema 9 → 10: claims leave the claim lanes (`work_lane`). A lapsed claim is found by
-- `work_reclaim` and served before any lane, so the lane held claims only to move their
-- entries at every claim, renewal and completion. Runs once, in the initialisation
-- transaction under the advisory lock, after the older upgrades when the store was older
-- still.
DROP INDEX IF EXISTS work_lane;
CREATE INDEX work_lane ON work (compat, kind, handler, priority DESC, due_at, id)
    WHERE due_at IS NOT NULL AND state <> 'claimed';
UPDATE meta SET value = 10 WHERE key = 'schema_version';
