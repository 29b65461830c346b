//! `leasehold workflow validate FILE`, `workflow deploy --store STORE FILE` and
//! `workflow start --store STORE WORKFLOW_ID [--args JSON] [--idempotency-key K]`.
//!
//! A definition's action steps run the application's handlers, so `validate` and `deploy`
//! judge actions against a *handler set* ([`HandlerSet`]): the handlers of `--config FILE`
//! (the config the authorities run with), those the fleet registered in the store
//! (`validate --store STORE`; `deploy` always consults the store it deploys to), a
//! built-in demo workload named with `--workload NAME`, or the union of those given. The
//! output says which set was used; a missing handler names the nearest one in the set.
//!
//! `validate` prints each diagnostic as one line `CODE at PATH: message` (or, with
//! `--json`, one object per line); every diagnostic makes the definition unexecutable:
//! any → exit 1. Without any set it checks the definition's own structure only and says
//! that its actions were not checked. `deploy` refuses a definition with diagnostics, or
//! with actions and no handler to judge them by, in one line (exit 2), and writes nothing.
//! An unreadable file is exit 2.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::output::{json_line, short};
use super::settings::Settings;
use super::{CliResult, Failure, StoreArg};
use crate::authority::workload;
use crate::error::Error;
use crate::foundation::file_input::{MAX_DEFINITION_BYTES, read_text};
use crate::foundation::text_cell::{cell, cell_max, escape};
use crate::ids::{check_id, check_opt_id};
use crate::model::Authority;
use crate::ops::live_builds::LiveBuilds;
use crate::store::Store;
use crate::store::url::OpenMode;
use crate::workflow::validate::handlers::Source;
use crate::workflow::{
    Catalog, Diagnostic, HandlerSet, StepKind, WorkflowDef, parse_definition,
    parse_definition_toml, semantic_fingerprint, validate,
};

/// `leasehold workflow …`.
#[derive(Debug, Clone, Subcommand)]
pub enum WorkflowCommand {
    /// Check a definition file and print its diagnostics (exit 1 if any).
    Validate(ValidateArgs),
    /// Deploy a definition to a store.
    Deploy(WorkflowDeployArgs),
    /// Start an instance of a deployed workflow.
    Start(WorkflowStartArgs),
}

/// Arguments of `leasehold workflow validate`.
#[derive(Debug, Clone, Args)]
pub struct ValidateArgs {
    /// The definition: JSON, or TOML when the name ends in `.toml`.
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Judge actions by the handlers the fleet registered in this store too.
    #[arg(long, value_name = "STORE")]
    pub store: Option<String>,
    #[command(flatten)]
    pub handlers: HandlerSetArgs,
    /// One JSON object per diagnostic.
    #[arg(long)]
    pub json: bool,
}

/// The sources of a handler set that do not need a store.
#[derive(Debug, Clone, Default, Args)]
pub struct HandlerSetArgs {
    /// Judge actions by the handlers of this config (`[handlers.*]`, and the demo
    /// workload its `[authority]` table names): the file the authorities run with. Only
    /// when given here: `LEASEHOLD_CONFIG` may name a file of dashboard knobs alone.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Judge actions by the handlers of this built-in demo workload too (`default` runs
    /// the shipped definitions in `workflows/`).
    #[arg(long, value_name = "NAME")]
    pub workload: Option<String>,
}

/// Runs a `workflow` subcommand.
///
/// # Errors
/// See each subcommand.
pub fn run(command: WorkflowCommand, out: &mut dyn Write) -> CliResult {
    match command {
        WorkflowCommand::Validate(args) => validate_file(&args, out),
        WorkflowCommand::Deploy(args) => deploy(&args, out),
        WorkflowCommand::Start(args) => start(&args, out),
    }
}

/// `leasehold workflow deploy`.
#[derive(Debug, Clone, Args)]
pub struct WorkflowDeployArgs {
    /// The store to deploy to; its fleet's registered handlers are always part of the
    /// handler set.
    #[command(flatten)]
    pub store: StoreArg,
    #[command(flatten)]
    pub handlers: HandlerSetArgs,
    /// The definition (JSON, or TOML by extension).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
}

/// A file's name as the account of a handler set shows it.
fn file_label(path: &Path) -> String {
    escape(&path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    ))
}

