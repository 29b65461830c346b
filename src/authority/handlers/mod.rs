//! Handlers: the application code an authority runs for each attempt, registered by name
//! and semantic version.
//!
//! A handler sees one physical attempt ([`AttemptContext`]: the item's ids, payload,
//! idempotency key, attempt number, the claim it runs under, the checkpoint an earlier
//! attempt left and the lease-lost signal) and answers a [`HandlerOutcome`]: success, a
//! structured failure ([`FailureClass`] — retryable or terminal, never parsed from a
//! message), or [`HandlerOutcome::Uncertain`]: the authority then records nothing, the
//! claim lapses, and the reclaim counts an uncertain attempt and reuses the same
//! idempotency key. A handler that panics has failed, retryably: its attempt is recorded
//! at once as a [`PANIC_CODE`] failure carrying the panic's message
//! ([`HandlerOutcome::panicked`]).
//!
//! Two kinds, one registry ([`Workload`]):
//! - [`Handler`] is what applications write: `async`, doing real I/O, given an owned
//!   [`Attempt`]. The runtime renews the claim while it runs, however long that takes.
//! - [`BlockingHandler`] is synchronous and takes time only through
//!   [`AttemptContext::spend`], so one handler runs in real time in a process (on the
//!   blocking pool) and in virtual time in the simulated cluster. The built-in demo
//!   workloads are written this way; their randomness comes from [`AttemptContext::rng`],
//!   seeded from the workload seed and the attempt's identity, so an outcome does not
//!   depend on the order attempts run in.

#![warn(missing_docs)]

mod attempt;
mod lease_signal;
mod registry;

pub use attempt::{Attempt, AttemptContext, AttemptKind, CheckpointWriter, Pace};
pub use lease_signal::{LeaseSignal, LeaseWatch};
pub use registry::{Registered, Workload};

use std::any::Any;
use std::future::Future;
use std::pin::Pin;

use crate::clock::Millis;
use crate::model::{Failure, FailureClass};

/// The longest a handler may hold its retry back ([`HandlerOutcome::RetryAfter`]): a day.
/// A longer wait, an `exec` or `http` handler's `delayMs` or `Retry-After` included, is
/// cut to it, so a typo or an unbounded value cannot park an item for years (or past the
/// last instant a store keeps).
pub const MAX_RETRY_AFTER_MS: Millis = 86_400_000;

/// The failure code of an attempt whose handler panicked ([`HandlerOutcome::panicked`]).
pub const PANIC_CODE: &str = "HANDLER_PANICKED";

/// A failure's message is cut to this many characters ([`cut_message`]), whichever handler
/// wrote it.
pub const MAX_MESSAGE_CHARS: usize = 2_000;

