//! `leasehold inspect --store STORE VIEW [--json] [--limit N] [--filter EXPR] [--after KEY]
//! [--window SPAN]`.
//!
//! One page of one view: an aligned table for people (short digests, relative instants,
//! hostile text escaped), or with `--json` one object per row and line with camelCase keys.
//! Every read is a keyed page of an index-backed list; `--after KEY` continues from the
//! key printed under the previous page (on stderr with `--json`).
//!
//! Filters (`--filter 'state:pending,retry kind:effect'`, repeatable) use the dashboard's
//! grammar ([`crate::ops::filter`]) and map onto the store's own filtered reads, so they
//! never scan: `work` takes `state:`, `kind:`, `owner:`, `compat:` and an id prefix;
//! `workflows` takes `status:` and an id prefix; `audit` (newest first) takes `actor:` and
//! `action:`, compared whole over a bounded number of entries a page
//! ([`crate::ops::audit`]). Other views take no filter (start at a key with `--after`). `compatible` is defined in [`crate::ops::live_builds`]. `failovers`
//! and `fenced` (in `incidents.rs`) list by time, newest first, over `--window`.
//!
//! One file per view; each declares its row (the JSON object) and the row's table cells,
//! and prints through the one renderer in `render.rs`.

use std::io::Write;

use clap::{Args, ValueEnum};

mod audit;
mod authorities;
mod builds;
mod cursors;
mod events;
mod horizon;
mod incidents;
mod leases;
mod overview;
mod render;
mod schedules;
mod triage;
mod work;
mod workflows;

use super::{CliResult, Failure, StoreArg};
use crate::clock::Millis;
use crate::foundation::text_cell::cell_max;
use crate::model::PageRequest;
use crate::ops::filter::{Filter, Subject};
use crate::store::Store;
use crate::store::url::OpenMode;

/// Which view to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum View {
    /// Headline counts by kind, state and build; authorities; events.
    Overview,
    /// Registered authority processes and their liveness.
    Authorities,
    /// Leases by resource: owner, generation, expiry.
    Leases,
    /// Durable work items (effects, schedule firings, cursors).
    Work,
    /// Workflow instances.
    Workflows,
    /// Subscription delivery cursors.
    Cursors,
    /// Event ingestions: dedup outcome and journal seq.
    Events,
    /// Schedules: trigger, catch-up, next due.
    Schedules,
    /// Operator actions, newest first (`--filter 'actor:NAME action:NAME'`).
    Audit,
    /// Grants that took a resource from a holder that had not released it (`--window`).
    Failovers,
    /// Refused (fenced) writes and who held the resource then (`--window`).
    Fenced,
    /// Everything that needs a person, grouped by reason, with what to do.
    Triage,
    /// The running builds against the unfinished work: who can run what, what is
    /// stranded, what stopping a build would strand.
    Builds,
    /// What becomes due over the next `--window` (default 15m) in ten slices: schedule
    /// firings, delayed items, retry backoffs, workflow timers.
    Horizon,
    /// The fleet's facts as OpenMetrics text (the names an authority's `/metrics` uses).
    Metrics,
}

impl View {
    fn name(self) -> &'static str {
        match self {
            Self::Overview => "overview",
            Self::Authorities => "authorities",
            Self::Leases => "leases",
            Self::Work => "work",
            Self::Workflows => "workflows",
            Self::Cursors => "cursors",
            Self::Events => "events",
            Self::Schedules => "schedules",
            Self::Audit => "audit",
            Self::Failovers => "failovers",
            Self::Fenced => "fenced",
            Self::Triage => "triage",
            Self::Builds => "builds",
            Self::Horizon => "horizon",
            Self::Metrics => "metrics",
        }
    }

    /// What the filter grammar knows this view as.
    fn subject(self) -> Subject {
        match self {
            Self::Work => Subject::Work,
            Self::Workflows => Subject::Workflows,
            Self::Audit => Subject::Audit,
            other => Subject::Other(other.name()),
        }
    }
}

/// Arguments of `leasehold inspect`.
#[derive(Debug, Clone, Args)]
pub struct InspectArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The view to print.
    #[arg(value_enum, value_name = "VIEW")]
    pub view: View,
    /// One JSON object per line instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Rows per page.
    #[arg(long, default_value_t = 50, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub limit: u32,
    /// `field:value` pairs, e.g. `state:pending,retry`, `kind:effect`, `owner:a-1`,
    /// `compat:incompatible`, `status:waiting`, `actor:ana@ops`, `action:requeue-work`.
    #[arg(long, value_name = "EXPR")]
    pub filter: Vec<String>,
    /// Continue after this row key (printed under the previous page).
    #[arg(long, value_name = "KEY")]
    pub after: Option<String>,
    /// How far back `failovers` and `fenced` look, or how far ahead `horizon` does, e.g.
    /// `15m` (the default), `90s`, `2h`.
    #[arg(long, value_name = "SPAN")]
    pub window: Option<String>,
}

