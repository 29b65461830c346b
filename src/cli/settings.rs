//! `leasehold.toml`: one file for an authority's knobs, the dashboard's, the store and the
//! handler table, given with `--config FILE` (or `LEASEHOLD_CONFIG`).
//!
//! ```toml
//! store = "postgres://leasehold@db.internal:5432/work"
//!
//! [authority]
//! instance = "billing-1"
//! build = "v42"
//! # workload = "default" # the built-in demo handlers, only when named
//! lease = "30s"          # durations: 1500ms, 30s, 5m
//! renew = "10s"
//! poll = "1s"
//! concurrency = 8
//! batch = 32
//! metrics_addr = "127.0.0.1:9464"
//! log_format = "json"    # human | json | off
//! handler_limits = { charge-card = 2 }
//! # a handler's retries: 2s, 6s, 10s, 10s…; at most 4 attempts (lowers an item's own)
//! retry = { charge-card = { max_attempts = 4, initial_delay = "2s", multiplier = 3, max_delay = "10s" } }
//! handler_rates = { charge-card = "10/1s" } # fleet-wide: every authority on the store
//! keep_finished = "7d"   # finished work and instances, keyed answers, ingestions
//! keep_audit = "30d"
//! dedup_window = "7d"    # an event id older than this is accepted again
//! dedup_windows = { stripe = "30d" }
//! trim_every = "5s"
//! reclaim_after = "500ms" # a lapsed claim's owner may still finish this long
//! step_aside = "auto"    # from a crowded write lock: auto (SQLite only) | on | off
//!
//! [dashboard]
//! theme = "light"
//! read_only = true
//!
//! [handlers.send-email]  # see docs/HANDLERS.md
//! version = "1.0.0"
//! exec = ["python3", "send_email.py"]
//! ```
//!
//! A value given on the command line wins over the environment (`LEASEHOLD_*`), which wins
//! over the file, which wins over the defaults. Every mistake is one line naming the file,
//! the line and the key; an unknown key names the nearest valid one; a knob is checked by
//! the same rules as its flag (`leasehold config check FILE` runs them all). A file with an
//! `[authority]` or `[handlers]` table is for an authority: it must name what the
//! authority runs (handlers, or a `workload`), and its `handler_limits`, `handler_rates`
//! and `retry` must be on those.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde::de::IgnoredAny;
use toml::Spanned;

use super::log::LogFormat;
use crate::authority::AuthorityConfig;
use crate::authority::config::StepAside;
use crate::authority::external::HandlerConfig;
use crate::authority::handlers::Workload;
use crate::clock::{Millis, parse_duration};
use crate::error::{Error, Result};
use crate::foundation::file_input::read_text;
use crate::foundation::toml_file::Located;
use crate::model::Rate;
use crate::rules::retry::{Multiplier, RetryPolicy};
use crate::tui::theme::ThemeSet;

