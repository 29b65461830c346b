//! `leasehold copy --from STORE --to STORE [--json]`.
//!
//! Copies a whole store into a new, empty one through [`crate::store::copy::copy_store`]
//! (every generation, revision and history intact; see there for what "complete or visibly
//! unfinished" means), then prints the rows per table, or with `--json` one object. Refused
//! with exit 2 and nothing written: a non-empty target, the same store on both sides (two
//! spellings of one SQLite file included), and `memory`, which no other process can see.
//! The source is opened first and read-only, and checked whole before anything is copied
//! (`Store::verify`: a damaged source would copy its damage, or fail part way), so an
//! unreadable or damaged source creates no target. A copy that still fails part way (a
//! row the whole-file check cannot judge, such as a value this build cannot decode)
//! removes what it created: the SQLite target file (with the files beside it), or the
//! tables it created in an empty PostgreSQL database (`Store::discard_created`). A target
//! that existed before — an empty file, a database already holding the schema — is left
//! as the copy stopped, visibly unfinished.
//! Store descriptions never carry a password.

use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Args;

use super::output::{Table, json_line};
use super::{CliResult, Failure};
use crate::foundation::progress::Progress;
use crate::foundation::text_cell::cell;
use crate::store::Store;
use crate::store::copy::{CopySummary, copy_store};
use crate::store::url::{OpenMode, StoreUrl, open};

/// Arguments of `leasehold copy`.
#[derive(Debug, Clone, Args)]
pub struct CopyArgs {
    /// The store to read (not changed).
    #[arg(long, value_name = "STORE")]
    pub from: String,
    /// The store to write: new or empty (created if it does not exist yet).
    #[arg(long, value_name = "STORE")]
    pub to: String,
    /// Print the summary as one JSON object.
    #[arg(long)]
    pub json: bool,
}

/// Runs `leasehold copy`.
///
/// # Errors
/// Exit 2 for an unreadable source, a refused target or a copy that stopped part way.
pub fn run(args: &CopyArgs, out: &mut dyn Write) -> CliResult {
    for url in [&args.from, &args.to] {
        if StoreUrl::parse(url)? == StoreUrl::Memory {
            return Err(Failure::usage(
                "copy needs stores other processes can open: a SQLite path or postgres://…, not memory",
            ));
        }
    }
    let source = open(&args.from, OpenMode::ReadOnly)?;
    source.verify()?;
    let created = new_sqlite_file(&args.to)?;
    let copied = copy_into(&source, &args.to);
    if let (Err(_), Some(path)) = (&copied, &created) {
        remove_created(path);
    }
    let (to, summary) = copied?;
    if args.json {
        json_line(
            out,
            &Report {
                from: source.describe(),
                to,
                summary: &summary,
            },
        )?;
    } else {
        write!(out, "{}", render(&source.describe(), &to, &summary))?;
    }
    Ok(())
}

/// Opens (creating) the target and copies `source` into it; the target is closed again on
/// return, so a file it created can be removed. The target's description and the summary.
fn copy_into(source: &Store, to: &str) -> Result<(String, CopySummary), Failure> {
    let target = open(to, OpenMode::ReadWrite)?;
    // Rows copied so far, on a terminal only.
    let mut progress = Progress::terminal_only();
    let summary = copy_store(source, &target, &mut |count| {
        progress.show(|| format!("copying {}: {} rows", count.table, count.rows));
    });
    progress.finish();
    let summary = summary.map_err(|e| match target.discard_created() {
        Ok(()) => Failure::from(e),
        Err(left) => {
            let mut failure = Failure::from(e);
            failure.message = format!(
                "{}; what the copy created could not be removed: {left}",
                failure.message
            );
            failure
        }
    })?;
    // The copy wrote no transaction of its own through the witnesses: they learn its
    // head, this host's once there is a store to record (a failed copy leaves none).
    let target = target.with_host_witness()?;
    target.witness_now()?;
    Ok((target.describe(), summary))
}

/// The SQLite file the copy is about to create: `to` when it names a path where nothing
/// is yet. A target that exists (a file, or a PostgreSQL database) is never removed.
fn new_sqlite_file(to: &str) -> Result<Option<PathBuf>, Failure> {
    Ok(match StoreUrl::parse(to)? {
        StoreUrl::Sqlite(path) => std::fs::symlink_metadata(&path)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
            .then_some(path),
        _ => None,
    })
}

/// Removes a target file this copy created, with SQLite's files beside it, after the copy
/// failed: what it held is an unfinished copy nobody asked to keep. Best effort: the
/// copy's own error is what the command reports.
fn remove_created(path: &Path) {
    for suffix in ["", "-wal", "-shm", "-journal", ".leasehold-witness"] {
        let mut file = path.as_os_str().to_owned();
        file.push(suffix);
        let _ = std::fs::remove_file(file);
    }
}

/// `--json`: the summary with both ends.
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct Report<'a> {
    from: String,
    to: String,
    #[serde(flatten)]
    summary: &'a CopySummary,
}

/// The header line, then rows per table.
fn render(from: &str, to: &str, summary: &CopySummary) -> String {
    let mut table = Table::new(&["TABLE", "ROWS"]);
    for count in &summary.tables {
        table.row(vec![count.table.to_owned(), count.rows.to_string()]);
    }
    format!(
        "copied {} to {} at revision {} (journal high-water {})\n{}",
        cell(from),
        cell(to),
        summary.revision,
        summary.journal_high_water,
        table.render()
    )
}
