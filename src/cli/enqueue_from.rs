//! `leasehold work enqueue --from FILE|- [--handler-version V] [--json]`: many outbox
//! effects from JSON lines ([`super::work_lines`]), offered [`BATCH`] to a transaction
//! through [`crate::Store::offer_batch`] — one process, one connection and one commit per
//! batch instead of one of each per item.
//!
//! Each item is answered as the single enqueue answers it: `created`, `duplicate` (the
//! store already holds it under its id or key; nothing written) or `conflict` (its key or
//! id holds another effect; nothing written for that line, the rest of its batch commits).
//! So a run that was cut short — killed, a store failure, a bad line — is finished by
//! running it again: what committed is answered `duplicate`, the rest is created. Lines
//! naming neither id nor key are keyed by their handler and payload, so they too are found
//! again.
//!
//! A bad line is one line on stderr naming its number (exit 2). From a FILE every line is
//! read and checked before the store is opened, so a bad line anywhere means nothing is
//! written. From standard input (`-`) or a pipe, read as it streams, the run stops at the
//! bad line: every line before it is committed, none from it on, and the summary says so.
//!
//! Output: each conflict or refused item as a line (`--json`: an object with `line`, `id`,
//! `outcome`, `error`), then one summary — created / duplicate / conflict / refused.
//! Progress goes to stderr while it is a terminal. Exit 0 when every line was created or
//! a duplicate, 1 when some were conflicts or refused, 2 for a bad line, an unreadable
//! input, or a store failure (the summary then counts what committed before it).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::time::Instant;

use serde::Serialize;

use super::enqueue::EnqueueArgs;
use super::output::json_line;
use super::work_lines::{BadLine, DERIVED_KEY_PREFIX, LineItem, Lines};
use super::{CliResult, Failure};
use crate::error::Error;
use crate::foundation::progress::Progress;
use crate::foundation::text_cell::{cell, escape};
use crate::model::HandlerVersion;
use crate::model::work::NewWork;
use crate::store::{Enqueued, Store};

/// Items offered in one transaction: large enough that the commit's cost is shared by
/// many items, small enough that a cut run loses little and a transaction stays short.
pub const BATCH: usize = 1_000;

/// What the run came to so far.
#[derive(Debug, Default, Serialize)]
#[serde(rename_all = "camelCase")]
struct Tally {
    /// Items read (blank lines aside).
    items: u64,
    created: u64,
    duplicate: u64,
    conflict: u64,
    refused: u64,
    /// The bad line the run stopped at, reading standard input.
    #[serde(skip_serializing_if = "Option::is_none")]
    stopped_at_line: Option<u64>,
    seconds: f64,
}

/// One item not enqueued, as `--json` prints it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct NotEnqueued<'a> {
    line: u64,
    id: &'a str,
    outcome: &'static str,
    error: String,
}

/// Runs `leasehold work enqueue --from FROM`.
///
/// # Errors
/// Exit 2 for a bad line, an unreadable input or a store failure; exit 1 when some items
/// were conflicts or refused.
pub fn run(args: &EnqueueArgs, from: &str, out: &mut dyn Write) -> CliResult {
    if from == "-" {
        let store = args.store.open_writer()?;
        let lines = Lines::new(std::io::stdin().lock(), "standard input");
        return Load::new(&store, args, "standard input", None, out).run(lines);
    }
    if !std::fs::metadata(from).is_ok_and(|m| m.is_file()) {
        // A pipe (`--from <(command)`) can be read only once: it streams, as `-` does.
        let lines = Lines::new(open(from)?, from);
        let store = args.store.open_writer()?;
        return Load::new(&store, args, from, None, out).run(lines);
    }
    let total = check_file(from)?;
    let store = args.store.open_writer()?;
    Load::new(&store, args, from, Some(total), out).run(Lines::new(open(from)?, from))
}

/// Reads every line of `path`, counting the items; the first bad line refuses the file.
fn check_file(path: &str) -> Result<u64, Failure> {
    let mut items = 0;
    for item in Lines::new(open(path)?, path) {
        item.map_err(|bad| {
            Failure::usage(format!(
                "{path}: {}; nothing was enqueued",
                bad.failure.message
            ))
        })?;
        items += 1;
    }
    Ok(items)
}

fn open(path: &str) -> Result<impl BufRead, Failure> {
    let file = std::fs::File::open(path)
        .map_err(|e| Failure::usage(format!("cannot read {path}: {e}")))?;
    // A directory opens, and fails only at its first read: say so before anything runs.
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err(Failure::usage(format!(
            "cannot read {path}: a directory, not a file of JSON lines"
        )));
    }
    Ok(BufReader::new(file))
}

/// One run over one input.
struct Load<'a> {
    store: &'a Store,
    args: &'a EnqueueArgs,
    /// The input, as messages name it.
    name: &'a str,
    /// The version each handler met so far is taken at.
    versions: BTreeMap<String, HandlerVersion>,
    /// What to say of versions chosen without a running authority to go by: said once
    /// the run succeeded (a failed run's one line stays one line).
    notes: Vec<String>,
    /// This run's id: lines without an id of their own are numbered under it.
    run: String,
    /// Items in the input, when known beforehand (a file).
    total: Option<u64>,
    tally: Tally,
    started: Instant,
    progress: Progress,
    out: &'a mut dyn Write,
}

impl<'a> Load<'a> {
    fn new(
        store: &'a Store,
        args: &'a EnqueueArgs,
        name: &'a str,
        total: Option<u64>,
        out: &'a mut dyn Write,
    ) -> Self {
        Self {
            store,
            args,
            name,
            versions: BTreeMap::new(),
            notes: Vec::new(),
            run: store.ids().next_id(DERIVED_KEY_PREFIX),
            total,
            tally: Tally::default(),
            started: Instant::now(),
            progress: Progress::terminal_only(),
            out,
        }
    }