/// `text` cut to [`MAX_MESSAGE_CHARS`] characters, ending with `…` when something was cut.
#[must_use]
pub fn cut_message(text: &str) -> String {
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

/// The longest failure code, in bytes.
pub const MAX_CODE_BYTES: usize = 64;

/// The code a failure is kept under when the code its handler gave breaks the rule
/// ([`check_code`]; [`HandlerOutcome::with_valid_code`]).
pub const INVALID_CODE: &str = "INVALID_CODE";

/// Whether `code` may name a failure: 1 to [`MAX_CODE_BYTES`] letters, digits, `_`, `-` or
/// `.`, what operators filter and count on (`code:NAME`), and not [`PANIC_CODE`]. The rule
/// for every handler, in code or behind the JSON protocol.
///
/// # Errors
/// Why not, quoting the code escaped (and cut just past the longest a code may be).
pub fn check_code(code: &str) -> Result<(), String> {
    // Only the runtime says a handler panicked ([`HandlerOutcome::panicked`]): the log's
    // `handler-panicked` line and an operator's `code:` filter rely on it.
    if code == PANIC_CODE {
        return Err(format!(
            "failure code {PANIC_CODE} is the runtime's own, for a handler that panicked"
        ));
    }
    let fine = !code.is_empty()
        && code.len() <= MAX_CODE_BYTES
        && code
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'));
    if fine {
        return Ok(());
    }
    let quoted = crate::foundation::text_cell::truncate(code, MAX_CODE_BYTES + 1);
    Err(format!(
        "failure code {quoted:?} must be 1 to {MAX_CODE_BYTES} letters, digits, '_', '-' or '.'"
    ))
}

/// How one attempt ended, as the handler reports it.
#[derive(Debug, Clone, PartialEq)]
pub enum HandlerOutcome {
    /// Done; the optional output is stored as the item's result (an action's output binds).
    Succeeded(Option<serde_json::Value>),
    /// Failed, classified: retryable failures retry durably with backoff while attempts
    /// remain; terminal ones fail the item.
    Failed(Failure),
    /// A retryable failure whose retry must wait at least `delay_ms` (the durable backoff
    /// still applies when it is longer): a rate limit's retry-after, a dependency that said
    /// when to come back. Built with [`Self::retry_after`]. A workflow action's retry
    /// follows its definition's retry policy instead.
    RetryAfter {
        /// Why it failed (its class is retryable).
        failure: Failure,
        /// The least the retry waits, in ms; applied as [`HandlerOutcome::retry_floor_ms`]
        /// reads it, held to [`MAX_RETRY_AFTER_MS`].
        delay_ms: Millis,
    },
    /// The attempt may or may not have taken effect and nothing is recorded (a command
    /// killed by a signal, a lost lease): the claim lapses, the reclaim counts
    /// `uncertainAttempts` and retries with the same idempotency key.
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

    /// A retryable failure not to be retried before `delay_ms` from now (at most
    /// [`MAX_RETRY_AFTER_MS`]: a longer delay waits that long).
    #[must_use]
    pub fn retry_after(code: &str, message: impl Into<String>, delay_ms: Millis) -> Self {
        Self::RetryAfter {
            failure: Failure {
                class: FailureClass::Retryable,
                code: code.into(),
                message: message.into(),
            },
            delay_ms,
        }
    }

    /// What an attempt whose handler panicked with `payload` ends as: a retryable
    /// [`PANIC_CODE`] failure whose message is the panic's (cut as every message is). A
    /// panic is a bug in the handler, not an unknown outcome: recorded at once, it is
    /// retried on the handler's backoff and counted against its budget like any
    /// retryable failure (whose effects, too, may have happened in part), instead of
    /// waiting for its claim to lapse and ending as a dead letter with its message lost.
    #[must_use]
    pub fn panicked(payload: &(dyn Any + Send)) -> Self {
        let message = crate::foundation::panic::message(payload)
            .unwrap_or("the handler panicked with a value that is not text");
        Self::retryable(PANIC_CODE, cut_message(message))
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

    /// The same outcome as it is recorded: a failure's message cut to
    /// [`MAX_MESSAGE_CHARS`] ([`cut_message`]), and its code one that may be filtered on. A
    /// failure whose code breaks the rule ([`check_code`]) is kept, with its class and any
    /// retry it asked for, under [`INVALID_CODE`], its message first saying which code it
    /// gave. Neither dropped nor refused: the failure happened, and its handler's author
    /// finds why.
    #[must_use]
    pub fn with_valid_code(mut self) -> Self {
        if let Self::Failed(f) | Self::RetryAfter { failure: f, .. } = &mut self {
            if let Err(why) = check_code(&f.code) {
                f.message = match f.message.as_str() {
                    "" => why,
                    said => format!("{why}; message: {said}"),
                };
                f.code = INVALID_CODE.into();
            }
            f.message = cut_message(&f.message);
        }
        self
    }

    /// The failure, for either failed outcome.
    #[must_use]
    pub fn failure(&self) -> Option<&Failure> {
        match self {
            Self::Failed(f) | Self::RetryAfter { failure: f, .. } => Some(f),
            Self::Succeeded(_) | Self::Uncertain => None,
        }
    }

    /// The least delay before a retry the handler asked for (0 when it asked none), held
    /// to `0..=`[`MAX_RETRY_AFTER_MS`]: the one place every handler's ask is bounded,
    /// however its outcome was built.
    #[must_use]
    pub fn retry_floor_ms(&self) -> Millis {
        match self {
            Self::RetryAfter { delay_ms, .. } => (*delay_ms).clamp(0, MAX_RETRY_AFTER_MS),
            _ => 0,
        }
    }

    /// `succeeded`, `retryable`, `terminal` or `uncertain`: the exec log's outcome word.
    #[must_use]
    pub fn label(&self) -> &'static str {
        match (self, self.failure()) {
            (Self::Succeeded(_), _) => "succeeded",
            (_, Some(f)) if f.class == FailureClass::Retryable => "retryable",
            (_, Some(_)) => "terminal",
            _ => "uncertain",
        }
    }
}

/// The future an async handler returns.
pub type HandlerFuture = Pin<Box<dyn Future<Output = HandlerOutcome> + Send + 'static>>;

/// Application code for one handler name: an async function of one attempt.
///
/// Any `Fn(Attempt) -> impl Future<Output = HandlerOutcome>` is a handler:
///
/// ```
/// use leasehold::authority::{Attempt, HandlerOutcome};
///
/// async fn send_email(attempt: Attempt) -> HandlerOutcome {
///     let to = attempt.payload["to"].as_str().unwrap_or_default().to_owned();
///     // ... call the mail provider with `attempt.idempotency_key` ...
///     HandlerOutcome::Succeeded(Some(serde_json::json!({ "sentTo": to })))
/// }
/// # let _ = send_email;
/// ```
pub trait Handler: Send + Sync + 'static {
    /// Runs one attempt. Long handlers may watch [`AttemptContext::lease_lost`] and stop
    /// early; a panic, here or in the future, is a retryable [`PANIC_CODE`] failure.
    fn handle(&self, attempt: Attempt) -> HandlerFuture;
}

impl<F, Fut> Handler for F
where
    F: Fn(Attempt) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = HandlerOutcome> + Send + 'static,
{
    fn handle(&self, attempt: Attempt) -> HandlerFuture {
        Box::pin(self(attempt))
    }
}

/// A synchronous handler that takes time only through [`AttemptContext::spend`]: runs on
/// the blocking pool in a process, and in virtual time in the simulated cluster.
pub trait BlockingHandler: Send + Sync {
    /// Runs one attempt; a panic is a retryable [`PANIC_CODE`] failure.
    fn run(&self, attempt: &AttemptContext) -> HandlerOutcome;
}

impl<F> BlockingHandler for F
where
    F: Fn(&AttemptContext) -> HandlerOutcome + Send + Sync,
{
    fn run(&self, attempt: &AttemptContext) -> HandlerOutcome {
        self(attempt)
    }
}
