//! The one error type. Variants are domain facts with a stable [`Error::code`] that tests
//! and scripts match on; providers translate backend failures into the store variants
//! (`Contention`, `Unavailable`, `Refused`, `Corrupt`, `OutcomeUnknown`) so no backend error
//! text is ever mistaken for a coordination outcome, and an outage that may pass is never
//! confused with a refusal that will not.

/// Everything a store operation can answer other than success.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub enum Error {
    /// A live lease is held by someone else (`WORK_IN_PROGRESS`).
    #[error("WORK_IN_PROGRESS: {resource} is held by {owner} until {expires_at}")]
    LeaseHeld {
        resource: String,
        owner: String,
        expires_at: i64,
    },
    /// The caller's generation or token is not the current one (`WORK_FENCED`).
    #[error("WORK_FENCED: {resource} presented generation {presented}, current is {current}")]
    Fenced {
        resource: String,
        presented: u64,
        current: u64,
    },
    /// The item is not in a state that can be claimed (`WORK_NOT_CLAIMABLE`).
    #[error("WORK_NOT_CLAIMABLE: {id} is {state}")]
    NotClaimable { id: String, state: String },
    /// The item or instance was made by a build with another compatibility key.
    #[error("INCOMPATIBLE_AUTHORITY: {id} needs build key {required}, this authority has {have}")]
    Incompatible {
        id: String,
        required: String,
        have: String,
    },
    /// The same external event id arrived with a different payload.
    #[error("EVENT_ID_CONFLICT: {event_source}/{external_id} was first seen with another payload")]
    EventIdConflict {
        event_source: String,
        external_id: String,
    },
    /// A start with a known idempotency key but other arguments than the first: a different
    /// request under a reused key, never answered as a duplicate.
    #[error(
        "IDEMPOTENCY_CONFLICT: {what} {key:?} was first started with other arguments ({detail}); nothing was started"
    )]
    IdempotencyConflict {
        what: String,
        key: String,
        detail: String,
    },
    /// An enqueue naming a work item that exists — by the idempotency key, whatever the id,
    /// or by the id — but offering another effect: another handler, payload or kind of
    /// work, or an explicit key other than the item's. A different request under a reused
    /// key, never answered as a duplicate; nothing is enqueued.
    #[error(
        "IDEMPOTENCY_CONFLICT: work item {existing} (idempotency key {key}) already exists with another {what}; nothing was enqueued"
    )]
    EnqueueConflict {
        existing: String,
        key: String,
        what: String,
    },
    /// The item already finished; nothing was changed.
    #[error("already-terminal: {id} is already {state}")]
    AlreadyTerminal { id: String, state: String },
    /// An operator's verb on a work item in a state the verb does not act on: a requeue
    /// of an item that has not failed, a retry-now of one that is running. (A finished
    /// item is `already-terminal`.) Nothing was changed.
    #[error("WORK_STATE_MISMATCH: {id} is {state}")]
    WorkStateMismatch { id: String, state: String },
    /// A run over many items — an action over a `--filter`, `work enqueue --from` —
    /// refused some of them (perhaps all): the rest were done, and the run's report names
    /// the refusals.
    #[error("ITEMS_REFUSED: {0}")]
    ItemsRefused(String),
    /// An action over more items than it takes unasked, without the confirmation
    /// (`--yes`): nothing was done.
    #[error("CONFIRMATION_REQUIRED: {0}")]
    ConfirmationRequired(String),
    /// A cursor write that would move a subscription cursor backwards.
    #[error("stale-sequence: {subscription} is at {current}, refused {presented}")]
    StaleSequence {
        subscription: String,
        presented: u64,
        current: u64,
    },
    /// The owner already holds as many live leases as it may.
    #[error("LEASE_CAP_REACHED: {owner} already holds {held} live leases (cap {cap})")]
    LeaseCap { owner: String, held: u64, cap: u64 },
    /// A handoff to the lease's own holder: nothing would change hands.
    #[error(
        "LEASE_SELF_HANDOFF: {owner} already holds {resource}; a holder keeps a lease by renewing it"
    )]
    SelfHandoff { resource: String, owner: String },
    /// No such lease, item, instance, definition or subscription.
    #[error("NOT_FOUND: no {what} named {id}")]
    NotFound { what: String, id: String },
    /// A request that is malformed on its face (bad config, bad argument).
    #[error("INVALID: {0}")]
    Invalid(String),
    /// The provider lacks a capability the caller needs.
    #[error("CAPABILITY_MISSING: the {provider} store does not provide {capability}")]
    CapabilityMissing {
        provider: String,
        capability: String,
    },
    /// Physical contention (SQLITE_BUSY, serialization failure) outlasted the retry budget.
    #[error("STORE_CONTENTION: the store stayed busy after {attempts} attempts")]
    Contention { attempts: u32 },
    /// The store cannot be reached or used right now (refused or lost connections, a
    /// server starting or shutting down, a full disk, an I/O error): retrying may help,
    /// and the runtime does.
    #[error("STORE_UNAVAILABLE: {0}")]
    Unavailable(String),
    /// The store answered and refuses this process for good: wrong credentials, a role or
    /// file without permission, a server certificate that fails verification, a database,
    /// directory or store that does not exist, a path that is not a leasehold store, a
    /// schema this build cannot open. Retrying does not help until an operator fixes the
    /// URL, the grant, the path or the build, so the runtime stops on it instead.
    #[error("STORE_REFUSED: {0}")]
    Refused(String),
    /// Something of this process's own, outside the store and the request, failed: the
    /// terminal, a file it writes as it runs, a listener, a child process or thread, the
    /// async runtime. Not a store outage (nothing waits for the store to come back) and
    /// not a bad argument: the operator looks at the host.
    #[error("LOCAL_FAILURE: {0}")]
    Local(String),
    /// The store's contents are not what this build can read.
    #[error("STORE_CORRUPT: {0}")]
    Corrupt(String),
    /// The store is behind what this host has seen of it (an older copy, a failed-over
    /// database that lost commits) or is another store under the same name: writing could
    /// hand out a generation twice, so nothing is written until an operator accepts it
    /// (`leasehold store accept-rewind`).
    #[error(
        "STORE_REWOUND: {store}: {detail}; nothing was written (after checking, `leasehold store accept-rewind` starts a new store epoch)"
    )]
    Rewound { store: String, detail: String },
    /// A commit whose result was not established; re-read before acting.
    #[error("OUTCOME_UNKNOWN: {0}")]
    OutcomeUnknown(String),
    /// The store refuses writes (opened read-only, or a file without write permission).
    #[error("STORE_READ_ONLY: {0}")]
    ReadOnly(String),
    /// Another running (live or silent) authority holds this instance id: a second start
    /// under it, or forgetting it, is refused.
    #[error("INSTANCE_IN_USE: instance {instance} is {liveness}, held by pid {pid} on host {host}")]
    InstanceInUse {
        instance: String,
        liveness: String,
        host: String,
        pid: u32,
    },
    /// The registration row of this instance id now belongs to another start of it.
    #[error(
        "INSTANCE_SUPERSEDED: instance {instance} was registered again by pid {pid} on host {host}; this process stops"
    )]
    Superseded {
        instance: String,
        host: String,
        pid: u32,
    },
    /// An operator forgot this instance's registration while it read as gone (paused or
    /// cut off past its heartbeats): the process stops rather than work unregistered.
    #[error(
        "REGISTRATION_LOST: instance {instance} was forgotten by an operator while it read as gone; this process stops (start it again to rejoin)"
    )]
    RegistrationLost { instance: String },
    /// `copy` writes only into an empty store; `holds` names what the target already has.
    #[error("COPY_TARGET_NOT_EMPTY: {target} already holds {holds}; copy into a new, empty store")]
    TargetNotEmpty { target: String, holds: String },
    /// A copy stopped after writing part of its target, or its source is itself such a
    /// partial copy: the store is not usable as it is.
    #[error(
        "COPY_INCOMPLETE: {store} holds an unfinished copy ({cause}); delete it and copy again"
    )]
    CopyIncomplete { store: String, cause: String },
}

