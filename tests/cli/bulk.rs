//! `leasehold work requeue|discard|retry-now --filter`: a preview that changes nothing
//! (the store's bytes stay the same), a refusal above the confirmation threshold without
//! `--yes`, one audit entry per changed item plus one for the run, a run killed half way
//! that leaves its audit entry and that a re-run finishes, counting what it did as done
//! before and doing nothing twice, and `retry-now` on one item.

use std::collections::BTreeMap;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use leasehold::Store;
use leasehold::clock::{Clock, ManualClock, SystemClock};
use leasehold::ids::SeededIds;
use leasehold::model::work::{NewWork, WorkFilter};
use leasehold::model::{Failure, FailureClass, PageRequest, WorkState};
use leasehold::store::Completion;
use leasehold::store::sqlite::SqliteBackend;
use leasehold::store::url::OpenMode;
use serde_json::Value;

use super::refusals::{listing, sha256};
use super::support::wait::{wait_until, within};
use super::{code, leasehold, stderr, stdout};

struct Planted {
    dir: tempfile::TempDir,
    path: String,
}

impl Planted {
    fn store(&self) -> Store {
        Store::new(
            Arc::new(SqliteBackend::open(&self.path, OpenMode::Existing).unwrap()),
            Arc::new(SystemClock),
            Arc::new(SeededIds::new(5)),
        )
    }

    fn count(&self, state: WorkState) -> usize {
        let filter = WorkFilter {
            states: vec![state],
            ..WorkFilter::default()
        };
        let mut n = 0;
        let mut page = PageRequest::first(5_000);
        loop {
            let rows = self.store().list_work(&filter, &page).unwrap();
            n += rows.rows.len();
            match rows.next {
                Some(next) => page = PageRequest::after(next, 5_000),
                None => return n,
            }
        }
    }

    /// Audit entries by action, and for `requeue-work` how often each item was requeued.
    fn audit(&self) -> (BTreeMap<String, usize>, BTreeMap<String, usize>) {
        let (mut by_action, mut requeued) = (BTreeMap::new(), BTreeMap::new());
        let mut page = PageRequest::first(5_000);
        loop {
            let rows = self.store().list_audit(&page).unwrap();
            for a in &rows.rows {
                *by_action.entry(a.action.clone()).or_insert(0) += 1;
                if a.action == "requeue-work" && a.outcome.starts_with("requeued") {
                    *requeued.entry(a.target.clone()).or_insert(0) += 1;
                }
            }
            match rows.next {
                Some(next) => page = PageRequest::after(next, 5_000),
                None => return (by_action, requeued),
            }
        }
    }

    /// The outcomes of the bulk requeue runs' audit entries, oldest first.
    fn bulk_entries(&self) -> Vec<String> {
        let mut entries = Vec::new();
        let mut page = PageRequest::first(5_000);
        loop {
            let rows = self.store().list_audit(&page).unwrap();
            entries.extend(
                rows.rows
                    .into_iter()
                    .filter(|a| a.action == "bulk-requeue-work")
                    .map(|a| a.outcome),
            );
            match rows.next {
                Some(next) => page = PageRequest::after(next, 5_000),
                None => return entries,
            }
        }
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        let mut all = vec!["work", args[0], "--store", &self.path];
        all.extend(&args[1..]);
        leasehold(&all)
    }
}

