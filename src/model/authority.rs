//! Authority registrations: who is running, which handler versions, under which build
//! label, how recently alive.

use serde::{Deserialize, Serialize};

use crate::clock::Millis;

/// One authority's registration row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Authority {
    pub instance_id: String,
    /// A label of the code it runs: one digest over its handlers' keys (what it can run is
    /// read from the handler versions its config declares, `ops::runnable`).
    pub compat: String,
    /// Human build tag (`--build`).
    pub build: String,
    /// The runtime knobs it runs with, JSON text.
    pub config: String,
    pub started_at: Millis,
    pub heartbeat_at: Millis,
    /// Set on clean shutdown.
    pub stopped_at: Option<Millis>,
    pub host: String,
    pub pid: u32,
}

impl Authority {
    /// This registration's incarnation: which start of which process wrote it.
    #[must_use]
    pub fn incarnation(&self) -> Incarnation {
        Incarnation {
            instance_id: self.instance_id.clone(),
            host: self.host.clone(),
            pid: self.pid,
            started_at: self.started_at,
        }
    }
}

/// One start of one authority: its instance id plus the host, pid and start instant of
/// the process that registered it. A second start under the same id is another
/// incarnation, so a heartbeat from the first can tell that the row is no longer its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Incarnation {
    pub instance_id: String,
    pub host: String,
    pub pid: u32,
    pub started_at: Millis,
}

impl Incarnation {
    /// Whether `row` was written by this incarnation.
    #[must_use]
    pub fn owns(&self, row: &Authority) -> bool {
        row.instance_id == self.instance_id
            && row.host == self.host
            && row.pid == self.pid
            && row.started_at == self.started_at
    }
}
