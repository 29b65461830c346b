//! The operator's vocabulary: the facts the dashboard and the command line state about a
//! running cluster (liveness, failovers, fenced writes, filters, cursors), each defined
//! once here so the two can never disagree.

pub mod failovers;
pub mod fenced;
pub mod window;
