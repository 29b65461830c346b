-- Indexes added after their schema version, created at every read-write open of a store
-- that lacks them (after its upgrades): an index changes no row, so the store keeps its
-- version and an older build still opens it. Each is looked up first, so an open of a store
-- that has them takes no lock on its table; a writer not allowed to create one (not the
-- table's owner) goes on without it, and the next open by one that is creates it.
DO $$
BEGIN
    IF to_regclass('schedules_due_unpaused') IS NULL THEN
        CREATE INDEX schedules_due_unpaused ON schedules (next_due, schedule_id)
            WHERE paused_at IS NULL;
    END IF;
EXCEPTION WHEN insufficient_privilege THEN
    NULL;
END
$$;
