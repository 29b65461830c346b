//! `leasehold replay` against the store's own history: on a store where a stalled owner's
//! claims were reclaimed and its late completions refused, the window's counts equal the
//! history's records, and a resource read at the failover's revision has the new owner
//! while the revision before it has the old one.

use leasehold::Store;
use leasehold::clock::SystemClock;
use leasehold::ids::SeededIds;
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
use serde_json::Value;
use std::sync::Arc;

use super::{assert_one_line_failure, busy_store, json_lines, leasehold, stdout};

/// Every record the store holds: a window from 2001 to 2286.
const ALL: [&str; 4] = ["--from", "1000000000000", "--to", "9999999999999"];

#[test]
fn replay_agrees_with_the_history_and_shows_owners_across_a_failover() {
    let dir = tempfile::tempdir().unwrap();
    let store = busy_store(dir.path());
    let history = Store::new(
        Arc::new(SqliteBackend::open(&store, OpenMode::ReadOnly).unwrap()),
        Arc::new(SystemClock),
        Arc::new(SeededIds::new(1)),
    );
    let (grants, writes) = history.ownership_history(None, 0, 1_000_000).unwrap();
    let failovers: Vec<_> = grants.iter().filter(|g| g.took_over.is_some()).collect();
    let refused = writes.iter().filter(|w| !w.accepted).count();
    assert!(
        !failovers.is_empty() && refused > 0,
        "the store has a failover"
    );

    let mut args = vec!["replay", "--store", &store, "--json"];
    args.extend_from_slice(&ALL);
    let lines = json_lines(&leasehold(&args));
    let summary = &lines[0]["summary"];
    assert_eq!(summary["failovers"], failovers.len());
    assert_eq!(summary["fencedWrites"], refused);
    assert_eq!(summary["grants"], grants.len());
    assert_eq!(summary["writes"], writes.len());
    assert_eq!(summary["records"], grants.len() + writes.len());

    // One resource across its failover.
    let f = failovers[0];
    let at = |revision: u64| -> Value {
        let revision = revision.to_string();
        let mut args = vec![
            "replay",
            "--store",
            &store,
            "--json",
            "--resource",
            &f.resource_id,
            "--at",
            &revision,
        ];
        args.extend_from_slice(&ALL);
        json_lines(&leasehold(&args)).remove(0)["resource"].clone()
    };
    let after = at(f.revision);
    assert_eq!(after["owner"], f.owner_id.as_str());
    assert_eq!(after["generation"], f.generation);
    let before = at(f.revision - 1);
    let from = f.took_over.as_ref().unwrap();
    assert_eq!(before["owner"], from.from_owner.as_str());
    assert_eq!(before["generation"], from.from_generation);

    // The people's view: the headline, the failover table, every step with --steps.
    let mut args = vec!["replay", "--store", &store, "--steps"];
    args.extend_from_slice(&ALL);
    let text = stdout(&leasehold(&args));
    assert!(
        text.contains(&format!("failovers {}", failovers.len())),
        "{text}"
    );
    assert!(
        text.contains("FAILOVERS") && text.contains("BY OWNER"),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "took over {} gen {}",
            from.from_owner, from.from_generation
        )),
        "{text}"
    );
    assert!(text.contains("REFUSED WORK_FENCED"), "{text}");
}

#[test]
fn replay_refuses_what_it_cannot_read_in_one_line() {
    let dir = tempfile::tempdir().unwrap();
    let store = busy_store(dir.path());
    for (args, needle) in [
        (vec!["--from", "yesterday"], "cannot read the instant"),
        (vec!["--from", "now", "--to", "1h"], "ends before it starts"),
        (vec!["--resource", "no-such-thing"], "NOT_FOUND"),
    ] {
        let mut all = vec!["replay", "--store", &store];
        all.extend_from_slice(&args);
        let o = leasehold(&all);
        let err = assert_one_line_failure(&o, 2);
        assert!(err.contains(needle), "{args:?}: {err}");
    }
}
