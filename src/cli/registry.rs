//! `leasehold authority release|forget ID`: the operator's verbs on a gone authority.
//!
//! `release` hands back every claim the authority still holds under new generations (its
//! late writes are then fenced) and puts its work back to pending; `forget` removes its
//! registration (so its id no longer shows, and can be reused at once) once it holds
//! nothing. Both are refused while the authority is live or silent — it may still be
//! working — and for an unknown id; both are recorded in the audit log as the OS account
//! running the command, with `--reason`. A repeat changes nothing and says so;
//! `--dry-run` says what would happen without writing.

use std::io::Write;

use clap::{Args, Subcommand};
use serde::Serialize;

use super::bulk::CONFIRM_ABOVE;
use super::output::json_line;
use super::{CliResult, Failure, StoreArg};
use crate::error::{Error, Result};
use crate::foundation::actor::operator;
use crate::foundation::text_cell::cell;
use crate::store::{Forgot, Release, ReleasedClaim};

/// `leasehold authority SUBCOMMAND`.
#[derive(Debug, Clone, Subcommand)]
pub enum AuthorityCommand {
    /// Hand back every claim a gone or stopped authority still holds: new generations (its
    /// late writes are fenced), its work back to pending (audited; refused while it is
    /// live or silent).
    Release(Box<ReleaseArgs>),
    /// Remove a gone or stopped authority's registration (audited; refused while it is
    /// live or silent, or still holds claims: release them first).
    Forget(Box<ActionArgs>),
}

/// What both verbs take.
#[derive(Debug, Clone, Args)]
pub struct ActionArgs {
    #[command(flatten)]
    pub store: StoreArg,
    /// The authority's instance id.
    pub id: String,
    /// Why, for the audit log.
    #[arg(long, default_value = "")]
    pub reason: String,
    /// Say what would change, and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// One JSON object instead of a line of text.
    #[arg(long)]
    pub json: bool,
}

/// `leasehold authority release`.
#[derive(Debug, Clone, Args)]
pub struct ReleaseArgs {
    #[command(flatten)]
    pub action: ActionArgs,
    /// Release even when the authority holds more claims than a bulk action takes without
    /// confirmation.
    #[arg(long)]
    pub yes: bool,
}

/// The `--json` answer of both verbs.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Answer<'a> {
    action: &'static str,
    authority: &'a str,
    dry_run: bool,
    /// Whether anything changed (or, in a dry run, would).
    changed: bool,
    /// The authority's liveness when judged; `None` once it was forgotten before.
    was: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    released: Option<&'a [ReleasedClaim]>,
}

/// Runs an authority registry subcommand.
///
/// # Errors
/// An authority still holding claims, for forget (exit 1); an unknown id (`NOT_FOUND`), a
/// running authority (`INSTANCE_IN_USE`) or an unreadable store (exit 2).
pub fn run(command: &AuthorityCommand, out: &mut dyn Write) -> CliResult {
    match command {
        AuthorityCommand::Release(args) => release(args, out),
        AuthorityCommand::Forget(args) => forget(args, out),
    }
}

fn release(args: &ReleaseArgs, out: &mut dyn Write) -> CliResult {
    let a = &args.action;
    let store = a.store.open_writer()?;
    let done = if a.dry_run {
        refusal(store.release_preview(&a.id), "released")?
    } else {
        // The count comes first, for the confirmation. A preview the store refuses goes on
        // to the release itself, which refuses the same way and audits the refusal, as
        // `forget` does: an operator's refused attempt leaves its trace.
        if let Ok(preview) = store.release_preview(&a.id)
            && preview.claims.len() > CONFIRM_ABOVE
            && !args.yes
        {
            return Err(Error::ConfirmationRequired(format!(
                "authority {} holds {} claims; add --yes to release all of them (--dry-run lists them)",
                cell(&a.id),
                preview.claims.len()
            ))
            .into());
        }
        refusal(
            store.release_authority(&a.id, &operator(), &a.reason),
            "released",
        )?
    };
    let Release {
        liveness, claims, ..
    } = &done;
    if a.json {
        json_line(
            out,
            &Answer {
                action: crate::store::RELEASE_ACTION,
                authority: &a.id,
                dry_run: a.dry_run,
                changed: !claims.is_empty(),
                was: Some(liveness.as_str()),
                released: Some(claims),
            },
        )?;
    } else if claims.is_empty() {
        writeln!(
            out,
            "authority {} ({liveness}) holds no claims; nothing to release",
            cell(&a.id)
        )?;
    } else {
        let verb = if a.dry_run {
            "would release"
        } else {
            "released"
        };
        writeln!(
            out,
            "{verb} {} claim(s) of authority {} ({liveness}){}",
            claims.len(),
            cell(&a.id),
            if a.dry_run {
                "; dry run, nothing changed"
            } else {
                ""
            }
        )?;
        for c in claims {
            writeln!(
                out,
                "  {} {}: generation {} → {}",
                c.kind,
                cell(&c.resource),
                c.from_generation,
                c.to_generation
            )?;
        }
    }
    Ok(())
}

fn forget(a: &ActionArgs, out: &mut dyn Write) -> CliResult {
    let store = a.store.open_writer()?;
    let answer = if a.dry_run {
        store.forget_preview(&a.id)
    } else {
        store.forget_authority(&a.id, &operator(), &a.reason)
    };
    let forgot = refusal(answer, "forgotten")?;
    if a.json {
        let was = match &forgot {
            Forgot::Now(_, state) => Some(state.as_str()),
            Forgot::Already => None,
        };
        return Ok(json_line(
            out,
            &Answer {
                action: crate::store::FORGET_ACTION,
                authority: &a.id,
                dry_run: a.dry_run,
                changed: was.is_some(),
                was,
                released: None,
            },
        )?);
    }
    match forgot {
        Forgot::Now(row, state) => writeln!(
            out,
            "{} authority {} (was {state}, pid {} on host {}){}",
            if a.dry_run { "would forget" } else { "forgot" },
            cell(&row.instance_id),
            row.pid,
            cell(&row.host),
            if a.dry_run {
                "; dry run, nothing changed"
            } else {
                ""
            }
        )?,
        Forgot::Already => writeln!(
            out,
            "authority {} was forgotten before; nothing changed",
            cell(&a.id)
        )?,
    }
    Ok(())
}

/// A store refusal as one line: what to do about a running authority or a held claim.
fn refusal<T>(answer: Result<T>, done: &str) -> std::result::Result<T, Failure> {
    answer.map_err(|e| match e {
        e if e.is_store_failure() || matches!(e, Error::Invalid(_) | Error::NotFound { .. }) => {
            Failure::from(e)
        }
        // Exit 2, as `INSTANCE_IN_USE` is everywhere else.
        e @ Error::InstanceInUse { .. } => {
            Failure::usage(format!("{e}; it can be {done} once it is gone or stopped"))
        }
        e @ Error::LeaseHeld { .. } => Failure::refused(format!(
            "{e}; release its claims first (leasehold authority release)"
        )),
        e => Failure::refused(e.to_string()),
    })
}
