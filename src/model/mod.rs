//! Plain data: what the store holds and what readers see. No behaviour beyond small
//! derived facts; the rules that change these values live in `rules/`.

pub mod attempt_error;
pub mod authority;
pub mod chain;
pub mod compat;
pub mod event;
pub mod exec;
pub mod handler_control;
pub mod handler_version;
pub mod history;
pub mod intake;
pub mod lease;
pub mod page;
pub mod schedule;
pub mod subscription;
pub(crate) mod vocab;
pub mod work;
pub mod work_group;
pub mod workflow;

pub use attempt_error::AttemptError;
pub use authority::{Authority, Incarnation, Published, Recovering};
pub use chain::{ChainCounts, ChainLink, LinkHash};
pub use compat::{CompatSet, CompatibilityKey, HandlerKeys, handler_key};
pub use event::{DedupOutcome, Ingestion, JournalEvent};
pub use exec::ExecRecord;
pub use handler_control::{HandlerPause, PausedHandler, Rate, RateWindow};
pub use handler_version::HandlerVersion;
pub use history::{
    AuditEntry, Grant, GrantKind, HistoryPosition, Holder, Takeover, WriteRecord, WriteVerb,
};
pub use intake::{IntakeCounts, IntakeRow};
pub use lease::{Checkpoint, IdempotentAnswer, Lease, LeaseStatus};
pub use page::{Page, PageRequest};
pub use schedule::{CatchUp, Schedule};
pub use subscription::Subscription;
pub use work::{Ending, Failure, FailureClass, WorkItem, WorkKind, WorkState};
pub use work_group::WorkGroup;
pub use workflow::{HistoryRecord, InstanceRow, InstanceStatus, WorkflowDefinitionRow};
