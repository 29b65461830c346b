-- Schema 9 → 10: fewer index entries for every item drained. The history's revision
-- indexes go (a range of revisions is a range of positions, found by a binary search), and
-- the work list's state and owner indexes leave claimed items (and, the owner's, unowned
-- ones) to `work_claimed_by`. A history already out of order (a revision lowered by hand
-- while writers went on, before writers refused such a store) is named by `leasehold
-- check` as `history-out-of-order`, and refused by `leasehold copy`. Runs once, inside the initialisation transaction after the
-- older upgrades when the store was older still.
DROP INDEX IF EXISTS grants_revision;
DROP INDEX IF EXISTS writes_revision;
DROP INDEX IF EXISTS work_state;
DROP INDEX IF EXISTS work_owner;
CREATE INDEX work_state ON work (state, id) WHERE state <> 'claimed';
CREATE INDEX work_owner ON work (owner_id, id)
    WHERE owner_id IS NOT NULL AND state <> 'claimed';
UPDATE meta SET value = 10 WHERE key = 'schema_version';
