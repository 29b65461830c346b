//! One physical attempt as its handler sees it: [`AttemptContext`] (read it), and
//! [`Attempt`], the owned handle an async handler receives.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use rand::SeedableRng;
use rand::rngs::SmallRng;
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::lease_signal::{LeaseSignal, LeaseWatch};
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::JournalEvent;

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

/// How a blocking handler's time passes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pace {
    /// [`AttemptContext::spend`] blocks the calling thread (a real authority process).
    Real,
    /// [`AttemptContext::spend`] only adds to the attempt's virtual latency (the simulated
    /// cluster, which advances its clock by it).
    Virtual,
}

/// Writes a checkpoint under the attempt's fence; given by the core, which knows the
/// claim. Synchronous: it is a store call.
pub type CheckpointWriter = Arc<dyn Fn(&str) -> Result<()> + Send + Sync>;

/// One physical attempt, as its handler sees it.
pub struct AttemptContext {
    /// Work item id (`wf:<instanceId>` for a workflow action).
    pub work_id: String,
    /// What the attempt runs: an effect, a schedule firing, a delivery or an action.
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
    /// The authority running it.
    pub owner_id: String,
    /// The claim's fencing generation: a later owner holds a higher one.
    pub generation: u64,
    /// For a cursor delivery: the journal events after the durable cursor, in order.
    pub events: Vec<JournalEvent>,
    /// The checkpoint an earlier attempt saved ([`Attempt::save_checkpoint`]), if any: a
    /// reclaim after a crash resumes from it instead of starting over.
    pub checkpoint: Option<String>,
    lease: LeaseWatch,
    writer: Option<CheckpointWriter>,
    /// The workload's seed: [`Self::rng`] mixes it with the attempt's identity when asked
    /// (a digest per attempt, which most handlers never need, is not paid up front).
    workload_seed: u64,
    pace: Pace,
    spent: AtomicI64,
}

impl std::fmt::Debug for AttemptContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AttemptContext")
            .field("work_id", &self.work_id)
            .field("kind", &self.kind)
            .field("handler", &self.handler)
            .field("attempt", &self.attempt)
            .field("owner_id", &self.owner_id)
            .field("generation", &self.generation)
            .field("lease_lost", &self.lease.is_lost())
            .finish_non_exhaustive()
    }
}

impl AttemptContext {
    /// A context for one attempt; `workload_seed` seeds [`Self::rng`]. Its lease is never
    /// lost and it cannot save a checkpoint until the core gives it both
    /// ([`Self::with_lease`], [`Self::with_checkpoint_writer`]).
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
        Self {
            work_id: work_id.into(),
            kind,
            handler: handler.into(),
            payload,
            logical_effect_id: logical_effect_id.into(),
            idempotency_key: idempotency_key.into(),
            attempt,
            owner_id: owner_id.into(),
            generation,
            events: Vec::new(),
            checkpoint: None,
            lease: LeaseSignal::default().watch(),
            writer: None,
            workload_seed,
            pace,
            spent: AtomicI64::new(0),
        }
    }

    /// Ties the attempt to its claim's lease-lost signal.
    #[must_use]
    pub fn with_lease(mut self, lease: LeaseWatch) -> Self {
        self.lease = lease;
        self
    }

    /// The checkpoint an earlier attempt left on the item.
    #[must_use]
    pub fn with_checkpoint(mut self, checkpoint: Option<String>) -> Self {
        self.checkpoint = checkpoint;
        self
    }

    /// Lets the attempt save checkpoints through `writer` (fenced by the core).
    #[must_use]
    pub fn with_checkpoint_writer(mut self, writer: CheckpointWriter) -> Self {
        self.writer = Some(writer);
        self
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
        SmallRng::seed_from_u64(self.seed() ^ salt)
    }

    /// The attempt's own seed: a digest of the workload seed and the attempt's identity.
    fn seed(&self) -> u64 {
        let mut hasher = Sha256::new();
        hasher.update(self.workload_seed.to_le_bytes());
        hasher.update(self.work_id.as_bytes());
        hasher.update([0]);
        hasher.update(self.attempt.to_le_bytes());
        hasher.update(self.generation.to_le_bytes());
        let digest = hasher.finalize();
        let mut first = [0u8; 8];
        first.copy_from_slice(&digest[..8]);
        u64::from_le_bytes(first)
    }

    /// Takes `ms` of time: sleeps in a real process, adds virtual latency in the cluster.
    /// For blocking handlers; an async handler awaits its own I/O instead.
    pub fn spend(&self, ms: Millis) {
        let ms = ms.max(0);
        self.spent.fetch_add(ms, Ordering::Relaxed);
        if self.pace == Pace::Real && ms > 0 {
            std::thread::sleep(std::time::Duration::from_millis(ms.unsigned_abs()));
        }
    }

    /// The time this attempt has spent so far through [`Self::spend`].
    #[must_use]
    pub fn spent(&self) -> Millis {
        self.spent.load(Ordering::Relaxed)
    }

    /// Whether the authority has learned that it no longer owns this item.
    #[must_use]
    pub fn is_lease_lost(&self) -> bool {
        self.lease.is_lost()
    }

    /// Resolves when the authority learns it no longer owns this item (a refused renewal,
    /// a shutdown whose grace ran out); never while the lease is held. Whatever the
    /// handler answers after that is refused by the fence, so it may as well stop.
    pub async fn lease_lost(&self) {
        self.lease.lost().await;
    }

    /// Saves `data` as this item's checkpoint, under the attempt's fence, blocking the
    /// calling thread for one store write (blocking handlers; async ones use
    /// [`Attempt::save_checkpoint`]).
    ///
    /// # Errors
    /// `WORK_FENCED` once another claim owns the item; `INVALID` when the attempt cannot
    /// save checkpoints or `data` is too large; a store failure.
    pub fn save_checkpoint_blocking(&self, data: &str) -> Result<()> {
        match &self.writer {
            Some(write) => write(data),
            None => Err(Error::Invalid(format!(
                "attempt {} of {} cannot save a checkpoint",
                self.attempt, self.work_id
            ))),
        }
    }
}

