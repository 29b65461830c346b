//! The portable conformance tier (docs/ARCHITECTURE.md#workflows): each JSON file in
//! `tests/fixtures/workflows/` is a definition, start arguments, a principal, a
//! deterministic driver script and the required ordered logical history and terminal
//! state. The runner below interprets the script against a store (memory or SQLite) with a
//! manual clock; physical attempts may differ between providers, the logical history must
//! match exactly.
//!
//! Script steps (each a one-key object):
//! - `{"advance": ms}` — move the manual clock;
//! - `{"actionOutcome": {"action": A, "ok": v}}` / `{"actionOutcome": {"action": A, "fail":
//!   {"retryable": b, "code": c}}}` — queue what the next invocation of handler `A` returns
//!   (a handler called with nothing queued fails the test, and every queued outcome must be
//!   consumed by the end);
//! - `{"claim": auth}` — authority `auth` takes the leases of every runnable instance and
//!   holds them (the next `run` of `auth` advances them first, from what it read now);
//! - `{"run": auth}` — advance held claims, then claim + advance until nothing is runnable;
//! - `{"crashAfterOutcome": auth | true}` — claim, run the due actions and record their
//!   outcomes, then drop the claims without a transition (a crash between the action
//!   commit and the transition record);
//! - `{"event": {"type", "source", "id", "payload", "dedup"?}}` — ingest (expects
//!   `accepted` unless `dedup` says otherwise);
//! - `{"cancel": {"by", "reason", "instance"?, "compat"?}}`;
//! - `{"start": {"as", "principal", "idempotencyKey"?, "args"?, "sameAs"?}}` — another start;
//!   `sameAs` names the alias it must resolve to, absent means a new instance;
//! - `{"incompatibleAuthority": compat}` — an authority of another build tries to claim,
//!   cancel and (with a lease it took directly) advance every instance; it must change
//!   nothing: same row and `instanceRevision`, no history, no outcome record, no handler
//!   call.
//!
//! Every refusal the script meets is recorded as `"<verb>:<CODE>"` and compared with
//! `expect.refusals` (default: none).

use std::collections::{BTreeMap, HashMap, VecDeque};

use leasehold::clock::ManualClock;
use leasehold::model::event::NewEvent;
use leasehold::store::Keyed;
use leasehold::workflow::engine::{Claimed, Engine, Next, decode_state};
use leasehold::workflow::machine::{ActionRequest, Failure};
use leasehold::{Error, Store};
use serde::Deserialize;
use serde_json::Value;

use crate::definitions::{args, deploy, history};
use crate::support::Harness;