/// Runs `leasehold inspect`.
///
/// # Errors
/// A store failure (exit 2) or a bad filter (exit 2).
pub fn run(args: &InspectArgs, out: &mut dyn Write) -> CliResult {
    let filter = parse_filter(args.view, &args.filter)?;
    if args.view == View::Metrics && args.json {
        return Err(Failure::usage(
            "the metrics view is OpenMetrics text; --json does not apply",
        ));
    }
    if matches!(
        args.view,
        View::Overview | View::Triage | View::Builds | View::Horizon | View::Metrics
    ) && args.after.is_some()
    {
        return Err(Failure::usage(format!(
            "--after does not apply to the {}",
            args.view.name()
        )));
    }
    if args.window.is_some() && !matches!(args.view, View::Failovers | View::Fenced | View::Horizon)
    {
        return Err(Failure::usage(format!(
            "--window applies to failovers, fenced and horizon, not {}",
            args.view.name()
        )));
    }
    let window = incidents::window(args.window.as_deref())?;
    let store = args.store.open(OpenMode::ReadOnly)?;
    let now = store.now();
    let page = match &args.after {
        Some(key) => PageRequest::after(key.clone(), args.limit as usize),
        None => PageRequest::first(args.limit as usize),
    };
    let ctx = Ctx {
        store: &store,
        now,
        page,
        json: args.json,
    };
    let next = match args.view {
        View::Overview => overview::print(&ctx, out)?,
        View::Authorities => authorities::print(&ctx, out)?,
        View::Leases => leases::print(&ctx, out)?,
        View::Work => work::print(&ctx, &filter, out)?,
        View::Workflows => workflows::print(&ctx, &filter, out)?,
        View::Cursors => cursors::print(&ctx, out)?,
        View::Events => events::print(&ctx, out)?,
        View::Schedules => schedules::print(&ctx, out)?,
        View::Audit => audit::print(&ctx, &filter, out)?,
        View::Failovers => incidents::print_failovers(&ctx, window, out)?,
        View::Fenced => incidents::print_fenced(&ctx, window, out)?,
        View::Triage => triage::print(&ctx, out)?,
        View::Builds => builds::print(&ctx, out)?,
        View::Horizon => horizon::print(&ctx, window, out)?,
        View::Metrics => {
            out.write_all(crate::ops::fleet_metrics::render(&store, now)?.as_bytes())?;
            None
        }
    };
    if let Some(key) = next {
        let hint = format!("(more rows: --after {})", cell_max(&key, 200));
        if args.json {
            let _ = writeln!(std::io::stderr(), "{hint}");
        } else {
            writeln!(out, "{hint}")?;
        }
    }
    Ok(())
}

/// What every view needs.
struct Ctx<'a> {
    store: &'a Store,
    now: Millis,
    page: PageRequest,
    json: bool,
}

/// Parses the `--filter` expressions (joined, as one filter) for `view`. A view whose
/// store read takes no filter refuses one rather than narrowing a single page.
fn parse_filter(view: View, exprs: &[String]) -> Result<Filter, Failure> {
    let filter =
        Filter::parse(view.subject(), &exprs.join(" ")).map_err(|e| Failure::usage(e.0))?;
    if filter.page_prefix().is_some() {
        return Err(Failure::usage(format!(
            "the {} view takes no filter here; start at a key with --after KEY",
            view.name()
        )));
    }
    Ok(filter)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn filters_join_into_one_and_views_without_store_filters_refuse() {
        let f = parse_filter(
            View::Work,
            &["state:pending,retry kind:effect".into(), "owner:a-1".into()],
        )
        .unwrap();
        assert_eq!(f.owner.as_deref(), Some("a-1"));
        assert_eq!(f.groups.len(), 2);
        assert!(parse_filter(View::Leases, &["owner:x".into()]).is_err());
        let refused = parse_filter(View::Leases, &["lease-1".into()]).unwrap_err();
        assert!(refused.message.contains("--after"), "{}", refused.message);
        assert!(parse_filter(View::Work, &["bogus:1".into()]).is_err());
        assert!(parse_filter(View::Work, &["state:".into()]).is_err());
        assert!(parse_filter(View::Workflows, &["order-".into()]).is_ok());
    }
}