impl Error {
    /// The stable code of this error, shared by the CLI, the logs and the tests (docs/ARCHITECTURE.md#errors).
    #[must_use]
    pub fn code(&self) -> &'static str {
        match self {
            Self::LeaseHeld { .. } => "WORK_IN_PROGRESS",
            Self::Fenced { .. } => "WORK_FENCED",
            Self::NotClaimable { .. } => "WORK_NOT_CLAIMABLE",
            Self::Incompatible { .. } => "INCOMPATIBLE_AUTHORITY",
            Self::EventIdConflict { .. } => "EVENT_ID_CONFLICT",
            Self::IdempotencyConflict { .. } | Self::EnqueueConflict { .. } => {
                "IDEMPOTENCY_CONFLICT"
            }
            Self::AlreadyTerminal { .. } => "already-terminal",
            Self::WorkStateMismatch { .. } => "WORK_STATE_MISMATCH",
            Self::ItemsRefused(_) => "ITEMS_REFUSED",
            Self::ConfirmationRequired(_) => "CONFIRMATION_REQUIRED",
            Self::StaleSequence { .. } => "stale-sequence",
            Self::LeaseCap { .. } => "LEASE_CAP_REACHED",
            Self::SelfHandoff { .. } => "LEASE_SELF_HANDOFF",
            Self::NotFound { .. } => "NOT_FOUND",
            Self::Invalid(_) => "INVALID",
            Self::CapabilityMissing { .. } => "CAPABILITY_MISSING",
            Self::Contention { .. } => "STORE_CONTENTION",
            Self::Unavailable(_) => "STORE_UNAVAILABLE",
            Self::Refused(_) => "STORE_REFUSED",
            Self::Local(_) => "LOCAL_FAILURE",
            Self::Corrupt(_) => "STORE_CORRUPT",
            Self::Rewound { .. } => "STORE_REWOUND",
            Self::OutcomeUnknown(_) => "OUTCOME_UNKNOWN",
            Self::ReadOnly(_) => "STORE_READ_ONLY",
            Self::InstanceInUse { .. } => "INSTANCE_IN_USE",
            Self::Superseded { .. } => "INSTANCE_SUPERSEDED",
            Self::RegistrationLost { .. } => "REGISTRATION_LOST",
            Self::TargetNotEmpty { .. } => "COPY_TARGET_NOT_EMPTY",
            Self::CopyIncomplete { .. } => "COPY_INCOMPLETE",
        }
    }

    /// True for failures of the store itself rather than semantic refusals; the runtime
    /// retries these unless [`Error::is_terminal_store_failure`], and the CLI maps them to
    /// exit code 2.
    #[must_use]
    pub fn is_store_failure(&self) -> bool {
        matches!(
            self,
            Self::Contention { .. }
                | Self::Unavailable(_)
                | Self::Refused(_)
                | Self::Corrupt(_)
                | Self::Rewound { .. }
                | Self::OutcomeUnknown(_)
                | Self::ReadOnly(_)
        )
    }

    /// True when the store itself cannot be trusted (damaged, replaced, rewound): unlike
    /// an outage, retrying cannot help, so writers stop rather than write into it.
    #[must_use]
    pub fn is_untrusted_store(&self) -> bool {
        matches!(self, Self::Corrupt(_) | Self::Rewound { .. })
    }

    /// True for store failures that retrying cannot help: the store refuses this process
    /// (`STORE_REFUSED`) or cannot be trusted. The runtime stops on these rather than wait.
    #[must_use]
    pub fn is_terminal_store_failure(&self) -> bool {
        matches!(self, Self::Refused(_)) || self.is_untrusted_store()
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// What each kind of failure tells its caller: whether it is the store's, and whether
    /// waiting for the store could help.
    #[test]
    fn only_an_outage_is_worth_waiting_for() {
        let cases = [
            (
                Error::Unavailable("x".into()),
                "STORE_UNAVAILABLE",
                true,
                false,
            ),
            (
                Error::Contention { attempts: 3 },
                "STORE_CONTENTION",
                true,
                false,
            ),
            (Error::Refused("x".into()), "STORE_REFUSED", true, true),
            (Error::Corrupt("x".into()), "STORE_CORRUPT", true, true),
            (Error::Local("x".into()), "LOCAL_FAILURE", false, false),
            (Error::Invalid("x".into()), "INVALID", false, false),
        ];
        for (e, code, store, terminal) in cases {
            assert_eq!(e.code(), code);
            assert!(e.to_string().starts_with(&format!("{code}: ")), "{e}");
            assert_eq!(e.is_store_failure(), store, "{e}");
            assert_eq!(e.is_terminal_store_failure(), terminal, "{e}");
        }
    }
}
