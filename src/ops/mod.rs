//! The operator's vocabulary: the facts the dashboard and the command line state about a
//! running cluster (failovers, fenced writes, filters, cursors, what needs a person), each
//! defined once here so the two can never disagree. The judgements the store and the
//! checker share with them (liveness, lateness, triage verdicts) are in `rules/`, below
//! everything that reads them.

pub mod attention;
pub mod audit;
pub mod builds;
pub mod bulk;
pub mod cancel;
pub mod claim_rates;
pub mod claims;
pub mod cursors;
pub mod failovers;
pub mod fenced;
pub mod filter;
pub mod fleet_metrics;
pub mod heartbeat;
pub mod holds;
pub mod horizon;
pub mod live_builds;
pub mod paused_handlers;
pub mod pretty;
pub mod published;
pub mod replay;
pub mod retention;
pub mod ticker;
pub mod window;
pub mod work_detail;
