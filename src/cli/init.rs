//! `leasehold init STORE [--json]`: creates an empty store (a SQLite file, or the schema in
//! a PostgreSQL database) through [`crate::store::create::create`].
//!
//! The one command whose purpose is creating a store: the others (but `seed`, and the
//! fresh targets of `copy` and `bench`) refuse a missing one, so a typo is never a new
//! store. On an existing leasehold store it checks the whole store (`Store::verify`, as
//! `leasehold store verify` does), says so and changes nothing (exit 0); a file that is not
//! a store, a damaged one, a directory or a device is refused with one line (exit 2) and
//! left as it was.

use std::io::Write;

use clap::Args;
use serde::Serialize;

use super::output::json_line;
use super::{CliResult, Failure};
use crate::store::create::{Creation, create};

/// Arguments of `leasehold init`.
#[derive(Debug, Clone, Args)]
pub struct InitArgs {
    /// The store to create: a SQLite file path or sqlite:PATH, or postgres://… (an
    /// existing database, which gets the schema).
    #[arg(env = "LEASEHOLD_STORE", hide_env_values = true, value_name = "STORE")]
    pub store: String,
    /// Print the outcome as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// `--json`: the store and whether this command created it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Report {
    store: String,
    created: bool,
}

/// Runs `leasehold init`.
///
/// # Errors
/// A non-store file, a directory, a device, `memory` or an unreachable server (exit 2).
pub fn run(args: &InitArgs, out: &mut dyn Write) -> CliResult {
    let (store, creation) = create(&args.store).map_err(Failure::from)?;
    if creation == Creation::Existed {
        store.verify()?;
    }
    // Judged and recorded like every writer's store: a new one is this host's from now on.
    let store = store.with_host_witness()?;
    let report = Report {
        store: store.describe(),
        created: creation == Creation::Created,
    };
    if args.json {
        json_line(out, &report)?;
    } else if report.created {
        writeln!(out, "created an empty leasehold store at {}", report.store)?;
    } else {
        writeln!(
            out,
            "a leasehold store already exists at {}; nothing changed",
            report.store
        )?;
    }
    Ok(())
}