impl HandlerSetArgs {
    /// The set of `--config` and `--workload`, then the fleet of `fleet` when given.
    ///
    /// # Errors
    /// Exit 2: an unreadable or invalid config, a config that names no handler (nothing
    /// to judge by, surely a mistake), a config's handlers beside a demo workload (which
    /// no authority runs together), an unknown workload, a store failure.
    pub fn load(&self, fleet: Option<&Store>) -> Result<HandlerSet, Failure> {
        let mut set = HandlerSet::default();
        if let Some(path) = &self.config {
            let settings = Settings::load(path)?;
            let label = file_label(path);
            if settings.handlers.handlers.is_empty() && settings.authority.workload.is_none() {
                return Err(Error::Invalid(format!(
                    "{}: names no handler, so there is nothing to judge the actions by",
                    escape(&path.display().to_string())
                ))
                .into());
            }
            // A set no authority would run is not judged by.
            super::authority::one_handler_set(&settings, self.workload.as_deref())?;
            if let Some(name) = &settings.authority.workload {
                set = with_workload(set, name)?;
            }
            set = set.with(
                Source::Config(label),
                settings
                    .handlers
                    .handlers
                    .iter()
                    .map(|h| (h.name.clone(), h.version.clone())),
            );
        }
        if let Some(name) = &self.workload {
            set = with_workload(set, name)?;
        }
        if let Some(store) = fleet {
            let fleet = LiveBuilds::load(store, store.now())?;
            set = set.with(
                Source::Fleet,
                fleet
                    .registrations()
                    .iter()
                    .flat_map(Authority::handler_versions),
            );
        }
        Ok(set)
    }
}

/// `set` with the handlers of the built-in workload `name`.
fn with_workload(set: HandlerSet, name: &str) -> Result<HandlerSet, Failure> {
    let workload = workload::named(name, 0)?;
    Ok(set.with(
        Source::Workload(name.to_owned()),
        workload.handler_versions(),
    ))
}

/// Refuses (exit 2) to judge a definition with action steps against a set with no
/// handler in it: every action would be "not found", which says nothing useful. A
/// definition without actions needs no handler.
fn require_handlers(shown: &str, set: &HandlerSet, def: &WorkflowDef) -> Result<(), Failure> {
    let has_actions = def
        .steps
        .iter()
        .any(|s| matches!(s.kind, StepKind::Action(_)));
    if !set.is_empty() || !has_actions {
        return Ok(());
    }
    Err(Failure::usage(format!(
        "{shown}: no handler to judge its actions by ({}): give --config FILE (the handlers the authorities run), --workload NAME, or start the fleet first",
        set.account()
    )))
}

/// The one line of a definition a deploy refuses for its diagnostics: the first, how many
/// more there are (each is on stdout), and what the actions were judged against.
fn refusal(shown: &str, diagnostics: &[Diagnostic], set: &HandlerSet) -> String {
    let first = diagnostics.first().map_or_else(String::new, |d| {
        format!(
            ": {} at {}: {}",
            d.code,
            cell_max(&d.path, 80),
            cell_max(&d.message, 300)
        )
    });
    let more = match diagnostics.len() {
        0 | 1 => String::new(),
        n => format!(" (and {} more)", n - 1),
    };
    let judged = if set.is_unset() {
        String::new()
    } else {
        format!("; {}", set.describe())
    };
    format!("{shown}: not deployed{first}{more}{judged}")
}

/// `leasehold workflow start`.
#[derive(Debug, Clone, Args)]
pub struct WorkflowStartArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The deployed workflow to start.
    #[arg(value_name = "WORKFLOW_ID")]
    pub workflow: String,
    /// The inputs, as a JSON object.
    #[arg(long, value_name = "JSON")]
    pub args: Option<String>,
    /// Makes a retried start return the first instance.
    #[arg(long, value_name = "K")]
    pub idempotency_key: Option<String>,
    /// The principal the instance runs as (default: `user@host`).
    #[arg(long)]
    pub principal: Option<String>,
    /// The version of every handler its actions need (see `--handler-version` of
    /// `work enqueue`): with the definition it pins, what decides who may run it.
    #[command(flatten)]
    pub version: super::handler_version::HandlerVersionArg,
}

/// Runs `leasehold workflow deploy`: validates against the handler set (the config, the
/// workload and the store's fleet), then stores the definition. A definition with
/// diagnostics, or with actions and an empty handler set, is refused and nothing is
/// written.
///
/// # Errors
/// Exit 2: an unreadable file, config or store, an empty handler set, diagnostics.
pub fn deploy(args: &WorkflowDeployArgs, out: &mut dyn Write) -> CliResult {
    let shown = escape(&args.file.display().to_string());
    let text = read_text(&args.file, MAX_DEFINITION_BYTES)
        .map_err(|e| Failure::usage(format!("cannot read {shown}: {e}")))?;
    let parsed = if is_toml(&args.file) {
        parse_definition_toml(&text)
    } else {
        parse_definition(&text)
    };
    let def = parsed.map_err(|d| Failure::usage(refusal(&shown, &d, &HandlerSet::default())))?;
    let text = if is_toml(&args.file) {
        serde_json::to_string(&def).map_err(|e| Failure::usage(e.to_string()))?
    } else {
        text
    };
    let store = args.store.open_writer()?;
    let set = args.handlers.load(Some(&store))?;
    require_handlers(&shown, &set, &def)?;
    match store.deploy_workflow(&text, &set.catalog())? {
        Ok(row) => {
            writeln!(
                out,
                "deployed workflow {} (semantic fingerprint {}); {}",
                cell(&row.workflow_id),
                short(&row.fingerprint),
                set.describe()
            )?;
            Ok(())
        }
        Err(diagnostics) => {
            for d in &diagnostics {
                writeln!(
                    out,
                    "{} at {}: {}",
                    d.code,
                    cell_max(&d.path, 80),
                    cell_max(&d.message, 300)
                )?;
            }
            Err(Failure::usage(refusal(&shown, &diagnostics, &set)))
        }
    }
}