const DEFAULT_COMPAT: &str = "build-a";
const DEFAULT_LEASE_MS: i64 = 30_000;
const MAIN: &str = "main";

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Fixture {
    description: String,
    /// The seed rule this fixture pins (reported, not interpreted).
    rule: String,
    definition: Value,
    #[serde(default)]
    compat: Option<String>,
    #[serde(default)]
    lease_ms: Option<i64>,
    args: Value,
    principal: String,
    #[serde(default)]
    idempotency_key: Option<String>,
    script: Vec<Step>,
    expect: Expect,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
enum Step {
    Advance(i64),
    Run(String),
    Claim(String),
    ActionOutcome(OutcomeSpec),
    Event(EventSpec),
    Cancel(CancelSpec),
    CrashAfterOutcome(Value),
    IncompatibleAuthority(String),
    Start(StartSpec),
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct OutcomeSpec {
    action: String,
    #[serde(default)]
    ok: Option<Value>,
    #[serde(default)]
    fail: Option<FailSpec>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct FailSpec {
    retryable: bool,
    code: String,
    #[serde(default)]
    message: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct EventSpec {
    #[serde(rename = "type")]
    event_type: String,
    #[serde(default)]
    source: Option<String>,
    #[serde(default)]
    id: Option<String>,
    payload: Value,
    #[serde(default)]
    dedup: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct CancelSpec {
    by: String,
    reason: String,
    #[serde(default)]
    instance: Option<String>,
    #[serde(default)]
    compat: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct StartSpec {
    #[serde(rename = "as")]
    alias: String,
    principal: String,
    #[serde(default)]
    idempotency_key: Option<String>,
    #[serde(default)]
    args: Option<Value>,
    #[serde(default)]
    same_as: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Expect {
    instances: BTreeMap<String, InstanceExpect>,
    #[serde(default)]
    handler_calls: Option<BTreeMap<String, u32>>,
    #[serde(default)]
    refusals: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct InstanceExpect {
    history: Vec<String>,
    status: String,
    #[serde(default)]
    output: Option<Value>,
    #[serde(default)]
    failure_code: Option<String>,
    #[serde(default)]
    instance_revision: Option<u64>,
    #[serde(default)]
    waiting_reason: Option<String>,
}

/// Everything observable about one instance, for the "touches nothing" comparisons.
#[derive(Debug, PartialEq)]
struct Snapshot {
    row: leasehold::model::InstanceRow,
    history: Vec<leasehold::model::HistoryRecord>,
    outcome: Option<leasehold::model::workflow::ActionOutcome>,
}

struct Runner {
    store: Store,
    clock: ManualClock,
    workflow_id: String,
    compat: String,
    lease_ms: i64,
    engines: HashMap<String, Engine>,
    held: HashMap<String, Vec<Claimed>>,
    outcomes: HashMap<String, VecDeque<Result<Value, Failure>>>,
    calls: BTreeMap<String, u32>,
    aliases: BTreeMap<String, String>,
    refusals: Vec<String>,
}

/// The scripted handler: pops the next queued outcome of `request.action`.
fn handle(
    outcomes: &mut HashMap<String, VecDeque<Result<Value, Failure>>>,
    calls: &mut BTreeMap<String, u32>,
    request: &ActionRequest,
) -> Result<Value, Failure> {
    *calls.entry(request.action.clone()).or_default() += 1;
    outcomes
        .get_mut(&request.action)
        .and_then(VecDeque::pop_front)
        .unwrap_or_else(|| {
            panic!(
                "the script queued no outcome for `{}` (invocation {}, attempt {})",
                request.action, request.invocation_id, request.attempt
            )
        })
}

impl Runner {
    fn engine(&mut self, name: &str) -> Engine {
        let (store, compat) = (self.store.clone(), self.compat.clone());
        self.engines
            .entry(name.to_string())
            .or_insert_with(|| Engine::new(store, name, &compat))
            .clone()
    }

    fn refuse(&mut self, verb: &str, e: &Error) {
        assert!(!e.is_store_failure(), "{verb}: store failure {e}");
        self.refusals.push(format!("{verb}:{}", e.code()));
    }

    fn advance_one(&mut self, engine: &Engine, claimed: &Claimed) {
        let (outcomes, calls) = (&mut self.outcomes, &mut self.calls);
        let result = engine.advance(claimed, |req| handle(outcomes, calls, req));
        if let Err(e) = result {
            self.refuse("advance", &e);
        }
    }

    fn run(&mut self, name: &str) {
        let engine = self.engine(name);
        for claimed in self.held.remove(name).unwrap_or_default() {
            self.advance_one(&engine, &claimed);
        }
        for _ in 0..100 {
            let claimed = engine.claim(100, self.lease_ms).expect("claim");
            if claimed.is_empty() {
                return;
            }
            for c in &claimed {
                self.advance_one(&engine, c);
            }
        }
        panic!("authority {name} never ran out of runnable instances");
    }

    fn claim(&mut self, name: &str) {
        let engine = self.engine(name);
        let claimed = engine.claim(100, self.lease_ms).expect("claim");
        assert!(!claimed.is_empty(), "claim by {name}: nothing was runnable");
        self.held
            .entry(name.to_string())
            .or_default()
            .extend(claimed);
    }

    fn crash_after_outcome(&mut self, name: &str) {
        let engine = self.engine(name);
        let claimed = engine.claim(100, self.lease_ms).expect("claim");
        let mut recorded = 0;
        for c in &claimed {
            match engine.next(c).expect("next") {
                Next::Run(request) => {
                    let outcome = handle(&mut self.outcomes, &mut self.calls, &request);
                    engine
                        .record_outcome(c, &request, &outcome)
                        .expect("record outcome");
                    recorded += 1;
                    // The process dies here: no transition, no release.
                }
                _ => engine.release(c).expect("release"),
            }
        }
        assert!(
            recorded > 0,
            "crashAfterOutcome by {name}: no action was due"
        );
    }

    fn snapshot(&self, id: &str) -> Snapshot {
        let store = &self.store;
        let row = store.instance(id).expect("instance").expect("exists");
        let (_, state) = decode_state(&row).expect("state");
        let outcome = match &state.waiting {
            Some(leasehold::workflow::Waiting::Action { invocation_id }) => {
                store.action_outcome(invocation_id).expect("outcome")
            }
            _ => None,
        };
        Snapshot {
            history: store.workflow_history(id).expect("history"),
            row,
            outcome,
        }
    }

    /// Another build tries everything; nothing may change.
    fn incompatible(&mut self, compat: &str) {
        assert_ne!(compat, self.compat, "the incompatible build must differ");
        let store = self.store.clone();
        let ids: Vec<String> = self.aliases.values().cloned().collect();
        let before: Vec<Snapshot> = ids.iter().map(|id| self.snapshot(id)).collect();
        let calls_before = self.calls.clone();
        let owner = format!("authority-{compat}");
        let engine = Engine::new(store.clone(), &owner, compat);

        let claimed = engine.claim(100, self.lease_ms).expect("claim");
        assert!(
            claimed.is_empty(),
            "an incompatible build claimed {} instance(s)",
            claimed.len()
        );
        for id in &ids {
            let e = store
                .cancel_workflow(id, Some(&compat.into()), "ops", "from another build")
                .expect_err("an incompatible cancel must be refused");
            assert_eq!(e.code(), "INCOMPATIBLE_AUTHORITY", "{e}");
        }
        // Even holding the instance lease (taken directly through the lease API), the
        // other build must invoke nothing and record nothing.
        for id in &ids {
            let resource = leasehold::workflow::engine::instance_resource(id);
            let row = store.instance(id).expect("instance").expect("exists");
            if matches!(row.status.as_str(), "completed" | "failed" | "cancelled") {
                continue;
            }
            let Ok(lease) =
                store.acquire(&resource, &owner, self.lease_ms as f64, Keyed { key: None })
            else {
                continue;
            };
            let (_, state) = decode_state(&row).expect("state");
            let claimed = Claimed {
                row,
                state,
                lease: lease.clone(),
            };
            let mut invoked = Vec::new();
            let result = engine.advance(&claimed, |req| {
                invoked.push(req.invocation_id.clone());
                Err(Failure {
                    code: "NOT_HERE".into(),
                    message: "an incompatible build ran an action".into(),
                    retryable: true,
                })
            });
            assert!(
                invoked.is_empty(),
                "an incompatible build invoked the action handler for {invoked:?}"
            );
            let e = result.expect_err("an incompatible advance must be refused");
            assert_eq!(e.code(), "INCOMPATIBLE_AUTHORITY", "{e}");
            store
                .release(
                    &resource,
                    &owner,
                    &lease.token,
                    lease.generation,
                    Keyed { key: None },
                )
                .expect("release the borrowed lease");
        }
        let after: Vec<Snapshot> = ids.iter().map(|id| self.snapshot(id)).collect();
        assert_eq!(
            before, after,
            "an incompatible build changed an instance (row, revision, history or outcome)"
        );
        assert_eq!(
            calls_before, self.calls,
            "an incompatible build invoked an action handler"
        );
    }

    fn start(&mut self, spec: StartSpec) {
        let args = args(spec.args.unwrap_or(Value::Null));
        let started = self
            .store
            .start_workflow(
                &self.workflow_id,
                args,
                &spec.principal,
                spec.idempotency_key.as_deref(),
                &self.compat,
            )
            .expect("start");
        match &spec.same_as {
            Some(target) => {
                let id = &self.aliases[target];
                assert_eq!(
                    &started.instance_id, id,
                    "start `{}` must resolve to `{target}`",
                    spec.alias
                );
                assert!(!started.created, "an idempotent start created an instance");
            }
            None => {
                assert!(started.created, "start `{}` must create", spec.alias);
                assert!(
                    !self.aliases.values().any(|id| id == &started.instance_id),
                    "start `{}` must be a new instance",
                    spec.alias
                );
            }
        }
        if spec.same_as.is_none() {
            self.aliases.insert(spec.alias, started.instance_id);
        }
    }

    fn step(&mut self, step: Step) {
        match step {
            Step::Advance(ms) => {
                assert!(ms >= 0, "time only moves forward in a fixture");
                self.clock.advance(ms);
            }
            Step::Run(name) => self.run(&name),
            Step::Claim(name) => self.claim(&name),
            Step::ActionOutcome(spec) => {
                let outcome = match (spec.ok, spec.fail) {
                    (Some(v), None) => Ok(v),
                    (None, Some(f)) => Err(Failure {
                        message: f
                            .message
                            .unwrap_or_else(|| format!("{} failed", spec.action)),
                        code: f.code,
                        retryable: f.retryable,
                    }),
                    _ => panic!("actionOutcome needs exactly one of ok / fail"),
                };
                self.outcomes
                    .entry(spec.action)
                    .or_default()
                    .push_back(outcome);
            }
            Step::Event(spec) => {
                let ingested = self
                    .store
                    .ingest(&NewEvent {
                        event_type: spec.event_type,
                        source: spec.source,
                        external_id: spec.id,
                        payload: spec.payload,
                    })
                    .expect("ingest");
                let want = spec.dedup.as_deref().unwrap_or("accepted");
                assert_eq!(ingested.outcome.as_str(), want, "event dedup outcome");
            }
            Step::Cancel(spec) => {
                let alias = spec.instance.as_deref().unwrap_or(MAIN);
                let id = self.aliases[alias].clone();
                let compat = spec.compat.unwrap_or_else(|| self.compat.clone());
                if let Err(e) =
                    self.store
                        .cancel_workflow(&id, Some(&(&compat).into()), &spec.by, &spec.reason)
                {
                    self.refuse("cancel", &e);
                }
            }
            Step::CrashAfterOutcome(who) => {
                let name = match who {
                    Value::Bool(true) => "crashing-authority".to_string(),
                    Value::String(s) => s,
                    other => panic!("crashAfterOutcome takes true or an authority, got {other}"),
                };
                self.crash_after_outcome(&name);
            }
            Step::IncompatibleAuthority(compat) => self.incompatible(&compat),
            Step::Start(spec) => self.start(spec),
        }
    }
}

fn load(file: &str) -> Fixture {
    let path = format!(
        "{}/tests/fixtures/workflows/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Runs one fixture file on one provider and checks the required logical history.
pub fn run_fixture(file: &str, h: &dyn Harness) {
    let fixture = load(file);
    assert!(!fixture.description.is_empty() && !fixture.rule.is_empty());
    let store = h.store();
    let workflow_id = deploy(&store, &fixture.definition);
    let compat = fixture
        .compat
        .clone()
        .unwrap_or_else(|| DEFAULT_COMPAT.into());
    let started = store
        .start_workflow(
            &workflow_id,
            args(fixture.args.clone()),
            &fixture.principal,
            fixture.idempotency_key.as_deref(),
            &compat,
        )
        .expect("start");
    let mut runner = Runner {
        store,
        clock: h.clock().clone(),
        workflow_id,
        compat,
        lease_ms: fixture.lease_ms.unwrap_or(DEFAULT_LEASE_MS),
        engines: HashMap::new(),
        held: HashMap::new(),
        outcomes: HashMap::new(),
        calls: BTreeMap::new(),
        aliases: BTreeMap::from([(MAIN.to_string(), started.instance_id)]),
        refusals: Vec::new(),
    };
    for step in fixture.script {
        runner.step(step);
    }

    let unused: Vec<_> = runner
        .outcomes
        .iter()
        .filter(|(_, q)| !q.is_empty())
        .map(|(a, q)| format!("{a} x{}", q.len()))
        .collect();
    assert!(
        unused.is_empty(),
        "scripted outcomes never consumed: {unused:?}"
    );
    assert_eq!(runner.refusals, fixture.expect.refusals, "refusals");
    if let Some(calls) = &fixture.expect.handler_calls {
        assert_eq!(&runner.calls, calls, "handler calls");
    }
    assert_eq!(
        runner.aliases.keys().collect::<Vec<_>>(),
        fixture.expect.instances.keys().collect::<Vec<_>>(),
        "the fixture must state the outcome of every instance it started"
    );
    for (alias, want) in &fixture.expect.instances {
        let id = &runner.aliases[alias];
        let store = &runner.store;
        let got = history(store, id);
        assert_eq!(got, want.history, "logical history of `{alias}`");
        let row = store.instance(id).expect("instance").expect("exists");
        assert_eq!(row.status, want.status, "status of `{alias}`");
        let (_, state) = decode_state(&row).expect("state");
        if let Some(output) = &want.output {
            assert_eq!(state.output.as_ref(), Some(output), "output of `{alias}`");
        }
        if want.status == "completed" {
            assert!(state.failure.is_none());
        }
        match &want.failure_code {
            Some(code) => assert_eq!(
                state.failure.as_ref().map(|f| f.code.as_str()),
                Some(code.as_str()),
                "failure code of `{alias}`"
            ),
            None => assert!(
                want.status != "failed",
                "a failed instance needs expect.failureCode"
            ),
        }
        if let Some(rev) = want.instance_revision {
            assert_eq!(row.instance_revision, rev, "instanceRevision of `{alias}`");
        }
        if let Some(reason) = &want.waiting_reason {
            assert_eq!(
                state.waiting_reason().as_deref(),
                Some(reason.as_str()),
                "waitingReason of `{alias}`"
            );
        }
        check_history_shape(store, id);
    }
}

/// Structural invariants every logical history satisfies, whatever the script: one
/// `started` first, positions 1..n, revisions never decreasing, the last revision equal to
/// the instance's, nothing after a terminal entry, one `step-succeeded` per activation.
pub fn check_history_shape(store: &leasehold::Store, id: &str) {
    let records = store.workflow_history(id).expect("history");
    let row = store.instance(id).expect("instance").expect("exists");
    assert_eq!(records.first().map(|r| r.kind.as_str()), Some("started"));
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.position, i as u64 + 1, "history positions are dense");
        if i > 0 {
            assert!(r.instance_revision >= records[i - 1].instance_revision);
            assert_ne!(r.kind, "started", "one started");
        }
    }
    assert_eq!(
        records.last().map(|r| r.instance_revision),
        Some(row.instance_revision),
        "the last history entry was written by the current revision"
    );
    let terminal = ["completed", "failed", "cancelled"];
    if let Some(end) = records
        .iter()
        .position(|r| terminal.contains(&r.kind.as_str()))
    {
        assert_eq!(end + 1, records.len(), "nothing after a terminal entry");
    }
    let mut succeeded = std::collections::BTreeSet::new();
    for r in records.iter().filter(|r| r.kind == "step-succeeded") {
        assert!(
            succeeded.insert(r.activation_id.clone()),
            "two step-succeeded for activation {:?}",
            r.activation_id
        );
    }
}

/// Every fixture file on disk is listed in the runner (no fixture is silently skipped).
pub fn all_files_listed(listed: &[&str]) {
    let dir = format!("{}/tests/fixtures/workflows", env!("CARGO_MANIFEST_DIR"));
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .expect("fixture dir")
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| {
            std::path::Path::new(n)
                .extension()
                .is_some_and(|x| x.eq_ignore_ascii_case("json"))
        })
        .collect();
    on_disk.sort();
    let mut listed: Vec<String> = listed.iter().map(|s| (*s).to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "fixture files vs the runner's list");
    assert!(listed.len() >= 12, "at least twelve conformance fixtures");
}
