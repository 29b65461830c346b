//! `leasehold workflow validate FILE` (here) and `workflow deploy` / `workflow start`
//! (declared in [`super::pending`]).
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
use super::pending::{WorkflowDeployArgs, WorkflowStartArgs, not_yet};
use super::{CliResult, Failure};
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
        WorkflowCommand::Deploy(_) => not_yet("workflow deploy"),
        WorkflowCommand::Start(_) => not_yet("workflow start"),
    }
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
    let text = std::fs::read_to_string(&args.file).map_err(|e| match e.kind() {
        std::io::ErrorKind::InvalidData => {
            Failure::usage(format!("cannot read {shown}: not UTF-8 text"))
        }
        _ => Failure::usage(format!("cannot read {shown}: {e}")),
    })?;
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
