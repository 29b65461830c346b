//! What a provider guarantees, named: the work model's seven promises every provider keeps,
//! and the deployment facts that differ between them (whether the store outlives the
//! process, and who else can reach it). Callers state what they need with
//! [`crate::Store::require`] and fail at start with `CAPABILITY_MISSING` — never a silent
//! single-node fallback.

/// One capability a provider may advertise.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Capability {
    /// Leases with expiry that any authority on the store can take over.
    DistributedLease,
    /// Every write checks the writer's generation in its own transaction.
    Fencing,
    /// A claim takes an item for one owner in one serialised transaction.
    AtomicWorkClaim,
    /// Retries and their backoff are durable state, not a process's memory.
    DurableRetry,
    /// An event id is answered once (`accepted`, then `duplicate`).
    EventDedup,
    /// Subscription positions are store state advanced under a fence.
    DurableSubscriptionCursor,
    /// Each commit gets a revision readers can observe and order.
    RevisionObservation,
    /// What is committed survives the process (and, with `synchronous=FULL` or
    /// PostgreSQL's own settings, the machine).
    Durable,
    /// Several OS processes on one host can share the store.
    SharedAcrossProcesses,
    /// Processes on several hosts can share the store.
    SharedAcrossHosts,
    /// Readers can be told of each commit as it happens ([`crate::Store::commit_feed`])
    /// instead of polling.
    PushesCommits,
}

/// The work model: what every provider must keep, and what an authority requires.
pub const WORK_MODEL: [Capability; 7] = [
    Capability::DistributedLease,
    Capability::Fencing,
    Capability::AtomicWorkClaim,
    Capability::DurableRetry,
    Capability::EventDedup,
    Capability::DurableSubscriptionCursor,
    Capability::RevisionObservation,
];

impl Capability {
    /// The name operators read (`inspect`, errors).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::DistributedLease => "distributed-lease",
            Self::Fencing => "fencing",
            Self::AtomicWorkClaim => "atomic-work-claim",
            Self::DurableRetry => "durable-retry",
            Self::EventDedup => "event-dedup",
            Self::DurableSubscriptionCursor => "durable-subscription-cursor",
            Self::RevisionObservation => "revision-observation",
            Self::Durable => "durable",
            Self::SharedAcrossProcesses => "shared-across-processes",
            Self::SharedAcrossHosts => "shared-across-hosts",
            Self::PushesCommits => "pushes-commits",
        }
    }
}

impl std::fmt::Display for Capability {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