    /// Offers every item of `lines`, then prints the summary — after a failure too, so
    /// it says what committed before it.
    fn run(mut self, lines: impl Iterator<Item = Result<LineItem, BadLine>>) -> CliResult {
        let fed = self.feed(lines);
        self.progress.finish();
        let summary = self.summary();
        fed?;
        summary?;
        let not_enqueued = self.tally.conflict + self.tally.refused;
        if not_enqueued > 0 {
            return Err(Error::ItemsRefused(format!(
                "{not_enqueued} of {} items from {} were not enqueued ({} conflict, {} refused)",
                self.tally.items, self.name, self.tally.conflict, self.tally.refused
            ))
            .into());
        }
        if self.tally.created > 0 {
            super::handler_version::tell(&self.notes);
        }
        Ok(())
    }

    fn feed(&mut self, lines: impl Iterator<Item = Result<LineItem, BadLine>>) -> CliResult {
        let mut batch = Vec::with_capacity(BATCH);
        for read in lines {
            match read {
                Ok(item) => {
                    batch.push(item);
                    if batch.len() == BATCH {
                        self.offer(&batch)?;
                        batch.clear();
                    }
                }
                Err(bad) => {
                    // Everything before the bad line commits; nothing from it on.
                    self.offer(&batch)?;
                    self.tally.refused += 1;
                    self.tally.stopped_at_line = Some(bad.line);
                    let message = format!("{}: {}", self.name, bad.failure.message);
                    return Err(Failure {
                        message,
                        ..bad.failure
                    });
                }
            }
        }
        self.offer(&batch)
    }

    /// Offers `batch` in one transaction and tallies each item's answer.
    fn offer(&mut self, batch: &[LineItem]) -> CliResult {
        let (Some(first), Some(last)) = (batch.first(), batch.last()) else {
            return Ok(());
        };
        self.learn_versions(batch)?;
        let now = self.store.now();
        let specs: Vec<NewWork> = batch.iter().map(|item| item.spec(now, &self.run)).collect();
        let ids: Vec<String> = specs.iter().map(|spec| spec.id.clone()).collect();
        let answers = self.store.offer_batch(specs, &self.versions).map_err(|e| {
            let failure = Failure::from(e);
            Failure {
                message: format!(
                    "lines {}-{}: {}; the same input run again finishes the run",
                    first.line, last.line, failure.message
                ),
                ..failure
            }
        })?;
        for ((item, id), answer) in batch.iter().zip(&ids).zip(answers) {
            self.tally.items += 1;
            match answer {
                Ok(Enqueued::Created) => self.tally.created += 1,
                Ok(Enqueued::Duplicate(_)) => self.tally.duplicate += 1,
                Err(error) => self.not_enqueued(item.line, id, &error)?,
            }
        }
        self.show_progress();
        Ok(())
    }

    /// Takes the handlers of `batch` not met before at their versions (`--handler-version`,
    /// else what the running authorities register, else what the last registration
    /// declares: said on standard error at the end, once per handler).
    fn learn_versions(&mut self, batch: &[LineItem]) -> CliResult {
        let new: std::collections::BTreeSet<&str> = batch
            .iter()
            .map(|item| item.handler.as_str())
            .filter(|h| !self.versions.contains_key(*h))
            .collect();
        if !new.is_empty() {
            let stamp = self.args.version.stamp(self.store, new)?;
            self.notes.extend(stamp.notes);
            self.versions.extend(stamp.versions);
        }
        Ok(())
    }

    fn not_enqueued(&mut self, line: u64, id: &str, error: &Error) -> CliResult {
        let outcome = if matches!(error, Error::EnqueueConflict { .. }) {
            self.tally.conflict += 1;
            "conflict"
        } else {
            self.tally.refused += 1;
            "refused"
        };
        if self.args.json {
            json_line(
                self.out,
                &NotEnqueued {
                    line,
                    id,
                    outcome,
                    error: error.to_string(),
                },
            )?;
        } else {
            writeln!(
                self.out,
                "line {line}: {outcome}: {}",
                escape(&error.to_string())
            )?;
        }
        Ok(())
    }

    fn show_progress(&mut self) {
        let (tally, total, started) = (&self.tally, self.total, self.started);
        self.progress.show(|| {
            let read = match total {
                Some(total) => format!("{}/{total}", tally.items),
                None => tally.items.to_string(),
            };
            format!(
                "enqueue: {read} items, created {}, duplicate {}, conflict {} ({:.0}/s)",
                tally.created,
                tally.duplicate,
                tally.conflict,
                rate(tally.items, started)
            )
        });
    }

    fn summary(&mut self) -> CliResult {
        self.tally.seconds = self.started.elapsed().as_secs_f64();
        if self.args.json {
            return Ok(json_line(self.out, &self.tally)?);
        }
        let t = &self.tally;
        let stopped = t
            .stopped_at_line
            .map(|line| format!(", stopped at line {line}"))
            .unwrap_or_default();
        writeln!(
            self.out,
            "created {}, duplicate {}, conflict {}, refused {} ({} items from {} in {:.1} s, {:.0}/s{stopped})",
            t.created,
            t.duplicate,
            t.conflict,
            t.refused,
            t.items,
            cell(self.name),
            t.seconds,
            rate(t.items, self.started)
        )?;
        Ok(())
    }
}

/// Items a second since `started`.
fn rate(items: u64, started: Instant) -> f64 {
    #[allow(clippy::cast_precision_loss)]
    let items = items as f64;
    items / started.elapsed().as_secs_f64().max(1e-9)
}
