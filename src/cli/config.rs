//! `leasehold config check FILE`: validates a `leasehold.toml` ([`super::settings`]) by the
//! same rules the authority and the dashboard apply when they read it, and says what it
//! sets. Exit 0 when it is good, 2 with one located line when it is not.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;

use clap::Subcommand;
use serde::Serialize;

use super::CliResult;
use super::authority::handler_set;
use super::output::json_line;
use super::settings::Settings;
use crate::authority::external::Target;
use crate::foundation::text_cell::{cell, escape};
use crate::model::HandlerVersion;
use crate::store::url::StoreUrl;

/// `leasehold config …`.
#[derive(Debug, Clone, Subcommand)]
pub enum ConfigCommand {
    /// Check a config file: its shape, every knob, every handler.
    Check {
        /// The file.
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// One JSON object.
        #[arg(long)]
        json: bool,
    },
}

/// The `--json` answer: what the file sets.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Checked {
    file: String,
    store: Option<String>,
    authority: BTreeMap<String, String>,
    dashboard: BTreeMap<String, String>,
    handlers: Vec<Handler>,
}

/// One handler of the file.
#[derive(Serialize)]
struct Handler {
    name: String,
    version: String,
    kind: &'static str,
}

/// Runs `leasehold config …`.
///
/// # Errors
/// A file that cannot be read or has a mistake (exit 2).
#[expect(clippy::too_many_lines, reason = "one arm per `config` subcommand")]
pub fn run(command: &ConfigCommand, out: &mut dyn Write) -> CliResult {
    let ConfigCommand::Check { file, json } = command;
    let settings = Settings::load(file)?;
    // A file for an authority is checked against the handlers it would run, as the
    // authority checks it: it must name some, and its limits and rates must be on them.
    if settings.for_authority {
        let workload = handler_set(None, &HandlerVersion::demo(), 0, Some(&settings))?;
        Settings::check_handler_limits(Some(&settings), &[], &workload)?;
    }
    let a = &settings.authority;
    let ms = |v: Option<i64>| v.map(crate::clock::format_duration);
    let authority: BTreeMap<String, String> = [
        ("instance", a.instance.clone()),
        ("build", a.build.clone()),
        ("workload", a.workload.clone()),
        ("lease", ms(a.lease_ms)),
        ("renew", ms(a.renew_ms)),
        ("poll", ms(a.poll_ms)),
        ("concurrency", a.concurrency.map(|n| n.to_string())),
        ("batch", a.batch.map(|n| n.to_string())),
        ("metrics_addr", a.metrics_addr.clone()),
        (
            "log_format",
            a.log_format.map(|f| format!("{f:?}").to_lowercase()),
        ),
        (
            "exec_log",
            a.exec_log.as_ref().map(|p| p.display().to_string()),
        ),
        ("keep_finished", ms(a.keep_finished_ms)),
        ("keep_audit", ms(a.keep_audit_ms)),
        ("dedup_window", ms(a.dedup_window_ms)),
        (
            "dedup_windows",
            (!a.dedup_windows.is_empty()).then(|| {
                let each: Vec<String> = a
                    .dedup_windows
                    .iter()
                    .map(|(s, w)| format!("{s} {}", crate::clock::format_duration(*w)))
                    .collect();
                each.join(", ")
            }),
        ),
        ("trim_every", ms(a.trim_every_ms)),
        ("reclaim_after", ms(a.reclaim_after_ms)),
        ("step_aside", a.step_aside.map(|s| s.as_str().to_owned())),
        (
            "retry",
            (!a.retry.is_empty()).then(|| {
                let each: Vec<String> = a
                    .retry
                    .iter()
                    .map(|(handler, policy)| format!("{handler} {}", policy.describe()))
                    .collect();
                each.join("; ")
            }),
        ),
        (
            "handler_rates",
            (!a.handler_rates.is_empty()).then(|| {
                let each: Vec<String> = (a.handler_rates.iter())
                    .map(|(h, rate)| format!("{h} {rate}"))
                    .collect();
                each.join(", ")
            }),
        ),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
    .collect();
    let d = &settings.dashboard;
    let dashboard: BTreeMap<String, String> = [
        ("theme", d.theme.clone()),
        ("read_only", d.read_only.map(|b| b.to_string())),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.map(|v| (k.to_owned(), v)))
    .collect();
    let handlers = settings
        .handlers
        .handlers
        .iter()
        .map(|h| {
            let kind = match &h.target {
                Target::Exec(_) => "exec",
                Target::Http(_) => "http",
            };
            Handler {
                name: h.name.clone(),
                version: h.version.to_string(),
                kind,
            }
        })
        .collect();
    let checked = Checked {
        file: file.display().to_string(),
        // Never the password: the store as operators are shown it.
        store: settings
            .store
            .as_deref()
            .and_then(|s| StoreUrl::parse(s).ok())
            .map(|u| u.to_string()),
        authority,
        dashboard,
        handlers,
    };
    if *json {
        json_line(out, &checked)?;
        return Ok(());
    }
    writeln!(out, "{}: ok", escape(&checked.file))?;
    if let Some(store) = &checked.store {
        writeln!(out, "  store      {}", escape(store))?;
    }
    for (section, pairs) in [
        ("authority", &checked.authority),
        ("dashboard", &checked.dashboard),
    ] {
        if !pairs.is_empty() {
            let set: Vec<String> = pairs
                .iter()
                // Whole: the summary is what says what the file sets.
                .map(|(k, v)| format!("{k} {}", escape(v)))
                .collect();
            writeln!(out, "  {section:<10} {}", set.join(", "))?;
        }
    }
    for h in &checked.handlers {
        writeln!(
            out,
            "  handler    {} {} ({})",
            cell(&h.name),
            h.version,
            h.kind
        )?;
    }
    if !settings.for_authority {
        writeln!(
            out,
            "  handlers   none: a file for the dashboard (an authority refuses it)"
        )?;
    }
    Ok(())
}
