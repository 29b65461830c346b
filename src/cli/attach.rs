//! `leasehold attach` (and its shorthand `leasehold STORE`): the dashboard over a store,
//! or over several (`leasehold attach A B …`, `:ctx NAME` switches between them).

use std::sync::Arc;

use clap::Args;

use super::settings::Settings;
use super::{CliResult, Failure, tokio_runtime};
use crate::foundation::actor::operator;
use crate::store::url::OpenMode;
use crate::tui::TuiOptions;
use crate::tui::stores::Attached;

/// `leasehold attach`.
#[derive(Debug, Clone, Args)]
pub struct AttachArgs {
    /// The work store: a SQLite file path or sqlite:PATH, postgres://…, or memory (or
    /// `store` in the config file). Several: one dashboard over all of them, the first
    /// on screen.
    #[arg(env = "LEASEHOLD_STORE", hide_env_values = true, value_name = "STORE")]
    pub store: Vec<String>,
    /// Disable operator actions (cancel); also `read_only` under `[dashboard]`.
    #[arg(long)]
    pub read_only: bool,
    /// A theme from `themes/` or a theme file (default: the config file's, else dark).
    #[arg(long, env = "LEASEHOLD_THEME")]
    pub theme: Option<String>,
    /// A `leasehold.toml` for the store and the dashboard's knobs (flags and environment
    /// win over it).
    #[arg(long, env = "LEASEHOLD_CONFIG", value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
}

/// Runs `leasehold attach`: the dashboard over every store given, each opened read-only
/// up front. A write handle is opened only for an operator action, on the store on
/// screen (never with `--read-only`), and never creates a store: a missing, empty or
/// foreign one is refused — one line each — before the terminal is touched.
///
/// # Errors
/// An unreadable store or no terminal (exit 2).
pub fn run(args: &AttachArgs) -> CliResult {
    let settings = args.config.as_deref().map(Settings::load).transpose()?;
    let file = settings.as_ref();
    let given: Vec<String> = if args.store.is_empty() {
        file.and_then(|s| s.store.clone()).into_iter().collect()
    } else {
        args.store.clone()
    };
    if given.is_empty() {
        return Err(Failure::usage("give a STORE (or `store = …` in --config)"));
    }
    let read_only = args.read_only || file.and_then(|s| s.dashboard.read_only).unwrap_or(false);
    let theme = args
        .theme
        .clone()
        .or_else(|| file.and_then(|s| s.dashboard.theme.clone()))
        .unwrap_or_else(|| "dark".into());
    let stores = open_all(&given, read_only)?;
    need_terminal()?;
    let tui = TuiOptions {
        refresh_ms: 250,
        read_only,
        theme,
        demo: None,
        actor: operator(),
        writer: None,
        tour: None,
        record: None,
    };
    tokio_runtime()?
        .block_on(crate::tui::run_attached(stores, tui))
        .map_err(Failure::from)
}

/// Opens every store read-only, each with the opener of its own write handle (none when
/// read-only). Every store that cannot be opened is reported, one line each; the last
/// is the failure returned.
fn open_all(given: &[String], read_only: bool) -> Result<Vec<Attached>, Failure> {
    let names = crate::tui::stores::names(given);
    let several = given.len() > 1;
    let mut stores = Vec::with_capacity(given.len());
    let mut refused: Vec<Failure> = Vec::new();
    for (url, name) in given.iter().zip(names) {
        match crate::store::url::open(url, OpenMode::ReadOnly) {
            Ok(store) => {
                let target = url.clone();
                let writer = (!read_only).then(|| {
                    let open: crate::tui::writer::OpenWriter = Arc::new(move || {
                        crate::store::url::open(&target, OpenMode::Existing)?.with_host_witness()
                    });
                    open
                });
                stores.push(Attached {
                    name,
                    given: url.clone(),
                    store,
                    writer,
                });
            }
            Err(e) => {
                let mut failure = Failure::from(e);
                if several {
                    failure.message = format!("{name}: {}", failure.message);
                }
                refused.push(failure);
            }
        }
    }
    match refused.pop() {
        None => Ok(stores),
        Some(last) => {
            for earlier in &refused {
                super::report(earlier);
            }
            Err(last)
        }
    }
}

/// The dashboard draws on a terminal: without one (output piped, no tty, CI) say so and
/// point at the command that prints the same facts as text.
pub(super) fn need_terminal() -> CliResult {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() && std::io::stdin().is_terminal() {
        Ok(())
    } else {
        Err(Failure::usage(
            "the dashboard needs a terminal (stdin and stdout are not both one); \
             for plain text use `leasehold inspect --store STORE overview`",
        ))
    }
}