/// The largest config file read.
const MAX_BYTES: u64 = 256 * 1024;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSettings {
    store: Option<Spanned<String>>,
    authority: Option<RawAuthority>,
    dashboard: Option<RawDashboard>,
    /// Checked by [`HandlerConfig`].
    #[serde(rename = "handlers")]
    _handlers: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAuthority {
    instance: Option<Spanned<String>>,
    build: Option<Spanned<String>>,
    workload: Option<Spanned<String>>,
    lease: Option<Spanned<String>>,
    renew: Option<Spanned<String>>,
    poll: Option<Spanned<String>>,
    concurrency: Option<Spanned<i64>>,
    batch: Option<Spanned<i64>>,
    metrics_addr: Option<Spanned<String>>,
    log_format: Option<Spanned<String>>,
    exec_log: Option<Spanned<String>>,
    handler_limits: Option<BTreeMap<Spanned<String>, Spanned<i64>>>,
    retry: Option<BTreeMap<Spanned<String>, RawRetry>>,
    handler_rates: Option<BTreeMap<Spanned<String>, Spanned<String>>>,
    keep_finished: Option<Spanned<String>>,
    keep_audit: Option<Spanned<String>>,
    dedup_window: Option<Spanned<String>>,
    dedup_windows: Option<BTreeMap<Spanned<String>, Spanned<String>>>,
    trim_every: Option<Spanned<String>>,
    reclaim_after: Option<Spanned<String>>,
    step_aside: Option<Spanned<String>>,
}

/// One handler's `retry = { … }`; a key left out keeps the default's.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRetry {
    max_attempts: Option<Spanned<i64>>,
    initial_delay: Option<Spanned<String>>,
    multiplier: Option<Spanned<f64>>,
    max_delay: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDashboard {
    theme: Option<Spanned<String>>,
    read_only: Option<Spanned<bool>>,
}

/// An authority's knobs as the file gives them (`None`: not in the file); the command line's
/// flags are read into one more of these and applied over the file's.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuthorityKnobs {
    pub instance: Option<String>,
    pub build: Option<String>,
    pub workload: Option<String>,
    pub lease_ms: Option<Millis>,
    pub renew_ms: Option<Millis>,
    pub poll_ms: Option<Millis>,
    pub concurrency: Option<usize>,
    pub batch: Option<usize>,
    pub metrics_addr: Option<String>,
    pub log_format: Option<LogFormat>,
    /// Relative to the file's directory.
    pub exec_log: Option<PathBuf>,
    /// At most this many items of a handler at once.
    pub handler_limits: BTreeMap<String, usize>,
    /// Retry policies of handlers.
    pub retry: BTreeMap<String, RetryPolicy>,
    /// At most N items of a handler per interval, fleet-wide.
    pub handler_rates: BTreeMap<String, Rate>,
    pub keep_finished_ms: Option<Millis>,
    pub keep_audit_ms: Option<Millis>,
    pub dedup_window_ms: Option<Millis>,
    /// Dedup windows of particular event sources.
    pub dedup_windows: BTreeMap<String, Millis>,
    pub trim_every_ms: Option<Millis>,
    pub reclaim_after_ms: Option<Millis>,
    pub step_aside: Option<StepAside>,
}

/// The dashboard's knobs as the file gives them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DashboardKnobs {
    pub theme: Option<String>,
    pub read_only: Option<bool>,
}

/// A loaded, checked `leasehold.toml`.
#[derive(Debug, Clone)]
pub struct Settings {
    pub path: PathBuf,
    pub store: Option<String>,
    pub authority: AuthorityKnobs,
    pub dashboard: DashboardKnobs,
    /// Its handler table (empty when it has none).
    pub handlers: HandlerConfig,
    /// Whether it is written for an authority (it has an `[authority]` or a `[handlers]`
    /// table), and so must name what the authority runs; a file of the store and the
    /// dashboard's knobs alone is for `attach`.
    pub for_authority: bool,
    /// The file's text and where each `handler_limits` and `handler_rates` name stands in
    /// it, for an error located at the name once the handler set it must belong to is
    /// known.
    text: String,
    limit_spans: BTreeMap<String, Range<usize>>,
    /// Where each `retry` handler name stands, for the same reason.
    retry_spans: BTreeMap<String, Range<usize>>,
}

