//! Which running build claims which work, with real `leasehold authority` processes: the
//! `--build` tag is a label, the handlers' semantic versions decide. Another tag with the
//! same versions (or a minor release) runs the old build's items; a major bump leaves
//! them, visible as stranded, and one-shot producers follow the versions the running
//! authorities register.

use std::time::Duration;

use leasehold::Store;
use leasehold::model::HandlerVersion;
use leasehold::model::handler_key;
use leasehold::model::work::NewWork;
use leasehold::store::url::{self, OpenMode};
use serde_json::Value;

use super::{code, leasehold, stderr, stdout};
use crate::support::authorities::{Authorities, HANDLER, compat, signal, unfinished};
use crate::support::wait::{wait_until, within};

const RUNNING: Duration = Duration::from_secs(60);

/// Enqueues `n` items of [`HANDLER`] at the built-in version, ids `{prefix}-{i}`.
fn enqueue_at_builtin(store: &Store, prefix: &str, n: usize) -> Vec<String> {
    let ids: Vec<String> = (0..n).map(|i| format!("{prefix}-{i:02}")).collect();
    for id in &ids {
        store
            .enqueue(NewWork::effect(id, HANDLER, "{}"), compat().as_str())
            .unwrap();
    }
    ids
}

/// Who claimed each of `ids`, from the grant history.
fn claimers(store: &Store, ids: &[String]) -> Vec<String> {
    let (grants, _) = store.ownership_history(None, 0, 100_000).unwrap();
    let mut owners: Vec<String> = grants
        .into_iter()
        .filter(|g| ids.contains(&g.resource_id))
        .map(|g| g.owner_id)
        .collect();
    owners.sort();
    owners.dedup();
    owners
}

/// `inspect triage`'s count for `reason`.
fn triage_count(path: &str, reason: &str) -> u64 {
    let o = leasehold(&["inspect", "triage", "--store", path, "--json"]);
    stdout(&o)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|g| g["reason"] == reason)
        .and_then(|g| g["count"].as_u64())
        .unwrap_or(0)
}

/// `leasehold work enqueue` of an effect for [`HANDLER`], without `--handler-version`.
fn enqueue_cli(path: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec![
        "work",
        "enqueue",
        "--store",
        path,
        "--handler",
        HANDLER,
        "--payload",
        "{}",
    ];
    args.extend_from_slice(extra);
    leasehold(&args)
}

fn stop(procs: &mut Authorities, name: &str) {
    signal("-TERM", procs.pid(name));
    assert!(procs.wait_exit(name, within(RUNNING)).success(), "{name}");
}

#[test]
fn a_new_tag_runs_the_old_work_a_major_bump_leaves_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = format!("sqlite:{}", dir.path().join("store.db").display());
    let store = url::open(&path, OpenMode::ReadWrite).unwrap();
    let old = enqueue_at_builtin(&store, "v1", 8);
    let mut procs = Authorities::new();

    // Every handler at 2.0.0: other code. The old items stay pending, counted stranded.
    procs.spawn_with(
        "major",
        &path,
        1_500,
        &["--build", "v3", "--handler-version", "2.0.0"],
    );
    wait_until("the old items counted stranded", within(RUNNING), || {
        triage_count(&path, "incompatible") == 8
    });
    // The matrix says the same: the old key's effects run by nobody, the running build
    // named with its versions.
    let o = leasehold(&["inspect", "builds", "--store", &path, "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let cells: Vec<Value> = stdout(&o)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let old_cell = cells
        .iter()
        .find(|c| c["compat"] == compat().as_str())
        .expect("the old key has a row");
    assert_eq!(
        (
            &old_cell["kind"],
            &old_cell["handler"],
            &old_cell["unfinished"],
            &old_cell["runnableBy"]
        ),
        (
            &Value::from("effect"),
            &Value::from(HANDLER),
            &Value::from(8),
            &Value::Array(vec![])
        )
    );
    let text = stdout(&leasehold(&["inspect", "builds", "--store", &path]));
    assert!(
        text.contains("stranded (no running build runs it): 8"),
        "{text}"
    );
    assert!(
        text.contains("stopping v3 · ") && text.contains("(major)"),
        "{text}"
    );
    // A producer without --handler-version stamps the version the running authority has.
    let o = enqueue_cli(&path, &["--id", "fresh"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let two = HandlerVersion::parse("2.0.0").unwrap();
    let fresh = store.work("fresh").unwrap().expect("enqueued");
    assert_eq!(fresh.compat, handler_key(HANDLER, &two));

    // Another tag, the same versions: it runs the old build's items.
    procs.spawn_with("same", &path, 1_500, &["--build", "v2"]);
    wait_until("the old items done", within(RUNNING), || {
        unfinished(&store) == 0
    });
    assert_eq!(claimers(&store, &old), ["same"]);
    // Running authorities disagree on the handler's major version: the producer asks.
    let o = enqueue_cli(&path, &[]);
    assert_eq!(code(&o), 2, "{}", stdout(&o));
    assert_eq!(stderr(&o).lines().count(), 1, "{}", stderr(&o));
    assert!(stderr(&o).contains("--handler-version"), "{}", stderr(&o));
    stop(&mut procs, "same");

    // A minor release of the handlers runs them too.
    let later = enqueue_at_builtin(&store, "v1-later", 4);
    procs.spawn_with(
        "minor",
        &path,
        1_500,
        &["--build", "v1.3", "--handler-version", "1.3.0"],
    );
    wait_until("the later items done", within(RUNNING), || {
        unfinished(&store) == 0
    });
    assert_eq!(claimers(&store, &later), ["minor"]);
    assert_eq!(claimers(&store, &["fresh".to_owned()]), ["major"]);
    procs.stop_all(within(RUNNING));
}
