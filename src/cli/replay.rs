//! `leasehold replay`: what the store's durable history says happened between two
//! instants — the window's failovers, fenced writes, failures and throughput, each
//! record with `--steps`, and one resource's owner, generation and state at a revision
//! with `--resource`. Reads the history a page at a time (`ops/replay.rs`).

use std::io::Write;

use clap::Args;

use super::output::{Table, cell_max, json_line, when};
use super::{CliResult, Failure, StoreArg};
use crate::clock::Millis;
use crate::ops::replay::{self, ResourceAt, Span, Step, Steps, Summary};
use crate::ops::timefmt::{Zone, parse_instant, span};
use crate::store::Store;
use crate::store::url::OpenMode;

/// `leasehold replay`.
#[derive(Debug, Clone, Args)]
pub struct ReplayArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The window's start: 2026-12-01T03:10:00Z, 03:10 (today, local time),
    /// 2026-12-01 03:10, 15m (that long ago) or now.
    #[arg(long, default_value = "15m")]
    pub from: String,
    /// The window's end, in the same forms.
    #[arg(long, default_value = "now")]
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
    let instant = |text: &str| {
        parse_instant(text, now, Zone::Local).map_err(|e| Failure::usage(e.to_string()))
    };
    let (from, to) = (instant(&args.from)?, instant(&args.to)?);
    let window = replay::span(&store, from, to).map_err(|e| match e {
        crate::Error::Invalid(_) => Failure::usage(e.to_string()),
        other => other.into(),
    })?;
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
                what(&step)
            )?;
        }
    }
    Ok(())
}

/// One step in words: `claim by a-2 gen 3, took over a-1 gen 2 (lapsed 1.2s)`,
/// `complete by a-1 gen 2: REFUSED WORK_FENCED`.
fn what(step: &Step) -> String {
    match step {
        Step::Grant(g) => {
            let mut text = format!(
                "{} by {} gen {}",
                g.how,
                cell_max(&g.owner_id, 32),
                g.generation
            );
            if let Some(t) = &g.took_over {
                text.push_str(&format!(
                    ", took over {} gen {} (lapsed {})",
                    cell_max(&t.from_owner, 32),
                    t.from_generation,
                    span(t.lapsed_ms)
                ));
            }
            text
        }
        Step::Write(w) => {
            let who = format!(
                "{} by {} gen {}",
                w.verb,
                cell_max(&w.owner_id, 32),
                w.generation
            );
            if w.accepted {
                who
            } else {
                let why = w.refusal.as_deref().unwrap_or("refused");
                format!("{who}: REFUSED {}", cell_max(why, 40))
            }
        }
    }
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
    let refusals: Vec<String> = summary
        .refusals
        .iter()
        .map(|(why, n)| format!("{} {n}", cell_max(why, 32)))
        .collect();
    writeln!(
        out,
        "failovers {} · fenced writes {}{} · completions {} ({:.1}/s) · failures {} · claims {}",
        summary.failovers,
        summary.fenced_writes,
        if refusals.is_empty() {
            String::new()
        } else {
            format!(" ({})", refusals.join(", "))
        },
        summary.completions,
        summary.completions_per_sec,
        summary.failures,
        summary.claims
    )?;
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
    writeln!(
        out,
        "{} at revision {}: {} by {} gen {} (granted at revision {}; last change at revision {}, {})",
        cell_max(&at.resource, 48),
        at.revision,
        at.state,
        at.owner
            .as_deref()
            .map_or_else(|| "nobody".into(), |o| cell_max(o, 32)),
        at.generation,
        at.granted_at_revision
            .map_or_else(|| "-".into(), |r| r.to_string()),
        at.last_change_revision
            .map_or_else(|| "-".into(), |r| r.to_string()),
        at.last_change_at
            .map_or_else(|| "-".into(), |t| when(t, now)),
    )?;
    Ok(())
}