/// Runs `leasehold workflow start`.
///
/// # Errors
/// Malformed `--args`, unknown workflow or unreadable store (exit 2).
pub fn start(args: &WorkflowStartArgs, out: &mut dyn Write) -> CliResult {
    let inputs = match &args.args {
        None => serde_json::Map::new(),
        Some(text) => match super::exact_json::parse_exact("--args", text)? {
            serde_json::Value::Object(map) => map,
            _ => return Err(Failure::usage("--args must be a JSON object")),
        },
    };
    check_id("workflow id", &args.workflow)?;
    check_opt_id("idempotency key", args.idempotency_key.as_deref())?;
    let store = args.store.open_writer()?;
    let principal = args
        .principal
        .clone()
        .unwrap_or_else(crate::foundation::actor::operator);
    let actions = store.workflow_actions(&args.workflow)?;
    let stamp = args
        .version
        .stamp(&store, actions.iter().map(String::as_str))?;
    let started = store.start_workflow(
        &args.workflow,
        inputs,
        &principal,
        args.idempotency_key.as_deref(),
        stamp.versions.clone(),
    )?;
    let verb = if started.created {
        stamp.tell();
        "started"
    } else {
        "already started"
    };
    writeln!(
        out,
        "{verb} {} ({})",
        cell(&started.instance_id),
        started.status
    )?;
    Ok(())
}

fn is_toml(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
}

/// Runs `leasehold workflow validate`.
///
/// # Errors
/// An unreadable file, config or store, or a `--store`/`--config` that gives no handler
/// for a definition with actions (exit 2); any diagnostic (exit 1).
pub fn validate_file(args: &ValidateArgs, out: &mut dyn Write) -> CliResult {
    let shown = escape(&args.file.display().to_string());
    let text = read_text(&args.file, MAX_DEFINITION_BYTES)
        .map_err(|e| Failure::usage(format!("cannot read {shown}: {e}")))?;
    let fleet = args
        .store
        .as_deref()
        .map(|url| crate::store::url::open(url, OpenMode::ReadOnly))
        .transpose()?;
    let set = args.handlers.load(fleet.as_ref())?;
    // Without a set, only the definition's own structure is judged.
    let catalog = if set.is_unset() {
        Catalog::permissive()
    } else {
        set.catalog()
    };
    let parsed = if is_toml(&args.file) {
        parse_definition_toml(&text)
    } else {
        parse_definition(&text)
    };
    let (def, diagnostics) = match parsed {
        Ok(def) => {
            if !set.is_unset() {
                require_handlers(&shown, &set, &def)?;
            }
            let diagnostics = validate(&def, &catalog);
            (Some(def), diagnostics)
        }
        Err(diagnostics) => (None, diagnostics),
    };
    for d in &diagnostics {
        if args.json {
            json_line(out, d)?;
        } else {
            writeln!(
                out,
                "{} at {}: {}",
                d.code,
                cell_max(&d.path, 80),
                cell_max(&d.message, 300)
            )?;
        }
    }
    if !diagnostics.is_empty() {
        let n = diagnostics.len();
        let judged = if set.is_unset() {
            String::new()
        } else {
            format!(" ({})", set.describe())
        };
        return Err(Failure::refused(format!(
            "{shown}: {n} problem{} found{judged}",
            if n == 1 { "" } else { "s" }
        )));
    }
    if let (Some(def), false) = (def, args.json) {
        let what = format!("ok: workflow {} ({} steps)", cell(&def.id), def.steps.len());
        if set.is_unset() {
            // The fingerprint depends on the handlers' versions, which are unknown here.
            writeln!(
                out,
                "{what}; actions not checked: no handler set given (--config, --store or --workload)"
            )?;
        } else {
            writeln!(
                out,
                "{what}, semantic fingerprint {}; {}",
                short(&semantic_fingerprint(&def, &catalog)),
                set.describe()
            )?;
        }
    }
    Ok(())
}
