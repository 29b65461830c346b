-- Schema 11 → 12: failed items a person discarded are counted apart from the failures
-- nobody decided (`work|<kind>|discarded|<compat>`, what `state:discarded` names), so the
-- overview's and the metrics' `failed` count the same items `state:failed` lists. Their
-- counts move out of the `failed` ones. Runs once, inside the initialisation transaction
-- after the older upgrades when the store was older still.
CREATE TEMP TABLE discarded_counts AS
    SELECT kind, compat, count(*) AS n FROM work
    WHERE state = 'failed'
      AND json_extract(last_failure, '$.code') = 'DISCARDED'
      AND json_extract(last_failure, '$.class') <> 'uncertain-exhausted'
    GROUP BY kind, compat;
INSERT INTO counters (name, value)
    SELECT 'work|' || kind || '|discarded|' || compat, n FROM discarded_counts;
UPDATE counters SET value = value - (
    SELECT n FROM discarded_counts d WHERE 'work|' || d.kind || '|failed|' || d.compat = counters.name
) WHERE name IN (SELECT 'work|' || kind || '|failed|' || compat FROM discarded_counts);
DROP TABLE discarded_counts;
UPDATE meta SET value = 12 WHERE key = 'schema_version';