/// `failed` items `f-00000…` (terminal failures), one succeeded and one waiting item, made
/// an hour in the past through the library.
fn plant(failed: usize) -> Planted {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db").display().to_string();
    let clock = ManualClock::new(SystemClock.now() - 3_600_000);
    let store = Store::new(
        Arc::new(SqliteBackend::open(&path, OpenMode::ReadWrite).unwrap()),
        Arc::new(clock),
        Arc::new(SeededIds::new(9)),
    );
    let specs: Vec<NewWork> = (0..failed)
        .map(|i| NewWork::effect(format!("f-{i:05}"), "send-email", "{}"))
        .chain([NewWork::effect("ok", "send-email", "{}")])
        .collect();
    store.enqueue_batch(specs, "k").unwrap();
    let claimed = store
        .claim_batch("auth-a", "k", failed + 1, 60_000)
        .unwrap();
    let completions: Vec<Completion> = claimed
        .iter()
        .map(|w| Completion {
            id: w.id.clone(),
            owner: "auth-a".into(),
            generation: w.generation,
            retry: leasehold::rules::retry::Retry::default(),
            outcome: if w.id == "ok" {
                Ok(None)
            } else {
                Err(Failure {
                    class: FailureClass::Terminal,
                    code: "BOUNCED".into(),
                    message: "mailbox full".into(),
                })
            },
        })
        .collect();
    store.complete_batch(&completions).unwrap();
    let waiting = NewWork {
        not_before: Some(SystemClock.now() + 86_400_000),
        ..NewWork::effect("waiting", "send-email", "{}")
    };
    store.enqueue(waiting, "k").unwrap();
    Planted { dir, path }
}

fn answer(o: &std::process::Output) -> Value {
    serde_json::from_str(stdout(o).trim()).unwrap_or(Value::Null)
}

