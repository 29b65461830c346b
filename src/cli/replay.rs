//! `leasehold replay`: what the store's durable history says happened between two
//! instants — the window's failovers, fenced writes, failures and throughput, each
//! record with `--steps`, and one resource's owner, generation and state at a revision
//! with `--resource`. Reads the history a page at a time (`ops/replay.rs`).

use std::io::Write;

use clap::Args;

use super::output::{Table, json_line, when};
use super::{CliResult, Failure, StoreArg};
use crate::clock::Millis;
use crate::foundation::text_cell::cell_max;
use crate::foundation::timefmt::{Zone, span};
use crate::ops::replay::{self, ResourceAt, Span, Steps, Summary};
use crate::store::Store;
use crate::store::url::OpenMode;

/// `leasehold replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The window's start: 2026-12-01T03:10:00Z, 03:10 (today, local time),
    /// 2026-12-01 03:10, 15m (that long ago) or now.
    #[arg(long, default_value = replay::DEFAULT_FROM)]
    pub from: String,
    /// The window's end, in the same forms.
    #[arg(long, default_value = replay::DEFAULT_TO)]
    pub to: String,
    /// Also print every grant and write of the window, in revision order.
    #[arg(long)]
    pub steps: bool,
    /// One resource (a work item, an instance, a lease): its state at `--at` and its own
    /// steps in the window.
    #[arg(long, value_name = "ID")]
    pub resource: Option<String>,
    /// The revision `--resource` is shown at (default: the window's last).
    #[arg(long, value_name = "REVISION", requires = "resource")]
    pub at: Option<u64>,
    /// JSON lines instead of tables.
    #[arg(long)]
    pub json: bool,
}

/// Runs `leasehold replay`.
///
/// # Errors
/// An instant that cannot be read or a window that ends before it starts (exit 2), an
/// unreadable store, a resource the history does not hold.
pub fn run(args: &ReplayArgs, out: &mut dyn Write) -> CliResult {
    let store = args.store.open(OpenMode::ReadOnly)?;
    let now = store.now();
    let (from, to) = replay::parse_window(&args.from, &args.to, now, Zone::Local)
        .map_err(|e| Failure::usage(e.to_string()))?;
    let window = replay::span(&store, from, to)?;
    if let Some(resource) = args.resource.as_deref() {
        let at = replay::resource_at(&store, resource, args.at.unwrap_or(window.to_revision))?;
        print_resource(out, args.json, &window, &at, now)?;
        if args.steps {
            print_steps(&store, out, args.json, window, Some(resource), now)?;
        }
        return Ok(());
    }
    if args.steps {
        print_steps(&store, out, args.json, window, None, now)?;
    }
    let summary = replay::summarize(&store, window)?;
    print_summary(out, args.json, &window, &summary, now)
}

fn print_steps(
    store: &Store,
    out: &mut dyn Write,
    json: bool,
    window: Span,
    resource: Option<&str>,
    now: Millis,
) -> CliResult {
    let mut steps = Steps::new(store, window, resource);
    if !json {
        writeln!(out, "REV  AT  RESOURCE  WHAT")?;
    }
    while let Some(step) = steps.next_step()? {
        if json {
            json_line(out, &step)?;
        } else {
            writeln!(
                out,
                "{}  {}  {}  {}",
                step.revision(),
                when(step.at(), now),
                cell_max(step.resource(), 48),
                step.what(&cell_max)
            )?;
        }
    }
    Ok(())
}

fn headline(window: &Span, now: Millis) -> String {
    format!(
        "replay {} → {} · revisions {}–{}",
        when(window.from, now),
        when(window.to, now),
        window.from_revision,
        window.to_revision
    )
}

fn print_summary(
    out: &mut dyn Write,
    json: bool,
    window: &Span,
    summary: &Summary,
    now: Millis,
) -> CliResult {
    if json {
        json_line(
            out,
            &serde_json::json!({ "window": window, "summary": summary }),
        )?;
        return Ok(());
    }
    writeln!(
        out,
        "{} · {} records",
        headline(window, now),
        summary.records
    )?;
    writeln!(out, "{}", summary.line(&cell_max))?;
    if !summary.failover_steps.is_empty() {
        let mut table = Table::new(&["REV", "AT", "RESOURCE", "FROM", "TO", "GEN", "LAPSED"]);
        for f in &summary.failover_steps {
            table.row(vec![
                f.revision.to_string(),
                when(f.at, now),
                cell_max(&f.resource, 48),
                cell_max(&f.from, 32),
                cell_max(&f.to, 32),
                f.generation.to_string(),
                span(f.lapsed_ms),
            ]);
        }
        writeln!(out, "\nFAILOVERS")?;
        write!(out, "{}", table.render())?;
    }
    if !summary.by_owner.is_empty() {
        let mut table = Table::new(&["OWNER", "GRANTS", "COMPLETIONS", "REFUSED"]);
        for (owner, a) in &summary.by_owner {
            table.row(vec![
                cell_max(owner, 32),
                a.grants.to_string(),
                a.completions.to_string(),
                a.refused.to_string(),
            ]);
        }
        writeln!(out, "\nBY OWNER")?;
        write!(out, "{}", table.render())?;
    }
    Ok(())
}

fn print_resource(
    out: &mut dyn Write,
    json: bool,
    window: &Span,
    at: &ResourceAt,
    now: Millis,
) -> CliResult {
    if json {
        json_line(
            out,
            &serde_json::json!({ "window": window, "resource": at }),
        )?;
        return Ok(());
    }
    writeln!(out, "{}", headline(window, now))?;
    writeln!(out, "{}", at.line(&cell_max, &|t| when(t, now)))?;
    Ok(())
}