/// What an async [`super::Handler`] receives: the attempt's context, owned and cheap to
/// clone, so the handler's future can keep it across awaits and hand it to tasks.
#[derive(Debug, Clone)]
pub struct Attempt(Arc<AttemptContext>);

impl Attempt {
    /// Wraps `context` for an async handler.
    #[must_use]
    pub fn new(context: AttemptContext) -> Self {
        Self(Arc::new(context))
    }

    /// Saves `data` as this item's checkpoint under the attempt's fence, without blocking
    /// the async worker (the store write runs on the blocking pool). The next owner after
    /// a crash finds it in [`AttemptContext::checkpoint`].
    ///
    /// # Errors
    /// As [`AttemptContext::save_checkpoint_blocking`].
    pub async fn save_checkpoint(&self, data: impl Into<String>) -> Result<()> {
        let context = self.0.clone();
        let data = data.into();
        tokio::task::spawn_blocking(move || context.save_checkpoint_blocking(&data))
            .await
            .map_err(|e| {
                Error::OutcomeUnknown(format!("the checkpoint write did not finish: {e}"))
            })?
    }
}

impl std::ops::Deref for Attempt {
    type Target = AttemptContext;

    fn deref(&self) -> &AttemptContext {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use rand::Rng;

    use super::*;

    fn context(work_id: &str, attempt: u32, generation: u64, seed: u64) -> AttemptContext {
        AttemptContext::new(
            work_id,
            AttemptKind::Effect,
            "h",
            Value::Null,
            work_id,
            work_id,
            attempt,
            "a1",
            generation,
            seed,
            Pace::Virtual,
        )
    }

    fn draws(context: &AttemptContext, purpose: &str) -> Vec<u64> {
        let mut rng = context.rng(purpose);
        (0..4).map(|_| rng.random()).collect()
    }

    #[test]
    fn an_attempts_draws_follow_its_identity_and_the_workload_seed() {
        let first = draws(&context("w1", 1, 1, 7), "demo");
        assert_eq!(first, draws(&context("w1", 1, 1, 7), "demo"));
        assert_eq!(first, draws(&context("w1", 1, 1, 7), "demo"), "asked twice");
        for other in [
            context("w2", 1, 1, 7),
            context("w1", 2, 1, 7),
            context("w1", 1, 2, 7),
            context("w1", 1, 1, 8),
        ] {
            assert_ne!(first, draws(&other, "demo"), "{other:?}");
        }
        assert_ne!(first, draws(&context("w1", 1, 1, 7), "fault"));
    }
}
