//! Handlers: the application code an authority runs for each attempt, registered by name.
//!
//! A handler sees one physical attempt ([`AttemptContext`]: the item's ids, payload,
//! idempotency key, attempt number and the claim it runs under) and answers a
//! [`HandlerOutcome`]: success, a structured failure ([`FailureClass`] — retryable or
//! terminal, never parsed from a message), or [`HandlerOutcome::Uncertain`], the simulated
//! "crashed mid-attempt": the authority then records nothing, the claim lapses, and the
//! reclaim counts an uncertain attempt and reuses the same idempotency key.
//!
//! Handlers never read a clock or sleep directly: [`AttemptContext::spend`] is how a
//! handler takes time, so the same handler runs in real time in a process and in virtual
//! time in the simulated cluster. Their randomness comes from [`AttemptContext::rng`],
//! seeded from the workload seed and the attempt's identity, so an attempt's outcome does
//! not depend on the order attempts run in.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rand::SeedableRng;
use rand::rngs::SmallRng;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::clock::Millis;
use crate::model::{Failure, FailureClass, JournalEvent};

/// What kind of attempt a handler is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum AttemptKind {
    /// An outbox effect.
    Effect,
    /// One schedule firing.
    Schedule,
    /// A subscription delivery: [`AttemptContext::events`] holds the batch.
    Cursor,
    /// A workflow action invocation.
    Action,
}

/// How a handler's time passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// [`AttemptContext::spend`] blocks the calling thread (a real authority process).
    Real,
    /// [`AttemptContext::spend`] only adds to the attempt's virtual latency (the simulated
    /// cluster, which advances its clock by it).
    Virtual,
}

/// One physical attempt, as its handler sees it.
#[derive(Debug)]
pub struct AttemptContext {
    /// Work item id (`wf:<instanceId>` for a workflow action).
    pub work_id: String,
    pub kind: AttemptKind,
    /// The handler name (for an action: the action name).
    pub handler: String,
    /// The input: the item's payload, or the action's evaluated arguments.
    pub payload: Value,
    /// Stable across retries: the semantic identity (`"<instanceId>/<activationId>"` for an
    /// action invocation).
    pub logical_effect_id: String,
    /// What an idempotent provider should dedup on; the same on every retry.
    pub idempotency_key: String,
    /// 1-based physical attempt number.
    pub attempt: u32,
    /// The authority running it, and the claim's generation.
    pub owner_id: String,
    pub generation: u64,
    /// For a cursor delivery: the journal events after the durable cursor, in order.
    pub events: Vec<JournalEvent>,
    seed: u64,
    pace: Pace,
    spent: AtomicI64,
}

impl AttemptContext {
    /// A context for one attempt; `workload_seed` seeds [`Self::rng`].
    #[must_use]
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        work_id: impl Into<String>,
        kind: AttemptKind,
        handler: impl Into<String>,
        payload: Value,
        logical_effect_id: impl Into<String>,
        idempotency_key: impl Into<String>,
        attempt: u32,
        owner_id: impl Into<String>,
        generation: u64,
        workload_seed: u64,
        pace: Pace,
    ) -> Self {
        let work_id = work_id.into();
        let mut hasher = Sha256::new();
        hasher.update(workload_seed.to_le_bytes());
        hasher.update(work_id.as_bytes());
        hasher.update([0]);
        hasher.update(attempt.to_le_bytes());
        hasher.update(generation.to_le_bytes());
        let digest = hasher.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        Self {
            work_id,
            kind,
            handler: handler.into(),
            payload,
            logical_effect_id: logical_effect_id.into(),
            idempotency_key: idempotency_key.into(),
            attempt,
            owner_id: owner_id.into(),
            generation,
            events: Vec::new(),
            seed: u64::from_le_bytes(first),
            pace,
            spent: AtomicI64::new(0),
        }
    }

    /// A generator seeded from the workload seed and this attempt's identity (item,
    /// attempt, generation), salted with `purpose` so independent decisions do not
    /// correlate.
    #[must_use]
    pub fn rng(&self, purpose: &str) -> SmallRng {
        let mut salt: u64 = 0xcbf2_9ce4_8422_2325;
        for b in purpose.bytes() {
            salt = (salt ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
        }
        SmallRng::seed_from_u64(self.seed ^ salt)
    }

    /// Takes `ms` of time: sleeps in a real process, adds virtual latency in the cluster.
    pub fn spend(&self, ms: Millis) {
        let ms = ms.max(0);
        self.spent.fetch_add(ms, Ordering::Relaxed);
        if self.pace == Pace::Real && ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(ms.unsigned_abs()));
        }
    }

    /// The time this attempt has spent so far.
    #[must_use]
    pub fn spent(&self) -> Millis {
        self.spent.load(Ordering::Relaxed)
    }
}

