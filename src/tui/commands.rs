//! What an operator's command does to the store: carries out the store-side
//! [`Command`]s the app asks for (a cancel, a triage, a release or forget, a schedule's
//! pause, resume or delete, a bulk run, a
//! demo operation, a describe read) and answers the [`Action`] that reports it. The event
//! loop runs it on a blocking thread through a write handle ([`super::writer`]); the
//! harness runs it in line, so tests drive the very code the dashboard runs.

use super::action::{Action, DemoOp, Done};
use super::app::{AuthorityVerb, Command};
use super::describe;
use crate::cluster::control::ClusterControl;
use crate::ops::cancel::Builds;
use crate::ops::live_builds::LiveBuilds;
use crate::store::{Forgot, Store};
use crate::workflow::engine::cancel::Verdict;

/// Releases or forgets `instance` as `actor`, in the words of the status line.
fn authority_act(
    store: &Store,
    verb: AuthorityVerb,
    instance: &str,
    actor: &str,
    reason: &str,
) -> crate::Result<String> {
    Ok(match verb {
        AuthorityVerb::Release => {
            let release = store.release_authority(instance, actor, reason)?;
            match release.claims.len() {
                0 => format!("holds nothing to release ({})", release.liveness),
                n => format!(
                    "released {n} claim{} ({}) under new generations: its late writes are fenced",
                    if n == 1 { "" } else { "s" },
                    release.liveness
                ),
            }
        }
        AuthorityVerb::Forget => match store.forget_authority(instance, actor, reason)? {
            Forgot::Now(_, liveness) => format!("forgotten (it was {liveness})"),
            Forgot::Already => "already forgotten".to_owned(),
        },
    })
}

/// Carries out one store-side command (a cancel, a demo operation, a describe read) and
/// reports what happened; operator actions are audited. Blocking: the event loop runs it
/// on `spawn_blocking`. Terminal-side commands (clipboard, mouse) are the caller's.
#[must_use]
#[expect(
    clippy::too_many_lines,
    reason = "the command table: one arm per store-side command"
)]
pub fn execute(
    store: &Store,
    cluster: Option<&dyn ClusterControl>,
    actor: &str,
    command: &Command,
) -> Option<Action> {
    match command {
        Command::Cancel { instance, reason } => {
            // Judged by the fleet's registered builds, as `leasehold cancel` without
            // `--handler-version` is; a refusal for another build says which were checked.
            let cancelled = LiveBuilds::load(store, store.now()).and_then(|live| {
                let builds = Builds::fleet(&live);
                let verdict =
                    store.cancel_workflow_audited(instance, Some(builds.keys()), actor, reason)?;
                let checked = match verdict {
                    Verdict::Incompatible => store
                        .instance(instance)?
                        .map(|row| format!(" (checked: {})", builds.checked(&row))),
                    _ => None,
                };
                Ok((verdict, checked.unwrap_or_default()))
            });
            let (message, refused) = match cancelled {
                Ok((verdict, checked)) => (verdict.words() + &checked, verdict.refused()),
                Err(e) => (format!("failed: {e}"), true),
            };
            Some(Action::Done(Done::Acted {
                subject: instance.clone(),
                message,
                refused,
            }))
        }
        Command::Triage { verb, item, reason } => {
            let (message, refused) = match store.triage_work(*verb, item, actor, reason) {
                Ok(answer) => (answer.verdict.words(*verb), answer.verdict.refused()),
                Err(e) => (format!("failed: {e}"), true),
            };
            Some(Action::Done(Done::Acted {
                subject: item.clone(),
                message,
                refused,
            }))
        }
        Command::Authority {
            verb,
            instance,
            reason,
        } => {
            let (message, refused) = match authority_act(store, *verb, instance, actor, reason) {
                Ok(message) => (message, false),
                Err(e) => (format!("refused: {e}"), true),
            };
            Some(Action::Done(Done::Acted {
                subject: instance.clone(),
                message,
                refused,
            }))
        }
        Command::Schedule {
            control,
            schedule,
            reason,
        } => {
            let (message, refused) = match store.control_schedule(schedule, *control, actor, reason)
            {
                Ok(answer) if answer.changed => (control.done().to_owned(), false),
                Ok(_) => (format!("already {}", control.done()), false),
                Err(e) => (format!("refused: {e}"), true),
            };
            Some(Action::Done(Done::Acted {
                subject: schedule.clone(),
                message,
                refused,
            }))
        }
        Command::Handler {
            control,
            handler,
            reason,
        } => {
            let (message, refused) = match store.control_handler(handler, *control, actor, reason) {
                Ok(answer) if answer.changed => (format!("handler {}", control.done()), false),
                Ok(_) => (format!("handler already {}", control.done()), false),
                Err(e) => (format!("refused: {e}"), true),
            };
            Some(Action::Done(Done::Acted {
                subject: handler.clone(),
                message,
                refused,
            }))
        }
        Command::BulkPreview {
            verb,
            filter,
            reason,
        } => Some(Action::Done(
            match super::bulk_run::preview(store, *verb, filter) {
                Ok(tally) => Done::Previewed {
                    verb: *verb,
                    reason: reason.clone(),
                    tally,
                },
                Err(message) => Done::Acted {
                    subject: filter.clone(),
                    message,
                    refused: true,
                },
            },
        )),
        Command::Bulk {
            verb,
            filter,
            reason,
            confirmed,
        } => {
            let (message, refused) =
                super::bulk_run::run(store, *verb, filter, (actor, reason), *confirmed);
            Some(Action::Done(Done::Acted {
                subject: format!("{} over {filter}", verb.action()),
                message,
                refused,
            }))
        }
        Command::Demo(op) => {
            let Some(cluster) = cluster else {
                return Some(Action::Done(Done::Demo {
                    message: "no demo cluster attached".into(),
                    refused: true,
                }));
            };
            let (action, target, outcome) = match op {
                DemoOp::Kill(id) => ("demo-kill", id.clone(), cluster.kill(id)),
                DemoOp::Pause(id) => ("demo-pause", id.clone(), cluster.pause(id)),
                DemoOp::Resume(id) => ("demo-resume", id.clone(), cluster.resume(id)),
                DemoOp::Add => ("demo-add", "cluster".to_owned(), cluster.add_authority()),
                DemoOp::Deploy { compatible } => (
                    "demo-deploy",
                    if *compatible {
                        "compatible"
                    } else {
                        "incompatible"
                    }
                    .to_owned(),
                    cluster.deploy(*compatible),
                ),
                DemoOp::Skew(id, ms) => ("demo-skew", id.clone(), cluster.skew(id, *ms)),
            };
            let (message, refused) = match outcome {
                Ok(message) => (message, false),
                Err(message) => (message, true),
            };
            let verdict = if refused { "refused" } else { "done" };
            let message = match store.audit(actor, action, &target, verdict) {
                Ok(()) => message,
                Err(e) => format!("{message} (audit failed: {e})"),
            };
            Some(Action::Done(Done::Demo { message, refused }))
        }
        Command::Fetch(fetch) => Some(Action::Done(Done::Described {
            fetch: fetch.clone(),
            value: describe::fetch(store, fetch).map_err(|e| e.to_string()),
        })),
        Command::Query(_)
        | Command::Copy(_)
        | Command::Mouse(_)
        | Command::Tour(_)
        | Command::Quit => None,
    }
}
