//! Attempts an execution log shows started and never ended. An authority writes a
//! `started` line before a handler runs and one line when the attempt ends; a process
//! killed in between leaves the start alone — the only trace of an attempt whose effect
//! may have happened while the store recorded nothing.

use std::collections::BTreeMap;

use super::{Violation, gap_codes};
use crate::error::{Error, Result};
use crate::model::ExecRecord;

/// One physical attempt: the item (or `wf:<instance>`), who ran it, under which
/// generation, which attempt.
type AttemptKey = (String, String, u64, u32);

/// The attempts in `log` (the text of one execution log, JSON lines, named `name` in
/// errors) that started and never ended, in the order they started.
///
/// # Errors
/// `INVALID` naming the first line that is not an execution-log record.
pub fn unfinished_attempts(name: &str, log: &str) -> Result<Vec<Violation>> {
    let mut open: BTreeMap<AttemptKey, (usize, Vec<ExecRecord>)> = BTreeMap::new();
    for (n, line) in log.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record: ExecRecord = serde_json::from_str(line).map_err(|e| {
            Error::Invalid(format!(
                "{name} line {}: not an execution log record: {e}",
                n + 1
            ))
        })?;
        let key = (
            record.work_id.clone(),
            record.owner_id.clone(),
            record.generation,
            record.attempt,
        );
        let started = record.outcome == ExecRecord::STARTED;
        let (_, starts) = open.entry(key).or_insert_with(|| (n, Vec::new()));
        if started {
            starts.push(record);
        } else {
            // An end without a start (a release, a refused hand-back) closes nothing.
            starts.pop();
        }
    }
    let mut unfinished: Vec<(usize, ExecRecord)> = open
        .into_values()
        .flat_map(|(n, starts)| starts.into_iter().map(move |r| (n, r)))
        .collect();
    unfinished.sort_by_key(|(n, r)| (r.at, *n));
    Ok(unfinished
        .into_iter()
        .map(|(_, r)| Violation {
            invariant: gap_codes::ATTEMPT_WITHOUT_END,
            ids: vec![r.work_id.clone(), r.owner_id.clone(), r.attempt.to_string()],
            sentence: format!(
                "{}: attempt {} by {} under generation {} started at {} and has no end in {name} (cut off; its effect may or may not have happened)",
                r.work_id, r.attempt, r.owner_id, r.generation, r.at
            ),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(work: &str, attempt: u32, outcome: &str) -> String {
        serde_json::to_string(&ExecRecord {
            work_id: work.into(),
            logical_effect_id: work.into(),
            idempotency_key: work.into(),
            attempt,
            owner_id: "a-1".into(),
            generation: 1,
            outcome: outcome.into(),
            at: 10,
        })
        .unwrap_or_default()
    }

    #[test]
    fn a_start_with_no_end_is_reported_and_ended_ones_are_not() {
        let log = [
            line("e1", 1, "started"),
            line("e1", 1, "succeeded"),
            line("e2", 1, "released"),
            line("e3", 2, "started"),
        ]
        .join("\n");
        let found = unfinished_attempts("exec.jsonl", &log).unwrap_or_default();
        let ids: Vec<&[String]> = found.iter().map(|v| v.ids.as_slice()).collect();
        assert_eq!(ids, [["e3", "a-1", "2"]]);
        assert!(found[0].sentence.contains("no end in exec.jsonl"));
    }

    #[test]
    fn a_line_that_is_not_a_record_is_refused_by_number() {
        let log = format!("{}\nnot json", line("e1", 1, "started"));
        let err = unfinished_attempts("x.jsonl", &log)
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("x.jsonl line 2")));
    }
}