impl Settings {
    /// Reads and checks the file at `path`: its shape, every knob by its flag's rules, and
    /// its handler table.
    ///
    /// # Errors
    /// `INVALID`, in one line `FILE:LINE: KEY: why` (or `FILE: why` when it cannot be
    /// read).
    pub fn load(path: &Path) -> Result<Self> {
        let text = read_text(path, MAX_BYTES)
            .map_err(|e| Error::Invalid(format!("config {}: {e}", path.display())))?;
        let file = Located { path, text: &text };
        let raw: RawSettings = file.parse()?;
        let dir = std::path::absolute(path)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("."));
        let authority = match &raw.authority {
            Some(a) => authority_knobs(&file, &dir, a)?,
            None => AuthorityKnobs::default(),
        };
        let dashboard = match &raw.dashboard {
            Some(d) => dashboard_knobs(&file, d)?,
            None => DashboardKnobs::default(),
        };
        let store = raw
            .store
            .as_ref()
            .map(|store| {
                store_from(&dir, store.get_ref()).map_err(|e| file.error(store.span(), &bare(e)))
            })
            .transpose()?;
        let limit_spans = raw
            .authority
            .iter()
            .flat_map(|a| {
                let limits = a.handler_limits.iter().flatten().map(|(name, _)| name);
                let rates = a.handler_rates.iter().flatten().map(|(name, _)| name);
                limits.chain(rates)
            })
            .map(|name| (name.get_ref().clone(), name.span()))
            .collect();
        let retry_spans = raw
            .authority
            .iter()
            .filter_map(|a| a.retry.as_ref())
            .flatten()
            .map(|(name, _)| (name.get_ref().clone(), name.span()))
            .collect();
        let handlers = HandlerConfig::load(path)?;
        Ok(Self {
            path: path.to_path_buf(),
            store,
            authority,
            dashboard,
            for_authority: raw.authority.is_some() || !handlers.handlers.is_empty(),
            handlers,
            text,
            limit_spans,
            retry_spans,
        })
    }

    /// Refuses a handler limit, rate or retry policy on a name `workload` does not run,
    /// from the file (located at the name) or a limit from `--handler-limit` in `flags`
    /// (which win over the file): it would never apply, and a misspelt name is the likely
    /// cause, so the nearest handler is named.
    ///
    /// # Errors
    /// `INVALID`, one line.
    pub fn check_handler_limits(
        settings: Option<&Self>,
        flags: &[(String, usize)],
        workload: &Workload,
    ) -> Result<()> {
        for (name, limit) in flags {
            if let Some(why) = workload.unknown_handler(name) {
                return Err(Error::Invalid(format!(
                    "--handler-limit {name}={limit}: {why}"
                )));
            }
        }
        let Some(settings) = settings else {
            return Ok(());
        };
        let file = Located {
            path: &settings.path,
            text: &settings.text,
        };
        for (name, span) in settings.limit_spans.iter().chain(&settings.retry_spans) {
            if let Some(why) = workload.unknown_handler(name) {
                return Err(file.error(span.clone(), &why));
            }
        }
        Ok(())
    }
}

/// A duration knob, if given: positive, as `30s`, `5m`, `1500ms` write it.
fn positive_duration(file: &Located<'_>, v: Option<&Spanned<String>>) -> Result<Option<Millis>> {
    v.map(|v| match parse_duration(v.get_ref()) {
        Some(ms) if ms > 0 => Ok(ms),
        _ => Err(file.error(
            v.span(),
            &format!(
                "{:?} is not a positive duration (30s, 5m, 1500ms)",
                v.get_ref()
            ),
        )),
    })
    .transpose()
}

