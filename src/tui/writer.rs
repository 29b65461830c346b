//! The dashboard reads through a read-only handle; a write handle is opened only when an
//! operator acts (cancel), at that moment, and dropped when the action is done. So an
//! attached dashboard never creates, migrates or locks a store for writing just by
//! looking at it.

use std::sync::Arc;

use super::action::{Action, Done};
use super::app::Command;
use super::commands::execute;
use crate::cluster::control::ClusterControl;
use crate::error::Result;
use crate::store::Store;

/// Opens a write handle on the store the dashboard watches (never creating it).
pub type OpenWriter = Arc<dyn Fn() -> Result<Store> + Send + Sync>;

/// Carries out `command` on a write handle from `writer`, or on `store` itself when there
/// is no opener (the demo cluster's in-memory store is its own writer). A handle that
/// cannot be opened is reported as the action's refusal, on the status line.
#[must_use]
pub fn execute_with(
    store: &Store,
    writer: Option<&OpenWriter>,
    cluster: Option<&dyn ClusterControl>,
    actor: &str,
    command: &Command,
) -> Option<Action> {
    let Some(open) = writer else {
        return execute(store, cluster, actor, command);
    };
    match open() {
        Ok(handle) => execute(&handle, cluster, actor, command),
        Err(e) => {
            let message = format!("cannot open the store for writing: {e}");
            Some(Action::Done(match command {
                Command::Cancel {
                    instance: subject, ..
                }
                | Command::Triage { item: subject, .. }
                | Command::Authority {
                    instance: subject, ..
                }
                | Command::Schedule {
                    schedule: subject, ..
                }
                | Command::Handler {
                    handler: subject, ..
                } => Done::Acted {
                    subject: subject.clone(),
                    message,
                    refused: true,
                },
                _ => Done::Demo {
                    message,
                    refused: true,
                },
            }))
        }
    }
}