/// How one attempt ended, as the handler reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum HandlerOutcome {
    /// Done; the optional output is stored as the item's result (an action's output binds).
    Succeeded(Option<Value>),
    /// Failed, classified: retryable failures retry durably with backoff while attempts
    /// remain; terminal ones fail the item.
    Failed(Failure),
    /// The attempt may or may not have taken effect and nothing is recorded (the simulated
    /// crash mid-attempt): the claim lapses, the reclaim counts `uncertainAttempts` and
    /// retries with the same idempotency key.
    Uncertain,
}

impl HandlerOutcome {
    /// A retryable failure.
    #[must_use]
    pub fn retryable(code: &str, message: impl Into<String>) -> Self {
        Self::Failed(Failure {
            class: FailureClass::Retryable,
            code: code.into(),
            message: message.into(),
        })
    }

    /// A terminal failure.
    #[must_use]
    pub fn terminal(code: &str, message: impl Into<String>) -> Self {
        Self::Failed(Failure {
            class: FailureClass::Terminal,
            code: code.into(),
            message: message.into(),
        })
    }

    /// `succeeded`, `retryable`, `terminal` or `uncertain`: the exec log's outcome word.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match self {
            Self::Succeeded(_) => "succeeded",
            Self::Failed(f) if f.class == FailureClass::Retryable => "retryable",
            Self::Failed(_) => "terminal",
            Self::Uncertain => "uncertain",
        }
    }
}

/// Application code for one handler name.
pub trait Handler: Send + Sync {
    /// Runs one attempt. Must not panic; take time only through [`AttemptContext::spend`].
    fn run(&self, attempt: &AttemptContext) -> HandlerOutcome;
}

impl<F> Handler for F
where
    F: Fn(&AttemptContext) -> HandlerOutcome + Send + Sync,
{
    fn run(&self, attempt: &AttemptContext) -> HandlerOutcome {
        self(attempt)
    }
}

/// The handlers an authority registers, by name, plus the seed their randomness derives
/// from. Cheap to clone.
#[derive(Clone)]
pub struct Workload {
    name: String,
    seed: u64,
    handlers: BTreeMap<String, Arc<dyn Handler>>,
}

impl std::fmt::Debug for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workload")
            .field("name", &self.name)
            .field("seed", &self.seed)
            .field("handlers", &self.handlers.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Workload {
    /// An empty workload.
    #[must_use]
    pub fn new(name: impl Into<String>, seed: u64) -> Self {
        Self {
            name: name.into(),
            seed,
            handlers: BTreeMap::new(),
        }
    }

    /// Registers (or replaces) the handler for `name`.
    #[must_use]
    pub fn with(mut self, name: impl Into<String>, handler: impl Handler + 'static) -> Self {
        self.handlers.insert(name.into(), Arc::new(handler));
        self
    }

    /// Registers (or replaces) a shared handler for `name`.
    pub fn register(&mut self, name: impl Into<String>, handler: Arc<dyn Handler>) {
        self.handlers.insert(name.into(), handler);
    }

    /// Every handler wrapped by `wrap` (the cluster wraps them with fault injection).
    #[must_use]
    pub fn wrapped(mut self, wrap: impl Fn(Arc<dyn Handler>) -> Arc<dyn Handler>) -> Self {
        for handler in self.handlers.values_mut() {
            *handler = wrap(handler.clone());
        }
        self
    }

    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    #[must_use]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The handler registered for `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&Arc<dyn Handler>> {
        self.handlers.get(name)
    }

    /// Registered handler names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.handlers.keys().map(String::as_str)
    }

    /// Runs `attempt` with its handler; an unregistered name is a terminal
    /// `UNKNOWN_HANDLER` failure (visible on the item), never a silent success.
    #[must_use]
    pub fn run(&self, attempt: &AttemptContext) -> HandlerOutcome {
        match self.handlers.get(&attempt.handler) {
            Some(handler) => handler.run(attempt),
            None => HandlerOutcome::terminal(
                "UNKNOWN_HANDLER",
                format!(
                    "no handler named {:?} is registered in workload {:?}",
                    attempt.handler, self.name
                ),
            ),
        }
    }
}