#[expect(
    clippy::too_many_lines,
    reason = "the knob table: one line per `[authority]` key"
)]
fn authority_knobs(file: &Located<'_>, dir: &Path, a: &RawAuthority) -> Result<AuthorityKnobs> {
    let duration = |v: &Option<Spanned<String>>| positive_duration(file, v.as_ref());
    let count = |v: &Option<Spanned<i64>>| -> Result<Option<usize>> {
        v.as_ref()
            .map(|v| {
                usize::try_from(*v.get_ref())
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| file.error(v.span(), "must be a whole number of at least 1"))
            })
            .transpose()
    };
    let log_format = a
        .log_format
        .as_ref()
        .map(|v| {
            <LogFormat as clap::ValueEnum>::from_str(v.get_ref(), true)
                .map_err(|_| file.error(v.span(), "must be human, json or off"))
        })
        .transpose()?;
    let knobs = AuthorityKnobs {
        instance: a.instance.as_ref().map(|v| v.get_ref().clone()),
        build: a.build.as_ref().map(|v| v.get_ref().clone()),
        workload: a.workload.as_ref().map(|v| v.get_ref().clone()),
        lease_ms: duration(&a.lease)?,
        renew_ms: duration(&a.renew)?,
        poll_ms: duration(&a.poll)?,
        concurrency: count(&a.concurrency)?,
        batch: count(&a.batch)?,
        metrics_addr: a.metrics_addr.as_ref().map(|v| v.get_ref().clone()),
        log_format,
        exec_log: a.exec_log.as_ref().map(|v| dir.join(v.get_ref())),
        handler_limits: a
            .handler_limits
            .iter()
            .flatten()
            .map(|(name, n)| {
                crate::ids::check_id("handler", name.get_ref())
                    .map_err(|e| file.error(name.span(), &bare(e)))?;
                let limit = count(&Some(n.clone()))?.unwrap_or(1);
                Ok((name.get_ref().clone(), limit))
            })
            .collect::<Result<_>>()?,
        retry: a
            .retry
            .iter()
            .flatten()
            .map(|(name, raw)| {
                crate::ids::check_id("handler", name.get_ref())
                    .map_err(|e| file.error(name.span(), &bare(e)))?;
                let policy = retry_policy(file, name, raw)?;
                Ok((name.get_ref().clone(), policy))
            })
            .collect::<Result<_>>()?,
        handler_rates: a
            .handler_rates
            .iter()
            .flatten()
            .map(|(name, rate)| {
                crate::ids::check_id("handler", name.get_ref())
                    .map_err(|e| file.error(name.span(), &bare(e)))?;
                let rate: Rate = (rate.get_ref().parse())
                    .map_err(|why: String| file.error(rate.span(), &why))?;
                Ok((name.get_ref().clone(), rate))
            })
            .collect::<Result<_>>()?,
        keep_finished_ms: duration(&a.keep_finished)?,
        keep_audit_ms: duration(&a.keep_audit)?,
        dedup_window_ms: duration(&a.dedup_window)?,
        dedup_windows: a
            .dedup_windows
            .iter()
            .flatten()
            .map(|(source, window)| {
                crate::ids::check_id("event source", source.get_ref())
                    .map_err(|e| file.error(source.span(), &bare(e)))?;
                let ms = duration(&Some(window.clone()))?.unwrap_or(0);
                Ok((source.get_ref().clone(), ms))
            })
            .collect::<Result<_>>()?,
        trim_every_ms: duration(&a.trim_every)?,
        reclaim_after_ms: duration(&a.reclaim_after)?,
        step_aside: a
            .step_aside
            .as_ref()
            .map(|v| StepAside::parse(v.get_ref()).map_err(|why| file.error(v.span(), &why)))
            .transpose()?,
    };
    // The same rules as the flags: an unsafe combination is refused here, at the key
    // that makes it so.
    let config = knobs.apply(AuthorityConfig::new(
        knobs
            .instance
            .clone()
            .unwrap_or_else(|| "config-check".into()),
        knobs.build.clone().unwrap_or_else(|| "v1".into()),
    ));
    if let Err(e) = config.validate() {
        let why = bare(e);
        let key = [
            ("renewIntervalMs", &a.renew),
            ("leaseDurationMs", &a.lease),
            ("pollIntervalMs", &a.poll),
            ("instanceId", &a.instance),
            ("build", &a.build),
            ("finished retention", &a.keep_finished),
            ("audit retention", &a.keep_audit),
            ("dedup window must", &a.dedup_window),
        ]
        .into_iter()
        .find(|(name, v)| why.contains(name) && v.is_some())
        .and_then(|(_, v)| v.as_ref().map(Spanned::span))
        .or_else(|| {
            // A source's own window: the key of that source.
            a.dedup_windows
                .iter()
                .flatten()
                .find_map(|(source, window)| {
                    why.contains(&format!("source {:?}", source.get_ref()))
                        .then(|| window.span())
                })
        });
        return Err(file.error(key.unwrap_or(0..0), &why));
    }
    Ok(knobs)
}

/// The file's `store`: a relative SQLite path is read from the file's directory, as its
/// `exec`, `cwd` and `exec_log` paths are, so the file names the same store from wherever
/// it is used.
fn store_from(dir: &Path, text: &str) -> Result<String> {
    Ok(match crate::store::url::StoreUrl::parse(text)? {
        crate::store::url::StoreUrl::Sqlite(path) if path.is_relative() => {
            dir.join(path).display().to_string()
        }
        _ => text.to_owned(),
    })
}

