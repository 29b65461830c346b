//! `leasehold check`: the invariant checker over a store's durable history (exit 1 on a
//! violation).

use std::io::Write;

use clap::Args;

use super::{CliResult, Failure, StoreArg};
use crate::check::{CheckOptions, check};
use crate::store::url::OpenMode;

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
}

/// Runs `leasehold check`: exit 1 on any violation.
///
/// # Errors
/// Violations (exit 1), an unreadable store (exit 2).
pub fn run(args: &CheckArgs, out: &mut dyn Write) -> CliResult {
    let store = args.store.open(OpenMode::ReadOnly)?;
    let options = CheckOptions {
        stranded_after_ms: args.stranded_after_ms,
        ..CheckOptions::at(store.now())
    };
    let report = check(&store, &options)?;
    if args.json {
        write!(out, "{}", crate::check::render_json_lines(&report))?;
    } else {
        write!(out, "{}", crate::check::render_text(&report))?;
    }
    if report.is_clean() {
        Ok(())
    } else {
        Err(Failure::refused(format!(
            "{} invariant violation(s)",
            report.violations.len()
        )))
    }
}
