//! The terminal dashboard: k9s for durable work.
//!
//! Data flows one way — store → [`snapshot`] (a background reader publishing one snapshot
//! per refresh through `tokio::sync::watch`) → [`app::App`] (model + `update`) →
//! [`views`] (pure rendering). Keys become [`action::Action`]s through [`keymap`]; operator
//! actions come back out of `update` as [`app::Command`]s that call the same library entry
//! points the CLI uses (cancel through `Store::cancel_workflow_audited`, the demo cluster through
//! [`crate::cluster::control::ClusterControl`]), audited.
//!
//! Layout: `action.rs` (what can happen), `keymap.rs` (keys → actions; the help overlay is
//! generated from it), `app/` (model and update), `snapshot.rs` (the reader),
//! `event_loop.rs` (terminal set-up, restore, the `select!` loop), `theme.rs` (TOML
//! themes), `views/` (one file per view), `commands.rs` (what an operator's
//! command does to the store), `harness.rs` (drive it without a terminal),
//! `describe.rs` (the describe pane's records and the clipboard), `screenshot.rs` (buffer →
//! SVG), `text.rs` (escaping hostile text), `wf.rs` (the workflow engine calls),
//! `store_filter.rs` (the `/` filter as a store read), `replay.rs` (the replay view's
//! reads around its cursor), `stores.rs` (the stores one dashboard attaches, and their
//! names), `writer.rs` (the
//! write handle opened per action). The demo controls are the cluster's seam
//! ([`crate::cluster::control::ClusterControl`]): the dashboard depends on it, never the
//! other way round.
//!
//! Entry point: [`run`] (async) or [`run_blocking`] over one store, [`run_attached`] over
//! several.

pub mod action;
pub mod app;
mod bulk_run;
pub mod checker_badge;
pub mod commands;
pub mod describe;
pub mod event_loop;
pub mod harness;
pub mod keymap;
pub mod push;
pub mod record;
pub mod replay;
pub mod screenshot;
pub mod snapshot;
pub mod store_filter;
pub mod stores;
pub mod text;
pub mod theme;
pub mod tour_driver;
pub mod views;
mod wf;
pub mod writer;

use std::sync::Arc;

pub use crate::cluster::control::{ClusterControl, DemoAuthority, DemoState};
pub use event_loop::{run, run_attached, run_blocking};

/// How the dashboard runs.
#[derive(Clone)]
pub struct TuiOptions {
    /// How often the reader probes the store for changes.
    pub refresh_ms: u64,
    /// Hide and refuse operator actions.
    pub read_only: bool,
    /// Theme name: shipped (`dark`, `light`, `high-contrast`) or a user theme file.
    pub theme: String,
    /// The embedded cluster, in `leasehold demo`.
    pub demo: Option<Arc<dyn ClusterControl>>,
    /// `account@host`, recorded in the audit log with every operator action.
    pub actor: String,
    /// Opens a write handle for an operator action; `None` acts on the watched store
    /// itself (the demo cluster). See [`writer`].
    pub writer: Option<writer::OpenWriter>,
    /// Start the demo's guided tour at once (`Some(manual)`).
    pub tour: Option<bool>,
    /// Record the session as an asciicast (v2) file.
    pub record: Option<std::path::PathBuf>,
}

impl Default for TuiOptions {
    fn default() -> Self {
        Self {
            refresh_ms: 250,
            read_only: false,
            theme: "dark".into(),
            demo: None,
            actor: crate::foundation::actor::operator(),
            writer: None,
            tour: None,
            record: None,
        }
    }
}

impl std::fmt::Debug for TuiOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TuiOptions")
            .field("refresh_ms", &self.refresh_ms)
            .field("read_only", &self.read_only)
            .field("theme", &self.theme)
            .field("demo", &self.demo.is_some())
            .field("actor", &self.actor)
            .field("writer", &self.writer.is_some())
            .field("tour", &self.tour)
            .field("record", &self.record)
            .finish()
    }
}
