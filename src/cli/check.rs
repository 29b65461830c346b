//! `leasehold check`: the invariant checker over a store's durable history (exit 1 on a
//! violation or a gap in the history), over execution logs for attempts cut off, and the
//! store itself judged by this host's rewind witness (exit 1 for a store the writers here
//! refuse, as for a lowered revision; a warning for a witnessed revision the store no
//! longer keeps history for, and for a change of its database server).

use std::io::Write;

use clap::Args;

use super::witness::StateDirArg;
use super::{CliResult, Failure, StoreArg};
use crate::check::{
    CheckOptions, Violation, check_showing, damage_codes, unfinished_attempts,
    witness_beyond_history,
};
use crate::error::Error;
use crate::store::url::OpenMode;
use crate::store::witness::Rewound;

/// `leasehold check`.
#[derive(Debug, Clone, Args)]
pub struct CheckArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// One JSON object per line.
    #[arg(long)]
    pub json: bool,
    /// Compatible work or workflow instances due for longer than this many ms count as
    /// stranded.
    #[arg(long, default_value_t = 60_000)]
    pub stranded_after_ms: i64,
    /// An authority's execution log (`--exec-log` of `leasehold authority`), read for
    /// attempts that started and never ended; repeat for each authority.
    #[arg(long = "exec-log", value_name = "FILE")]
    pub exec_logs: Vec<std::path::PathBuf>,
    /// This host's rewind witnesses, which the store is judged by as the writers here judge
    /// it: a store behind what they saw is reported (`store-rewound`).
    #[command(flatten)]
    pub state: StateDirArg,
}

/// Runs `leasehold check`: exit 1 on any violation or history gap.
///
/// # Errors
/// Violations or gaps (exit 1), an unreadable store or execution log (exit 2).
pub fn run(args: &CheckArgs, out: &mut dyn Write) -> CliResult {
    let mut cut_off = Vec::new();
    for path in &args.exec_logs {
        let text = std::fs::read_to_string(path).map_err(|e| {
            Error::Invalid(format!(
                "cannot read the execution log {}: {e}",
                path.display()
            ))
        })?;
        cut_off.extend(unfinished_attempts(&path.display().to_string(), &text)?);
    }
    let store = args.store.open(OpenMode::ReadOnly)?;
    let options = CheckOptions {
        stranded_after_ms: args.stranded_after_ms,
        ..CheckOptions::at(store.now())
    };
    // On a terminal, a line that follows the read; in a log, one every few seconds once
    // the check has run that long (a large store), so stdout stays the report alone.
    let mut progress = crate::foundation::progress::Progress::new(false);
    let checked = check_showing(&store, &options, &mut |phase, done, total| {
        progress.count(phase, done, total);
    });
    progress.finish();
    let mut report = checked?;
    report.gaps.extend(cut_off);
    // A lowered revision is behind every witness too, and a history out of order cannot
    // be compared with one: the finding says what the store is.
    let unread = report.unread_history().is_some();
    if !unread && let Some(rewound) = args.state.rewound(&store)? {
        report.damage.push(rewound_finding(&rewound));
    } else if !unread && let Some(beyond) = args.state.beyond_history(&store)? {
        report.gaps.push(witness_beyond_history(&beyond));
    }
    if args.json {
        write!(out, "{}", crate::check::render_json_lines(&report))?;
    } else {
        write!(out, "{}", crate::check::render_text(&report))?;
    }
    if report.is_clean() {
        Ok(())
    } else if report.damage.is_empty() {
        Err(Failure::refused(format!(
            "{} invariant violation(s), {} history gap(s)",
            report.violations.len(),
            report.history_gaps()
        )))
    } else {
        Err(Failure::refused(format!(
            "the store is damaged ({} finding(s)); {} invariant violation(s), {} history gap(s)",
            report.damage.len(),
            report.violations.len(),
            report.history_gaps()
        )))
    }
}

/// The finding of a store this host's witness saw further along, or along another
/// history.
fn rewound_finding(rewound: &Rewound) -> Violation {
    Violation {
        invariant: if rewound.is_fork() {
            damage_codes::STORE_FORKED
        } else {
            damage_codes::STORE_REWOUND
        },
        ids: vec![
            rewound.witnessed.revision.to_string(),
            rewound.store.revision.to_string(),
        ],
        sentence: format!(
            "this host saw revision {}, the store is at revision {}: {}; the writers here refuse it (STORE_REWOUND) until `leasehold store accept-rewind`",
            rewound.witnessed.revision, rewound.store.revision, rewound.detail
        ),
    }
}
