//! Subcommands whose names and flags are fixed by SPEC §7 but whose implementation lands
//! separately. Each parses its full argument set (so scripts and `--help` are stable) and
//! answers `"<name>" is not available in this build yet` with exit 2.
//!
//! To implement one: move its `…Args` struct into its own `cli/<name>.rs`, point the
//! `Command` variant in `cli/mod.rs` at it and replace its `not_yet` arm in
//! [`super::execute`].

use clap::Args;

use super::{CliResult, Failure};

/// The answer of every subcommand that is declared but not built yet (exit 2).
///
/// # Errors
/// Always.
pub fn not_yet(name: &str) -> CliResult {
    Err(Failure::usage(format!(
        "`leasehold {name}` is not available in this build yet"
    )))
}

/// `leasehold demo`.
#[derive(Debug, Clone, Args)]
pub struct DemoArgs {
    /// How many authorities the embedded cluster runs.
    #[arg(long, default_value_t = 3)]
    pub authorities: u32,
    /// A named fault scenario.
    #[arg(long)]
    pub scenario: Option<String>,
    /// The RNG seed (printed when not given).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Run without the dashboard and print the checker's report.
    #[arg(long, requires = "duration")]
    pub headless: bool,
    /// How long a headless run lasts (e.g. `30s`, `5m`).
    #[arg(long)]
    pub duration: Option<String>,
    /// Print the headless report as one JSON object.
    #[arg(long)]
    pub json: bool,
    /// The dashboard theme.
    #[arg(long)]
    pub theme: Option<String>,
}

/// `leasehold attach`.
#[derive(Debug, Clone, Args)]
pub struct AttachArgs {
    /// The work store: a SQLite file path or sqlite:PATH, postgres://…, or memory.
    #[arg(env = "LEASEHOLD_STORE", value_name = "STORE")]
    pub store: String,
    /// Disable operator actions (cancel).
    #[arg(long)]
    pub read_only: bool,
    /// A theme from `themes/` or a theme file.
    #[arg(long)]
    pub theme: Option<String>,
}

/// `leasehold copy`.
#[derive(Debug, Clone, Args)]
pub struct CopyArgs {
    /// The store to read.
    #[arg(long, value_name = "STORE")]
    pub from: String,
    /// The store to write.
    #[arg(long, value_name = "STORE")]
    pub to: String,
}
