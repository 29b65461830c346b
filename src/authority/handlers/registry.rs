//! The handlers an authority registers ([`Workload`]): each name with its semantic version
//! and its code, async or blocking, and the one place that runs either kind and turns a
//! panic into the attempt's failure.

use std::collections::BTreeMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};

use futures_util::FutureExt;

use super::{Attempt, BlockingHandler, Handler, HandlerOutcome};
use crate::error::{Error, Result};
use crate::foundation::toml_file::nearest;
use crate::model::{HandlerVersion, handler_key};

#[derive(Clone)]
enum Code {
    Async(Arc<dyn Handler>),
    Blocking(Arc<dyn BlockingHandler>),
}

/// One registered handler: its version and its code.
#[derive(Clone)]
pub struct Registered {
    version: HandlerVersion,
    code: Code,
}

impl std::fmt::Debug for Registered {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Registered")
            .field("version", &self.version)
            .field("async", &matches!(self.code, Code::Async(_)))
            .finish()
    }
}

impl Registered {
    /// The version it was registered at.
    #[must_use]
    pub fn version(&self) -> &HandlerVersion {
        &self.version
    }

    /// Runs one attempt in a tokio runtime: an async handler in the calling task, a
    /// blocking one on the blocking pool. A panic is the attempt's failure
    /// ([`HandlerOutcome::panicked`]); a blocking call the runtime cancelled before it ran
    /// is [`HandlerOutcome::Uncertain`]. The async handler is not spawned as a task of its
    /// own: the caller's task already isolates it, and a spawn per item costs a wake-up per
    /// item.
    pub async fn call(&self, attempt: Attempt) -> HandlerOutcome {
        let ran = match &self.code {
            // Called inside the caught future, so a handler that panics before it returns
            // its future is caught too.
            Code::Async(handler) => {
                AssertUnwindSafe(async { handler.handle(attempt).await })
                    .catch_unwind()
                    .await
            }
            Code::Blocking(handler) => {
                let handler = handler.clone();
                match tokio::task::spawn_blocking(move || handler.run(&attempt)).await {
                    Ok(outcome) => Ok(outcome),
                    Err(e) if e.is_panic() => Err(e.into_panic()),
                    Err(_) => return HandlerOutcome::Uncertain,
                }
            }
        };
        answered(ran)
    }

    /// Runs one attempt on the calling thread (the simulated cluster, which has no async
    /// runtime): a blocking handler directly, an async one polled to completion here, its
    /// awaits taking real time. A panic is the attempt's failure, as in [`Self::call`].
    pub fn run_here(&self, attempt: &Attempt) -> HandlerOutcome {
        let run = AssertUnwindSafe(|| match &self.code {
            Code::Blocking(handler) => handler.run(attempt),
            Code::Async(handler) => block_on(handler.handle(attempt.clone())),
        });
        answered(std::panic::catch_unwind(run))
    }
}

/// What a handler that ran answered, its failure code checked
/// ([`HandlerOutcome::with_valid_code`]), or, when it panicked, its failure: the panic is
/// the handler's bug and its message says which, so it is recorded rather than left to a
/// lapse that records nothing. Every outcome of every handler passes here.
fn answered(ran: std::thread::Result<HandlerOutcome>) -> HandlerOutcome {
    ran.map_or_else(
        |payload| HandlerOutcome::panicked(&*payload),
        HandlerOutcome::with_valid_code,
    )
}

/// Polls `future` to completion on this thread, parking between wake-ups.
fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// The handlers an authority registers, by name, plus the seed the blocking handlers'
/// randomness derives from. Cheap to clone.
#[derive(Clone)]
pub struct Workload {
    name: String,
    seed: u64,
    /// Whether it is one of the built-in demo sets: said where an authority starts, so
    /// nobody mistakes the demo's handlers for an application's.
    demo: bool,
    handlers: BTreeMap<String, Registered>,
}

