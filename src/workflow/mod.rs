//! Durable workflows (docs/ARCHITECTURE.md#workflows).
//!
//! A workflow is data — a [`WorkflowDef`] of six step kinds and closed, deterministic
//! expressions — advanced by a pure state machine and persisted by a store. This module is
//! split along that line:
//!
//! - **Pure, storage-free** (here): [`def`] (the definition and total JSON / TOML parsing),
//!   [`expr`] (the expression language and its evaluator), [`mod@validate`] (the fifteen
//!   `WORKFLOW_*` diagnostics against a [`Catalog`] of registered handlers), [`fingerprint`]
//!   (the semantic fingerprint that decides instance compatibility, and the canonical JSON
//!   form), [`keys`] (the compatibility keys of instances and the set an authority claims
//!   by), [`runnable`] (whether the running authorities can run an item or instance, judged
//!   by those keys), and [`machine`] (start / apply transitions with `now` passed in,
//!   producing the new state and its history entries).
//! - **Store-backed** ([`engine`], separately): idempotent start, the fenced
//!   `instanceRevision` CAS around each [`machine::apply`], event-wait registration and
//!   journal replay from `sinceEventSeq`, timer and retry discovery, action invocation with
//!   durable outcome records, cancellation and inspection.
//!
//! Nothing here reads a clock, touches storage or panics on bad input, so every provider and
//! every authority computes the same transitions, and tests drive time explicitly.
//!
//! Shipped definitions live in `workflows/` and are embedded as
//! [`def::SHIPPED_DEFINITIONS`]; [`Catalog::demo`] lists exactly the actions and events they
//! use.

pub mod def;
pub mod expr;
pub mod fingerprint;
pub mod keys;
pub mod machine;
pub mod runnable;
pub mod validate;

pub use def::{
    SHIPPED_DEFINITIONS, Step, StepKind, WorkflowBinding, WorkflowDef, WorkflowInput,
    parse_definition, parse_definition_toml,
};
pub use expr::{EvalError, Expr, Scope, eval};
pub use fingerprint::{canonical_json, semantic_fingerprint};
pub use machine::{
    HistoryEntry, HistoryKind, InstanceState, InstanceStatus, MachineError, Trigger, Waiting,
    apply, start,
};
pub mod engine;
pub use validate::handlers::HandlerSet;
pub use validate::{Catalog, Diagnostic, codes, validate, validate_text};
