-- Schema 10 → 11: failed items a person discarded are counted apart from the failures
-- nobody decided (`work|<kind>|discarded|<compat>`, what `state:discarded` names), so the
-- overview's and the metrics' `failed` count the same items `state:failed` lists. Their
-- counts move out of the `failed` ones. Runs once, in the initialisation transaction
-- under the advisory lock, after the older upgrades when the store was older still.
CREATE TEMP TABLE discarded_counts ON COMMIT DROP AS
    SELECT kind, compat, count(*) AS n FROM work
    WHERE state = 'failed'
      AND (last_failure::json ->> 'code') = 'DISCARDED'
      AND (last_failure::json ->> 'class') <> 'uncertain-exhausted'
    GROUP BY kind, compat;
INSERT INTO counters (name, value)
    SELECT 'work|' || kind || '|discarded|' || compat, n FROM discarded_counts;
UPDATE counters SET value = counters.value - d.n
    FROM discarded_counts d
    WHERE counters.name = 'work|' || d.kind || '|failed|' || d.compat;
UPDATE meta SET value = 11 WHERE key = 'schema_version';
