//! An operator's action over every row a filter matches, on the command line: `leasehold
//! work requeue|discard|retry-now --filter EXPR` over work items, `leasehold cancel
//! --filter EXPR` over workflow instances. The run itself ([`crate::ops::bulk`]) is the
//! dashboard's too; here are the flags, the refusal above [`CONFIRM_ABOVE`] matches
//! without `--yes`, `--dry-run` (counts and judges, changes nothing) and the answer.

use std::io::Write;

use clap::Args;

use super::output::json_line;
use super::{CliResult, Failure};
use crate::error::Error;
use crate::foundation::text_cell::cell;
use crate::ops::bulk::{Action, Bulk, Tally};
use crate::ops::filter::{Filter, Subject};

/// More matches than this need `--yes`.
pub const CONFIRM_ABOVE: usize = 100;

/// Which rows an action acts on: one by id, or every row a filter matches.
#[derive(Debug, Clone, Args)]
pub struct Target {
    /// The row's id (or `--filter` for every row it matches).
    #[arg(
        value_name = "ID",
        required_unless_present = "filter",
        conflicts_with = "filter"
    )]
    pub id: Option<String>,
    /// Act on every row this filter matches (the dashboard's `/` grammar, e.g.
    /// `state:failed kind:effect`, `status:waiting`), page by page; re-running after an
    /// interruption finishes the rest and does nothing twice.
    #[arg(long, value_name = "EXPR")]
    pub filter: Option<String>,
    /// With `--filter`: say how many rows match, list the first and what a run would do to
    /// them now; change nothing.
    #[arg(long, requires = "filter")]
    pub dry_run: bool,
    /// With `--filter`: act on more than the confirmation threshold without refusing.
    #[arg(long, requires = "filter")]
    pub yes: bool,
}

impl Target {
    /// `--filter`'s text parsed for `subject`, if given. A filter with no term matches
    /// every row, so it is taken only with `--yes` or `--dry-run`: a blank one (an unset
    /// shell variable) must not act on all of them unasked, however few they are.
    ///
    /// # Errors
    /// A blank filter without `--yes` or `--dry-run`, or one the grammar refuses (exit 2).
    pub fn parse_filter(&self, subject: Subject) -> Result<Option<Filter>, Failure> {
        let Some(text) = self.filter.as_deref() else {
            return Ok(None);
        };
        let filter =
            Filter::parse(subject, text).map_err(|e| Failure::usage(format!("--filter: {e}")))?;
        if filter.is_empty() && !self.yes && !self.dry_run {
            return Err(Failure::usage(
                "--filter: holds no term, so it matches every row; add --yes to act on all of them (--dry-run lists the first)",
            ));
        }
        Ok(Some(filter))
    }
}

/// Runs `bulk` from the command line: counts the matches, then (unless `dry_run`) acts on
/// each and answers with the counts.
///
/// # Errors
/// More than [`CONFIRM_ABOVE`] matches without `yes` (`CONFIRMATION_REQUIRED`), or any
/// refusal (`ITEMS_REFUSED`), exit 1; a store failure.
pub fn run<A: Action>(
    bulk: &Bulk<'_, A>,
    dry_run: bool,
    yes: bool,
    json: bool,
    out: &mut dyn Write,
) -> CliResult {
    let name = bulk.action.name();
    let mut tally = if dry_run {
        bulk.dry_run()?
    } else {
        bulk.preview()?
    };
    if !dry_run {
        if tally.matched > CONFIRM_ABOVE && !yes {
            return Err(Error::ConfirmationRequired(format!(
                "{} {}s match {}; add --yes to act on all of them (--dry-run lists the first)",
                tally.matched,
                bulk.action.noun(),
                tally.filter,
            ))
            .into());
        }
        bulk.apply(&mut tally)?;
    }
    if json {
        json_line(out, &tally)?;
    } else if dry_run {
        writeln!(
            out,
            "{name}: {} {}(s) match {}{}; {}; dry run, nothing changed",
            tally.matched,
            bulk.action.noun(),
            tally.filter,
            first_of(&tally),
            bulk.would_summary(&tally),
        )?;
        for refusal in tally.would.iter().flat_map(|w| &w.refusals) {
            writeln!(out, "  would refuse {refusal}")?;
        }
    } else {
        writeln!(
            out,
            "{name} over {}: {}",
            tally.filter,
            bulk.summary(&tally)
        )?;
        for refusal in &tally.refusals {
            writeln!(out, "  refused {refusal}")?;
        }
    }
    if tally.refused > 0 && !dry_run {
        return Err(Error::ItemsRefused(format!(
            "{} of {} matched {}(s) refused",
            tally.refused,
            tally.matched,
            bulk.action.noun()
        ))
        .into());
    }
    Ok(())
}

fn first_of(tally: &Tally) -> String {
    if tally.first.is_empty() {
        String::new()
    } else {
        let more = if tally.matched > tally.first.len() {
            ", …"
        } else {
            ""
        };
        format!(
            " (first: {}{more})",
            tally
                .first
                .iter()
                .map(|id| cell(id))
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}
