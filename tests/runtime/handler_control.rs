//! A handler's fleet-wide controls as authorities meet them: a pause holds its work from
//! every authority's next poll on while the others' work runs, a rate in the
//! authorities' config holds the fleet's polls together to N of its items per window, and
//! a rate on a handler an authority does not run refuses its start.

use leasehold::authority::{
    AttemptContext, Authority, AuthorityConfig, AuthorityCore, HandlerOutcome, Job, Pace, Task,
    Workload,
};
use leasehold::clock::ManualClock;
use leasehold::model::PageRequest;
use leasehold::model::work::NewWork;
use leasehold::rules::handler::HandlerControl;

use crate::support::runtime::{T0, compat, config, store};

fn handlers() -> Workload {
    let ok = |_: &AttemptContext| HandlerOutcome::Succeeded(None);
    Workload::new("controlled", 1)
        .with("api", ok)
        .with("other", ok)
}

fn handler_of(job: &Job) -> &str {
    match &job.task {
        Task::Work(item) => &item.handler,
        Task::Workflow(_) => "workflow",
    }
}

fn enqueue(s: &leasehold::Store, handler: &str, n: usize) {
    let items = (0..n)
        .map(|i| NewWork::effect(format!("{handler}-{i}"), handler, "{}"))
        .collect();
    s.enqueue_batch(items, &compat()).expect("enqueues");
}

/// A paused handler's items are claimed by no poll, the other handler's are; after the
/// resume the next poll claims them.
#[test]
fn a_pause_holds_a_handlers_work_from_the_next_poll() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    enqueue(&s, "api", 3);
    enqueue(&s, "other", 2);
    let cfg = AuthorityConfig {
        worker_concurrency: 10,
        ..config("a")
    };
    let a = AuthorityCore::new(s.clone(), cfg, handlers(), Pace::Virtual).expect("a");
    s.control_handler("api", HandlerControl::Pause, "ops@host", "")
        .expect("pauses");
    let first = a.poll().expect("polls");
    assert!(first.iter().all(|j| handler_of(j) == "other"), "only other");
    assert_eq!(first.len(), 2);
    s.control_handler("api", HandlerControl::Resume, "ops@host", "")
        .expect("resumes");
    let second = a.poll().expect("polls");
    assert_eq!(second.iter().filter(|j| handler_of(j) == "api").count(), 3);
}

/// Two authorities given `api` at 2 per second claim 2 of its items together in a window,
/// however many workers each has free; the next window gives 2 more.
#[test]
fn authorities_share_a_handlers_rate() {
    let window_start = T0 - T0 % 1_000 + 1_000;
    let clock = ManualClock::new(window_start);
    let s = store(&clock);
    enqueue(&s, "api", 10);
    let rate = "2/1s".parse().expect("a rate");
    let core = |id: &str| {
        let cfg = AuthorityConfig {
            worker_concurrency: 10,
            ..config(id).with_handler_rate("api", rate)
        };
        AuthorityCore::new(s.clone(), cfg, handlers(), Pace::Virtual).expect("core")
    };
    let (a, b) = (core("a"), core("b"));
    let claimed = a.poll().expect("polls").len() + b.poll().expect("polls").len();
    assert_eq!(claimed, 2);
    clock.advance(999);
    assert_eq!(
        a.poll().expect("polls").len() + b.poll().expect("polls").len(),
        0
    );
    clock.advance(1);
    assert_eq!(
        b.poll().expect("polls").len() + a.poll().expect("polls").len(),
        2
    );
}

/// A rate given in code on a handler the authority does not run would never apply: the
/// start is refused in one line naming the nearest handler, as it is for a limit or a
/// retry policy on one (and as the config file refuses it), and nothing is registered.
#[tokio::test]
async fn a_rate_on_a_handler_not_run_here_refuses_the_start() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let rate = "1/10s".parse().expect("a rate");
    let err = Authority::builder(s.clone(), config("a").with_handler_rate("apii", rate))
        .handlers(&handlers())
        .start()
        .await
        .expect_err("a rate on no handler");
    assert_eq!(err.code(), "INVALID");
    assert!(
        err.to_string()
            .contains(r#"handlerRates.apii: no handler "apii" runs here (did you mean "api"?)"#),
        "{err}"
    );
    let registered = s.list_authorities(&PageRequest::first(10)).expect("lists");
    assert!(registered.rows.is_empty(), "{:?}", registered.rows);
}