impl std::fmt::Debug for Workload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Workload")
            .field("name", &self.name)
            .field("seed", &self.seed)
            .field("demo", &self.demo)
            .field("handlers", &self.versions())
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
            demo: false,
            handlers: BTreeMap::new(),
        }
    }

    /// An empty built-in demo set called `name` ([`crate::authority::workload::named`]
    /// fills it); [`Self::demo_name`] says so.
    #[must_use]
    pub fn demo(name: impl Into<String>, seed: u64) -> Self {
        Self {
            demo: true,
            ..Self::new(name, seed)
        }
    }

    /// The demo set's name when this is (or was extended from) a built-in demo set;
    /// `None` for handlers an application registered or a config file named.
    #[must_use]
    pub fn demo_name(&self) -> Option<&str> {
        self.demo.then_some(self.name.as_str())
    }

    /// Every handler as `name@version`, sorted by name and joined with commas: how the
    /// authority's start names what it runs.
    #[must_use]
    pub fn summary(&self) -> String {
        let each: Vec<String> = self
            .handlers
            .iter()
            .map(|(name, r)| format!("{name}@{}", r.version))
            .collect();
        each.join(",")
    }

    /// Registers (or replaces) a blocking handler for `name` at the demo version.
    #[must_use]
    pub fn with(
        mut self,
        name: impl Into<String>,
        handler: impl BlockingHandler + 'static,
    ) -> Self {
        self.register(name, Arc::new(handler));
        self
    }

    /// Registers (or replaces) a shared blocking handler for `name` at the demo version.
    pub fn register(&mut self, name: impl Into<String>, handler: Arc<dyn BlockingHandler>) {
        self.register_blocking(name, HandlerVersion::demo(), handler);
    }

    /// Registers (or replaces) a blocking handler for `name` at `version`.
    pub fn register_blocking(
        &mut self,
        name: impl Into<String>,
        version: HandlerVersion,
        handler: Arc<dyn BlockingHandler>,
    ) {
        self.handlers.insert(
            name.into(),
            Registered {
                version,
                code: Code::Blocking(handler),
            },
        );
    }

    /// Adds (or replaces) every handler of `other`.
    pub fn extend(&mut self, other: &Self) {
        self.handlers
            .extend(other.handlers.iter().map(|(n, r)| (n.clone(), r.clone())));
    }

    /// Registers (or replaces) the async handler for `name` at `version`.
    pub fn register_async(
        &mut self,
        name: impl Into<String>,
        version: HandlerVersion,
        handler: Arc<dyn Handler>,
    ) {
        self.handlers.insert(
            name.into(),
            Registered {
                version,
                code: Code::Async(handler),
            },
        );
    }

    /// Every blocking handler wrapped by `wrap` (the cluster wraps them with fault
    /// injection); async ones are left as they are.
    #[must_use]
    pub fn wrapped(
        mut self,
        wrap: impl Fn(Arc<dyn BlockingHandler>) -> Arc<dyn BlockingHandler>,
    ) -> Self {
        for registered in self.handlers.values_mut() {
            if let Code::Blocking(handler) = &registered.code {
                registered.code = Code::Blocking(wrap(handler.clone()));
            }
        }
        self
    }

    /// The workload's name (a demo profile, or the application's instance id).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The seed blocking handlers' [`AttemptContext::rng`] derives from.
    ///
    /// [`AttemptContext::rng`]: super::AttemptContext::rng
    #[must_use]
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// The handler registered for `name`.
    #[must_use]
    pub fn get(&self, name: &str) -> Option<&Registered> {
        self.handlers.get(name)
    }

    /// Registered handler names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.handlers.keys().map(String::as_str)
    }

    /// `None` when `name` is registered; otherwise why a setting on it (a handler limit,
    /// rate or retry policy) would never apply, naming the registered handler it most
    /// likely misspells, or every registered name when none is near.
    #[must_use]
    pub fn unknown_handler(&self, name: &str) -> Option<String> {
        if self.handlers.contains_key(name) {
            return None;
        }
        Some(match nearest(name, self.names()) {
            Some(near) => format!("no handler {name:?} runs here (did you mean {near:?}?)"),
            None => format!(
                "no handler {name:?} runs here (its handlers: {})",
                self.names().collect::<Vec<_>>().join(", ")
            ),
        })
    }

    /// Refuses to run `config` with no handler at all (it would register and claim
    /// nothing, or worse, be mistaken for one that runs something) or with a handler
    /// limit, rate or retry policy on a name it does not register (it would never apply).
    ///
    /// # Errors
    /// `INVALID`, naming the authority or the setting.
    pub fn check_runs(&self, config: &crate::authority::AuthorityConfig) -> Result<()> {
        if self.handlers.is_empty() {
            return Err(Error::Invalid(format!(
                "authority {} has no handler registered",
                config.instance_id
            )));
        }
        self.check_named("handlerLimits", config.handler_limits.keys())?;
        self.check_named("handlerRates", config.handler_rates.keys())?;
        self.check_named("retry", config.retry.keys())
    }

    /// Refuses the first of `names` (the handlers a per-handler setting, named `setting`
    /// as the stored config names it, is given for) that is not registered here.
    fn check_named<'a>(
        &self,
        setting: &str,
        names: impl IntoIterator<Item = &'a String>,
    ) -> Result<()> {
        for name in names {
            if let Some(why) = self.unknown_handler(name) {
                return Err(Error::Invalid(format!("{setting}.{name}: {why}")));
            }
        }
        Ok(())
    }

    /// The compatibility digest of the items of `handler` this workload runs: what a
    /// producer stamps work for it with, so that this workload, and any other whose
    /// version of it has the same compatibility part, claims it. `None` for a handler it
    /// does not register.
    #[must_use]
    pub fn key_for(&self, handler: &str) -> Option<String> {
        self.get(handler).map(|r| handler_key(handler, &r.version))
    }

    /// The same handlers, every one re-registered at `version`: the built-in demo
    /// workload run as another release of its code (a major bump makes it a build that
    /// refuses the old work).
    #[must_use]
    pub fn at_version(mut self, version: &HandlerVersion) -> Self {
        for registered in self.handlers.values_mut() {
            registered.version = version.clone();
        }
        self
    }

    /// Every handler name with its parsed version, sorted by name: what its keys derive
    /// from ([`crate::workflow::keys::claim_keys`]).
    #[must_use]
    pub fn handler_versions(&self) -> BTreeMap<String, HandlerVersion> {
        self.handlers
            .iter()
            .map(|(name, r)| (name.clone(), r.version.clone()))
            .collect()
    }

    /// Every handler name with its version, sorted by name: what the authority registers.
    #[must_use]
    pub fn versions(&self) -> BTreeMap<String, String> {
        self.handlers
            .iter()
            .map(|(name, r)| (name.clone(), r.version.as_str().to_owned()))
            .collect()
    }
}

