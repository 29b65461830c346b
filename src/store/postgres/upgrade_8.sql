-- Schema 8 → 9: `chain`, the chain over the history. An upgraded store has no links for
-- the revisions before it: its chain starts at the first commit after the upgrade. Runs
-- once, in the initialisation transaction under the advisory lock, after the older
-- upgrades when the store was older still.
CREATE TABLE IF NOT EXISTS chain (
    revision    BIGINT PRIMARY KEY,
    link        TEXT COLLATE "C" NOT NULL,
    nonce       TEXT COLLATE "C" NOT NULL,
    generations BIGINT NOT NULL,
    completions BIGINT NOT NULL
);
UPDATE meta SET value = 9 WHERE key = 'schema_version';