#[test]
fn a_filter_is_previewed_confirmed_and_applied_once() {
    let s = plant(150);
    let sums = || {
        listing(s.dir.path())
            .into_iter()
            .map(|name| {
                let p = s.dir.path().join(&name);
                (name, sha256(&p))
            })
            .collect::<Vec<_>>()
    };
    let before = sums();
    let dry = s.run(&["requeue", "--filter", "state:failed", "--dry-run", "--json"]);
    assert_eq!(code(&dry), 0, "{}", stderr(&dry));
    let preview = answer(&dry);
    assert_eq!(preview["matched"], 150);
    assert_eq!(preview["first"][0], "f-00000");
    assert_eq!(preview["done"], 0);
    assert_eq!(sums(), before, "a dry run changes no byte of the store");

    let unconfirmed = s.run(&["requeue", "--filter", "state:failed"]);
    assert_eq!(code(&unconfirmed), 1);
    assert!(
        stderr(&unconfirmed).starts_with(
            "leasehold: CONFIRMATION_REQUIRED: 150 items match state:failed; add --yes"
        ),
        "{}",
        stderr(&unconfirmed)
    );
    assert_eq!(stderr(&unconfirmed).lines().count(), 1);
    assert_eq!(s.count(WorkState::Failed), 150, "nothing changed");

    let o = s.run(&[
        "requeue",
        "--filter",
        "state:failed",
        "--yes",
        "--reason",
        "mailbox fixed",
        "--json",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let done = answer(&o);
    assert_eq!(
        (done["matched"].clone(), done["done"].clone()),
        (150.into(), 150.into())
    );
    assert_eq!(s.count(WorkState::Failed), 0);
    let (by_action, requeued) = s.audit();
    assert_eq!(by_action.get("requeue-work"), Some(&150));
    assert_eq!(by_action.get("bulk-requeue-work"), Some(&1));
    assert!(requeued.values().all(|n| *n == 1));

    // A filter that takes in finished and running items refuses them, one line each.
    let mixed = s.run(&["retry-now", "--filter", "kind:effect", "--yes"]);
    assert_eq!(code(&mixed), 1, "{}", stdout(&mixed));
    assert!(stdout(&mixed).contains("refused ok: refused: succeeded — nothing to retry"));
    assert_eq!(
        s.run(&["requeue", "--filter", "state:failed", "--yes"])
            .status
            .code(),
        Some(0)
    );
    assert_eq!(
        s.audit().0.get("requeue-work"),
        Some(&150),
        "a re-run writes nothing"
    );

    let bad = s.run(&["discard", "--filter", "colour:red", "--reason", "x"]);
    assert_eq!(code(&bad), 2);
    assert!(stderr(&bad).contains("colour"), "{}", stderr(&bad));
    let both = s.run(&["requeue", "f-00001", "--filter", "state:failed"]);
    assert_eq!(code(&both), 2);
}

/// A requeue over `id:f-` killed with SIGKILL half way — while its second page is still
/// uncommitted (held there by a trigger), its first committed — leaves an audit entry with
/// its count so far. Some of what it requeued then runs and succeeds; the re-run counts
/// all of it `done before` (not refused), finishes the rest and exits 0, and a third run
/// finds nothing left; no item is requeued twice.
#[test]
fn a_bulk_run_killed_half_way_is_finished_by_a_re_run_that_counts_what_it_did() {
    let s = plant(12_000);
    let stall = rusqlite::Connection::open(&s.path).unwrap();
    stall.execute_batch(STALL_AFTER_THE_FIRST_PAGE).unwrap();
    let mut child = Killed(
        Command::new(env!("CARGO_BIN_EXE_leasehold"))
            .args([
                "work",
                "requeue",
                "--store",
                &s.path,
                "--filter",
                "id:f-",
                "--yes",
                "--reason",
                "mailbox fixed",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    wait_until(
        "the run's first page committed",
        within(Duration::from_secs(120)),
        // Read on a plain connection: a store handle's open would queue for the write
        // lock the stalled page holds.
        || {
            stall
                .query_row(
                    "SELECT EXISTS (SELECT 1 FROM audit WHERE action = 'bulk-requeue-work')",
                    [],
                    |r| r.get(0),
                )
                .unwrap()
        },
    );
    assert!(
        child.0.try_wait().unwrap().is_none(),
        "the run is still under way"
    );
    drop(child);
    stall.execute_batch("DROP TRIGGER stall").unwrap();
    drop(stall);

    let killed_did = s.count(WorkState::Pending) - 1;
    assert_eq!(killed_did, 500, "the first page, and nothing of the second");
    let entries = s.bulk_entries();
    assert_eq!(
        entries.last().map(String::as_str),
        Some(
            format!(
                "in progress: {killed_did} of 12000 matched so far: {killed_did} requeued, 0 skipped (already requeued), 0 refused; reason: mailbox fixed"
            )
            .as_str()
        ),
        "{entries:#?}"
    );
    // An authority runs some of the requeued items to success meanwhile.
    let store = s.store();
    let ran: Vec<Completion> = store
        .claim_batch("auth-b", "k", killed_did / 2, 60_000)
        .unwrap()
        .iter()
        .map(|w| Completion {
            id: w.id.clone(),
            owner: "auth-b".into(),
            generation: w.generation,
            retry: leasehold::rules::retry::Retry::default(),
            outcome: Ok(None),
        })
        .collect();
    assert!(!ran.is_empty());
    store.complete_batch(&ran).unwrap();

    let o = s.run(&["requeue", "--filter", "id:f-", "--yes", "--json"]);
    assert_eq!(code(&o), 0, "{}{}", stdout(&o), stderr(&o));
    let again = answer(&o);
    let counts = ["matched", "done", "doneBefore", "skipped", "refused"].map(|k| again[k].clone());
    assert_eq!(
        counts,
        [12_000, 12_000 - killed_did, killed_did, 0, 0].map(Value::from),
        "{again}"
    );
    assert_eq!(s.count(WorkState::Failed), 0);

    let o = s.run(&["requeue", "--filter", "id:f-", "--yes"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert_eq!(
        stdout(&o).trim(),
        "requeue-work over id:f-: 12000 matched: 0 requeued, 12000 done before, 0 skipped (already requeued), 0 refused"
    );
    let (_, requeued) = s.audit();
    assert_eq!(requeued.len(), 12_000, "every item requeued");
    assert!(requeued.values().all(|n| *n == 1), "none twice");
}

/// Makes every page of a bulk requeue after the first spend minutes inside its
/// transaction, where it writes the run's audit entry (a trigger counts a large cross
/// join): a run killed once its first entry is in the audit log dies with its first page
/// committed and its second not, however slow the machine.
const STALL_AFTER_THE_FIRST_PAGE: &str = "CREATE TRIGGER stall BEFORE INSERT ON audit
    WHEN NEW.action = 'bulk-requeue-work'
     AND EXISTS (SELECT 1 FROM audit WHERE action = 'bulk-requeue-work')
    BEGIN
      SELECT count(*) FROM work AS a, work AS b, (SELECT id FROM audit LIMIT 20);
    END;";

/// A child process killed (SIGKILL) and reaped when dropped, so a failing test leaves
/// none behind.
struct Killed(std::process::Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn retry_now_makes_a_waiting_item_due_once() {
    let s = plant(1);
    let o = s.run(&["retry-now", "waiting", "--json"]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let item = s.store().work("waiting").unwrap().unwrap();
    assert!(item.next_eligible_at <= SystemClock.now());
    assert_eq!(answer(&o)["outcome"], "due now");
    let again = s.run(&["retry-now", "waiting", "--json"]);
    assert_eq!(answer(&again)["outcome"], "already due now");
    let refused = s.run(&["retry-now", "f-00000"]);
    assert_eq!(code(&refused), 1);
    assert!(
        stderr(&refused).contains("failed — requeue it"),
        "{}",
        stderr(&refused)
    );
}

/// A filter that names nothing — blank (an unset shell variable), or a field whose value
/// list is empty (`state:,`) — is refused in one line (exit 2) by every bulk verb, and the
/// store is left as it was; a blank one acts on every item only when `--yes` says so.
#[test]
fn a_filter_naming_nothing_is_refused_and_changes_nothing() {
    let p = plant(3);
    let before = sha256(std::path::Path::new(&p.path));
    for (verb, filter) in [
        ("discard", ""),
        ("discard", "   "),
        ("discard", "state:,"),
        ("requeue", "handler:,"),
        ("requeue", "code:, class:terminal"),
        ("retry-now", "class:,"),
    ] {
        let o = leasehold(&[
            "work", verb, "--store", &p.path, "--filter", filter, "--reason", "r",
        ]);
        assert_eq!(code(&o), 2, "{verb} --filter {filter:?}: {}", stderr(&o));
        assert_eq!(stderr(&o).trim().lines().count(), 1, "{}", stderr(&o));
    }
    let o = leasehold(&["cancel", "--store", &p.path, "--filter", " "]);
    assert_eq!(code(&o), 2, "{}", stderr(&o));
    assert_eq!(
        sha256(std::path::Path::new(&p.path)),
        before,
        "nothing written"
    );
    assert_eq!(p.count(WorkState::Failed), 3);
    let o = leasehold(&[
        "work", "discard", "--store", &p.path, "--filter", "", "--yes", "--reason", "all",
    ]);
    assert_eq!(code(&o), 1, "the succeeded item is spared: {}", stderr(&o));
    assert_eq!(
        p.count(WorkState::Failed),
        4,
        "asked for by --yes: every other item"
    );
}

/// A requeue by filter revives an item a person discarded only when the filter names
/// `state:discarded`: `class:terminal` matches the discard's recorded failure too, but
/// leaves it discarded.
#[test]
fn a_requeue_by_filter_spares_discards_unless_it_names_them() {
    let p = plant(3);
    let o = leasehold(&[
        "work", "discard", "f-00000", "--store", &p.path, "--reason", "not ours",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let requeue = |filter: &str| {
        let o = leasehold(&[
            "work", "requeue", "--store", &p.path, "--filter", filter, "--reason", "r", "--json",
        ]);
        assert_eq!(code(&o), 0, "{filter}: {}", stderr(&o));
        answer(&o)
    };
    let answered = requeue("class:terminal");
    assert_eq!(answered["matched"], 2, "{answered}");
    let discarded = p.store().work("f-00000").unwrap().unwrap();
    assert_eq!(
        discarded.ending(),
        Some(leasehold::model::work::Ending::Discarded)
    );
    let answered = requeue("state:discarded");
    assert_eq!(answered["matched"], 1, "{answered}");
    let revived = p.store().work("f-00000").unwrap().unwrap();
    assert_eq!(revived.state, WorkState::Pending);
}