/// A workload stamps work for a handler with its own key for it, and knows no key for a
/// handler it does not register.
impl crate::model::HandlerKeys for &Workload {
    fn key_for(&self, handler: &str) -> Option<String> {
        Workload::key_for(self, handler)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authority::handlers::{AttemptContext, AttemptKind, Pace};
    use crate::model::FailureClass;

    fn attempt() -> Attempt {
        Attempt::new(AttemptContext::new(
            "e1",
            AttemptKind::Effect,
            "parse",
            serde_json::json!("not a number"),
            "e1",
            "k1",
            1,
            "a",
            1,
            0,
            Pace::Virtual,
        ))
    }

    /// A handler for each way code can panic: a blocking one, an async one inside its
    /// future, and an async one before it returns its future at all.
    fn panicking() -> Workload {
        let mut w = Workload::new("panics", 0).with("blocking", |a: &AttemptContext| {
            panic!("unparsable payload: {}", a.payload)
        });
        let in_future = |_: Attempt| async {
            let n: u32 = "not a number".parse().expect("unparsable payload");
            HandlerOutcome::Succeeded(Some(n.into()))
        };
        let before_future = |a: Attempt| -> std::future::Ready<HandlerOutcome> {
            panic!("unparsable payload: {}", a.payload)
        };
        let version = HandlerVersion::demo();
        w.register_async("in-future", version.clone(), Arc::new(in_future));
        w.register_async("before-future", version, Arc::new(before_future));
        w
    }

    /// However the handler panics and wherever it runs (the tokio runtime, or the calling
    /// thread as the simulated cluster runs it), the attempt ends as a retryable
    /// `HANDLER_PANICKED` failure carrying the panic's message, cut as every handler's
    /// message is; a panic without a text message says so.
    #[test]
    fn a_panic_is_a_retryable_failure_with_the_panics_message() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let w = panicking();
        let expected = [
            ("blocking", "unparsable payload: \"not a number\""),
            (
                "in-future",
                "unparsable payload: ParseIntError { kind: InvalidDigit }",
            ),
            ("before-future", "unparsable payload: \"not a number\""),
        ];
        for (name, message) in expected {
            let registered = w.get(name).expect("registered");
            for outcome in [
                rt.block_on(registered.call(attempt())),
                registered.run_here(&attempt()),
            ] {
                let failure = outcome.failure().expect("a failure");
                assert_eq!(
                    (
                        failure.class,
                        failure.code.as_str(),
                        failure.message.as_str()
                    ),
                    (FailureClass::Retryable, "HANDLER_PANICKED", message),
                    "{name}"
                );
            }
        }
        let long = Workload::new("long", 0)
            .with("long", |_: &AttemptContext| panic!("{}", "é".repeat(3_000)))
            .with("opaque", |_: &AttemptContext| std::panic::panic_any(42_u32));
        let cut = long.get("long").expect("registered").run_here(&attempt());
        let message = &cut.failure().expect("a failure").message;
        assert_eq!(message.chars().count(), 2_001, "2,000 characters and …");
        assert!(message.ends_with("é…"), "{message}");
        let opaque = long.get("opaque").expect("registered").run_here(&attempt());
        assert_eq!(
            opaque.failure().map(|f| f.message.as_str()),
            Some("the handler panicked with a value that is not text")
        );
    }
}
