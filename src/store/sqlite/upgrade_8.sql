-- Schema 8 → 9: `chain`, the chain over the history. An upgraded store has no links for
-- the revisions before it: its chain starts at the first commit after the upgrade. Runs
-- once, inside the initialisation transaction after the older upgrades when the store was older still.
CREATE TABLE IF NOT EXISTS chain (
    revision    INTEGER PRIMARY KEY,
    link        TEXT NOT NULL,
    nonce       TEXT NOT NULL,
    generations INTEGER NOT NULL,
    completions INTEGER NOT NULL
);
UPDATE meta SET value = 9 WHERE key = 'schema_version';
