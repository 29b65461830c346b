//! The keys an authority claims by: one per handler it registers, one per deployed
//! definition it has every action handler for — learnt while it runs — and an instance is
//! claimed only by code whose action versions share their compatibility part with the
//! versions it was started for.

use leasehold::authority::handlers::Workload;
use leasehold::authority::workload;
use leasehold::authority::{AuthorityConfig, AuthorityCore, HandlerOutcome, Pace};
use leasehold::clock::ManualClock;
use leasehold::model::HandlerVersion;
use leasehold::workflow::keys::instance_key;
use leasehold::workflow::{Catalog, SHIPPED_DEFINITIONS, parse_definition};

use crate::support::actions_at_demo;
use crate::support::runtime::{T0, store};

const WORKFLOW: &str = "integration-call";

fn deploy(s: &leasehold::Store) -> leasehold::model::WorkflowDefinitionRow {
    let (_, text) = SHIPPED_DEFINITIONS
        .iter()
        .find(|(name, _)| name.starts_with(WORKFLOW))
        .expect("shipped");
    s.deploy_workflow(text, &Catalog::demo())
        .expect("deploys")
        .expect("valid")
}

fn core(s: &leasehold::Store, id: &str, workload: Workload) -> AuthorityCore {
    AuthorityCore::new(
        s.clone(),
        AuthorityConfig::new(id, "v1"),
        workload,
        Pace::Virtual,
    )
    .expect(id)
}

fn version(text: &str) -> HandlerVersion {
    HandlerVersion::parse(text).expect(text)
}

#[test]
fn a_deployed_definition_adds_its_key_to_authorities_with_its_handlers() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    let full = core(&s, "full", workload::named("fast", 1).expect("fast"));
    let partial = core(
        &s,
        "partial",
        Workload::new("partial", 0).with("send-email", |_: &_| HandlerOutcome::Succeeded(None)),
    );
    full.poll().expect("polls");
    partial.poll().expect("polls");
    let before = full.claim_keys();

    let row = deploy(&s);
    let def = parse_definition(&row.definition).expect("parses");
    let key = instance_key(&def, &row.fingerprint, &full.workload().handler_versions())
        .expect("it has every action handler");
    assert!(!before.contains(&key));
    clock.advance(leasehold::authority::core::KEYS_REFRESH_MS);
    full.poll().expect("polls");
    partial.poll().expect("polls");
    let after = full.claim_keys();
    assert!(after.contains(&key), "the definition's key joins the set");
    assert_eq!(after.len(), before.len() + 1);
    assert!(
        !partial.claim_keys().contains(&key),
        "not for an authority that lacks one of its action handlers"
    );
}

#[test]
fn an_instance_waits_for_code_with_compatible_action_versions() {
    let clock = ManualClock::new(T0);
    let s = store(&clock);
    deploy(&s);
    let args = serde_json::json!({ "partner": "p", "request": { "i": 1 } });
    s.start_workflow(
        WORKFLOW,
        args.as_object().cloned().unwrap_or_default(),
        "test",
        None,
        actions_at_demo(&s, WORKFLOW),
    )
    .expect("starts");
    let fast = || workload::named("fast", 1).expect("fast");
    let major = core(&s, "major", fast().at_version(&version("2.0.0")));
    major.poll().expect("polls");
    assert_eq!(major.stats().workflow_claims, 0, "another major version");
    let minor = core(&s, "minor", fast().at_version(&version("1.4.0")));
    minor.poll().expect("polls");
    assert_eq!(minor.stats().workflow_claims, 1, "a minor release runs it");
}