/// One handler's policy from its `retry` table, every key checked where it stands: a
/// duration as the other knobs', and the policy's own rules
/// ([`RetryPolicy::validate`]) at the key they name, else at the handler's name.
fn retry_policy(file: &Located<'_>, name: &Spanned<String>, raw: &RawRetry) -> Result<RetryPolicy> {
    let duration = |v: &Option<Spanned<String>>| positive_duration(file, v.as_ref());
    let default = RetryPolicy::default();
    let max_attempts = raw
        .max_attempts
        .as_ref()
        .map(|v| {
            u32::try_from(*v.get_ref())
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    file.error(
                        v.span(),
                        &format!(
                            "retry.{}: max_attempts must be a whole number of at least 1",
                            name.get_ref()
                        ),
                    )
                })
        })
        .transpose()?;
    let multiplier = match &raw.multiplier {
        Some(v) => Multiplier::new(*v.get_ref())
            .map_err(|e| file.error(v.span(), &format!("retry.{}: {}", name.get_ref(), bare(e))))?,
        None => default.multiplier,
    };
    let policy = RetryPolicy {
        max_attempts,
        initial_delay_ms: duration(&raw.initial_delay)?.unwrap_or(default.initial_delay_ms),
        multiplier,
        max_delay_ms: duration(&raw.max_delay)?.unwrap_or(default.max_delay_ms),
    };
    policy.validate(name.get_ref()).map_err(|e| {
        let why = bare(e);
        let at = [
            ("max_delay", raw.max_delay.as_ref().map(Spanned::span)),
            (
                "initial_delay",
                raw.initial_delay.as_ref().map(Spanned::span),
            ),
        ]
        .into_iter()
        .find_map(|(key, span)| span.filter(|_| why.contains(&format!("{key} "))))
        .unwrap_or_else(|| name.span());
        file.error(at, &why)
    })?;
    Ok(policy)
}

fn dashboard_knobs(file: &Located<'_>, d: &RawDashboard) -> Result<DashboardKnobs> {
    if let Some(theme) = &d.theme {
        // The shipped themes and the user's, as the dashboard would load it.
        let themes = ThemeSet::new(ThemeSet::default_user_dir());
        themes
            .load(theme.get_ref())
            .map_err(|e| file.error(theme.span(), &bare(e)))?;
    }
    Ok(DashboardKnobs {
        theme: d.theme.as_ref().map(|v| v.get_ref().clone()),
        read_only: d.read_only.as_ref().map(|v| *v.get_ref()),
    })
}

impl AuthorityKnobs {
    /// `config` with every knob the file gives applied over it (the heartbeat follows
    /// the lease as it does for the flags).
    #[must_use]
    pub fn apply(&self, mut config: AuthorityConfig) -> AuthorityConfig {
        if let Some(lease) = self.lease_ms {
            let renew = self.renew_ms.unwrap_or(lease / 3);
            config = config.with_timing(lease, renew);
        } else if let Some(renew) = self.renew_ms {
            config.renew_interval_ms = renew;
        }
        if let Some(poll) = self.poll_ms {
            config.poll_interval_ms = poll;
        }
        if let Some(n) = self.concurrency {
            config.worker_concurrency = n;
        }
        if let Some(n) = self.batch {
            config.claim_batch_size = n;
        }
        config.handler_limits.extend(self.handler_limits.clone());
        config.retry.extend(self.retry.clone());
        config.handler_rates.extend(self.handler_rates.clone());
        if let Some(ms) = self.keep_finished_ms {
            config.retention.finished_ms = ms;
        }
        if let Some(ms) = self.keep_audit_ms {
            config.retention.audit_ms = ms;
        }
        if let Some(ms) = self.dedup_window_ms {
            config.retention.dedup_ms = ms;
        }
        config
            .retention
            .dedup_by_source
            .extend(self.dedup_windows.clone());
        if let Some(ms) = self.trim_every_ms {
            config.trim_interval_ms = ms;
        }
        if let Some(ms) = self.reclaim_after_ms {
            config.reclaim_delay_ms = ms;
        }
        if let Some(when) = self.step_aside {
            config.step_aside = when;
        }
        config
    }
}

/// An error's message without its `INVALID: ` prefix (the line says where instead).
fn bare(e: Error) -> String {
    match e {
        Error::Invalid(why) => why,
        other => other.to_string(),
    }
}
