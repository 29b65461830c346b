//! `leasehold workflow validate FILE`, `workflow deploy --store STORE FILE` and
//! `workflow start --store STORE WORKFLOW_ID [--args JSON] [--idempotency-key K]`.
//!
//! `validate` checks a definition (JSON, or TOML when the file name ends in `.toml`)
//! against the demo catalog — the actions and events the shipped runtime registers — and
//! prints each diagnostic as one line `CODE at PATH: message` (or, with `--json`, one
//! object per line). Every diagnostic makes the definition unexecutable: any → exit 1. An
//! unreadable file is exit 2.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use super::output::{cell, cell_max, escape, json_line, short};
use super::{CliResult, Failure, StoreArg};
use crate::ids::{check_id, check_opt_id};
use crate::ops::file_input::{MAX_DEFINITION_BYTES, read_text};
use crate::workflow::{
    Catalog, parse_definition, parse_definition_toml, semantic_fingerprint, validate,
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
    /// One JSON object per diagnostic.
    #[arg(long)]
    pub json: bool,
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
    #[command(flatten)]
    pub store: StoreArg,
    /// The definition (JSON, or TOML by extension).
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
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

/// Runs `leasehold workflow deploy`: validates, then stores the definition (a definition
/// with diagnostics is refused and nothing is written).
///
/// # Errors
/// Unreadable file or store (exit 2); diagnostics (exit 1).
pub fn deploy(args: &WorkflowDeployArgs, out: &mut dyn Write) -> CliResult {
    let shown = escape(&args.file.display().to_string());
    let text = read_text(&args.file, MAX_DEFINITION_BYTES)
        .map_err(|e| Failure::usage(format!("cannot read {shown}: {e}")))?;
    let text = if is_toml(&args.file) {
        let def = parse_definition_toml(&text).map_err(|d| {
            Failure::refused(format!(
                "{shown}: {}",
                d.iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join("; ")
            ))
        })?;
        serde_json::to_string(&def).map_err(|e| Failure::usage(e.to_string()))?
    } else {
        text
    };
    let store = args.store.open_writer()?;
    match store.deploy_workflow(&text, &Catalog::demo())? {
        Ok(row) => {
            writeln!(
                out,
                "deployed workflow {} (semantic fingerprint {})",
                cell(&row.workflow_id),
                short(&row.fingerprint)
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
            Err(Failure::refused(format!(
                "{shown}: not deployed, {} problem(s) found",
                diagnostics.len()
            )))
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
        .unwrap_or_else(crate::ops::actor::operator);
    let actions = store.workflow_actions(&args.workflow)?;
    let versions = args
        .version
        .versions(&store, actions.iter().map(String::as_str))?;
    let started = store.start_workflow(
        &args.workflow,
        inputs,
        &principal,
        args.idempotency_key.as_deref(),
        versions,
    )?;
    let verb = if started.created {
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
/// An unreadable file (exit 2); any diagnostic (exit 1).
pub fn validate_file(args: &ValidateArgs, out: &mut dyn Write) -> CliResult {
    let shown = escape(&args.file.display().to_string());
    let text = read_text(&args.file, MAX_DEFINITION_BYTES)
        .map_err(|e| Failure::usage(format!("cannot read {shown}: {e}")))?;
    let catalog = Catalog::demo();
    let parsed = if is_toml(&args.file) {
        parse_definition_toml(&text)
    } else {
        parse_definition(&text)
    };
    let (def, diagnostics) = match parsed {
        Ok(def) => {
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
        return Err(Failure::refused(format!(
            "{shown}: {n} problem{} found",
            if n == 1 { "" } else { "s" }
        )));
    }
    if let (Some(def), false) = (def, args.json) {
        let fingerprint = semantic_fingerprint(&def, &catalog);
        writeln!(
            out,
            "ok: workflow {} ({} steps), semantic fingerprint {}",
            cell(&def.id),
            def.steps.len(),
            short(&fingerprint)
        )?;
    }
    Ok(())
}
