//! The authority runtime (docs/ARCHITECTURE.md#authority-runtime): one authority's logic as step functions
//! ([`core::AuthorityCore`]), its knobs ([`config::AuthorityConfig`]), the handlers it runs
//! ([`handlers`], with the demo set in [`workload`] and commands or HTTP endpoints named in
//! a config file in [`external`]), its counters and execution log
//! ([`stats`]), and the tokio driver for a real process ([`runtime::run_authority`]). The
//! embedded cluster (`cluster/`) drives the same core on virtual time.

pub mod config;
pub mod core;
mod embed;
pub mod external;
mod fencing;
pub mod handlers;
pub mod health;
pub mod log;
pub mod metrics;
pub mod readback;
pub mod runtime;
pub mod stats;
pub mod workload;

pub use crate::rules::retry::{Multiplier, RetryPolicy};
pub use config::AuthorityConfig;
pub use core::{
    AuthorityCore, Exec, Executed, Finished, HandlerCall, Job, Prepared, Renewed, Task,
};
pub use embed::{Authority, AuthorityBuilder};
pub use handlers::{
    Attempt, AttemptContext, AttemptKind, BlockingHandler, Handler, HandlerOutcome, LeaseWatch,
    Pace, Workload,
};
pub use health::{Health, HealthReport};
pub use runtime::{RunOptions, run_authority, run_authority_with};
pub use stats::{ExecLog, Stats, percentile};
