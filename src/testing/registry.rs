//! The authority registry: an instance id is unique among running authorities, a heartbeat
//! only ever refreshes its own incarnation's row, and only a gone or stopped registration
//! can be forgotten (audited either way).

use std::sync::Barrier;
use std::sync::atomic::AtomicU64;

use crate::Store;
use crate::clock::Clock;
use crate::model::{Authority, PageRequest};
use crate::rules::liveness::{Liveness, liveness};
use crate::store::Forgot;

use crate::check::{CheckOptions, check};
use crate::foundation::actor::host_name;
use crate::foundation::process::{self, Gone};
use crate::model::WorkState;
use crate::store::{Keyed, ReleasedClaim};

use super::work::{effect, item};
use super::{Harness, K, ok, refused, retry_contention};

/// A registration of `id` by process `pid`, started (and last heartbeating) at `at`, on a
/// 3 s lease with a 1 s heartbeat.
pub fn started(id: &str, pid: u32, at: i64) -> Authority {
    Authority {
        instance_id: id.into(),
        compat: K.into(),
        build: "test".into(),
        config: r#"{"leaseDurationMs":3000,"heartbeatIntervalMs":1000}"#.into(),
        started_at: at,
        heartbeat_at: at,
        stopped_at: None,
        host: "host-1".into(),
        pid,
        published: crate::model::Published::default(),
    }
}

fn row(s: &Store, id: &str) -> Option<Authority> {
    ok("list", s.list_authorities(&PageRequest::first(100)))
        .rows
        .into_iter()
        .find(|a| a.instance_id == id)
}

fn state(h: &dyn Harness, id: &str) -> Liveness {
    let a = row(&h.store(), id).expect("registered");
    liveness(&a, h.clock().now())
}

/// Two starts of one instance id in one process at one instant are two incarnations,
/// whichever handle of the store each came through (a second handle opened on the same
/// store, as two embedded authorities may): the second start is later, so its
/// registration is refused while the first runs instead of passing as the same
/// incarnation. Another instance id starts at the instant itself.
pub fn starts_of_one_instance_differ_across_handles(h: &dyn Harness) {
    let now = h.clock().now();
    let first = h.store().unique_start("twin");
    let second = h.reopen().unique_start("twin");
    assert_eq!(first, now);
    assert_eq!(second, now + 1);
    assert_eq!(h.reopen().unique_start("other"), now);
    ok(
        "registers",
        h.store().register_authority(&started("twin", 7, first)),
    );
    let refused = h
        .reopen()
        .register_authority(&started("twin", 7, second))
        .expect_err("a second incarnation while the first runs");
    assert_eq!(refused.code(), "INSTANCE_IN_USE");
}

/// A second start under a live or silent id is refused and changes nothing; once the first
/// is gone (heartbeat older than its lease) or stopped, a new start takes the id over.
pub fn duplicate_registration_is_refused_while_the_holder_runs(h: &dyn Harness) {
    let s = h.store();
    let now = h.clock().now();
    let first = started("auth-1", 100, now);
    ok("register", s.register_authority(&first));
    ok(
        "the same incarnation may register again",
        s.register_authority(&first),
    );

    let second = || started("auth-1", 200, h.clock().now());
    let err = s.register_authority(&second()).expect_err("live holder");
    assert_eq!(err.code(), "INSTANCE_IN_USE");
    let text = err.to_string();
    for part in ["auth-1", "live", "100", "host-1"] {
        assert!(text.contains(part), "names {part}: {text}");
    }
    assert_eq!(row(&s, "auth-1").expect("kept").pid, 100, "unchanged");

    h.clock().advance(2_000);
    assert_eq!(state(h, "auth-1"), Liveness::Silent);
    assert_eq!(
        refused("silent holder", s.register_authority(&second())),
        "INSTANCE_IN_USE"
    );
    h.clock().advance(1_000);
    assert_eq!(
        state(h, "auth-1"),
        Liveness::Silent,
        "exactly one lease old"
    );
    assert_eq!(
        refused("holder one lease old", s.register_authority(&second())),
        "INSTANCE_IN_USE"
    );

    h.clock().advance(1);
    assert_eq!(state(h, "auth-1"), Liveness::Gone);
    ok("gone holder is replaced", s.register_authority(&second()));
    assert_eq!(row(&s, "auth-1").expect("taken over").pid, 200);

    // A clean stop frees the id at once.
    let third = started("auth-1", 300, h.clock().now());
    assert_eq!(
        refused("live again", s.register_authority(&third)),
        "INSTANCE_IN_USE"
    );
    let holder = row(&s, "auth-1").expect("registered");
    ok("stop", s.heartbeat(&holder.incarnation(), true));
    assert_eq!(state(h, "auth-1"), Liveness::Stopped);
    ok("stopped holder is replaced", s.register_authority(&third));
    assert_eq!(row(&s, "auth-1").expect("taken over").pid, 300);
}

/// Racing starts under one id, each on its own connection: exactly one registers.
pub fn racing_registrations_exactly_one_wins(h: &dyn Harness) {
    const RACERS: u32 = 6;
    let contention = AtomicU64::new(0);
    for round in 0..3 {
        let id = format!("racer-{round}");
        let barrier = Barrier::new(RACERS as usize);
        let handles: Vec<Store> = (0..RACERS).map(|_| h.reopen()).collect();
        let now = h.clock().now();
        let outcomes: Vec<Result<u32, &'static str>> = std::thread::scope(|scope| {
            let joins: Vec<_> = handles
                .into_iter()
                .zip(1..)
                .map(|(store, pid)| {
                    let (barrier, id, contention) = (&barrier, &id, &contention);
                    scope.spawn(move || {
                        barrier.wait();
                        retry_contention(contention, || {
                            store.register_authority(&started(id, pid, now))
                        })
                        .map(|_| pid)
                        .map_err(|e| e.code())
                    })
                })
                .collect();
            joins
                .into_iter()
                .map(|j| j.join().expect("racer thread"))
                .collect()
        });
        let winners: Vec<u32> = outcomes.iter().filter_map(|o| o.ok()).collect();
        assert_eq!(winners.len(), 1, "round {round}: {outcomes:?}");
        assert!(
            outcomes
                .iter()
                .filter_map(|o| o.err())
                .all(|c| c == "INSTANCE_IN_USE"),
            "{outcomes:?}"
        );
        assert_eq!(row(&h.store(), &id).expect("registered").pid, winners[0]);
    }
}

/// Once another start owns the row, the first incarnation's heartbeats (and its clean
/// stop) are refused and leave the row alone.
pub fn a_superseded_incarnation_cannot_heartbeat(h: &dyn Harness) {
    let s = h.store();
    let first = started("auth-1", 100, h.clock().now());
    ok("register", s.register_authority(&first));
    ok("own heartbeat", s.heartbeat(&first.incarnation(), false));

    h.clock().advance(3_001);
    let second = started("auth-1", 200, h.clock().now());
    ok("takeover of a gone id", s.register_authority(&second));

    h.clock().advance(100);
    let err = s
        .heartbeat(&first.incarnation(), false)
        .expect_err("superseded");
    assert_eq!(err.code(), "INSTANCE_SUPERSEDED");
    assert!(
        err.to_string().contains("200"),
        "names the new holder: {err}"
    );
    assert_eq!(
        refused("superseded stop", s.heartbeat(&first.incarnation(), true)),
        "INSTANCE_SUPERSEDED"
    );
    let kept = row(&s, "auth-1").expect("registered");
    assert_eq!(
        (kept.pid, kept.heartbeat_at, kept.stopped_at),
        (200, second.heartbeat_at, None)
    );
    ok(
        "the new holder beats",
        s.heartbeat(&second.incarnation(), false),
    );

    let unknown = started("nobody", 1, h.clock().now());
    assert_eq!(
        refused("unregistered", s.heartbeat(&unknown.incarnation(), false)),
        "NOT_FOUND"
    );
}

/// `forget` is refused (and audited) while the authority is live or silent or unknown, and
/// removes a gone or stopped one (audited, with the actor).
pub fn forget_is_refused_while_running_and_allowed_when_gone(h: &dyn Harness) {
    let s = h.store();
    let a = started("auth-1", 100, h.clock().now());
    let b = started("auth-2", 101, h.clock().now());
    ok("register", s.register_authority(&a));
    ok("register", s.register_authority(&b));

    let err = s
        .forget_authority("auth-1", "ops@box", "")
        .expect_err("live");
    assert_eq!(err.code(), "INSTANCE_IN_USE");
    h.clock().advance(2_000);
    assert_eq!(
        refused("silent", s.forget_authority("auth-1", "ops@box", "")),
        "INSTANCE_IN_USE"
    );
    assert_eq!(
        refused("unknown", s.forget_authority("nobody", "ops@box", "")),
        "NOT_FOUND"
    );
    assert!(row(&s, "auth-1").is_some(), "still registered");

    ok("stop", s.heartbeat(&b.incarnation(), true));
    let forgot = ok("stopped", s.forget_authority("auth-2", "ops@box", ""));
    assert!(matches!(forgot, Forgot::Now(ref row, Liveness::Stopped) if row.pid == 101));
    h.clock().advance(1_001);
    let forgot = ok("gone", s.forget_authority("auth-1", "ops@box", ""));
    assert!(matches!(forgot, Forgot::Now(_, Liveness::Gone)));
    assert!(row(&s, "auth-1").is_none() && row(&s, "auth-2").is_none());
    ok(
        "the id is free again",
        s.register_authority(&started("auth-1", 300, h.clock().now())),
    );

    let audit: Vec<(String, String, String, String)> =
        ok("audit", s.list_audit(&PageRequest::first(100)))
            .rows
            .into_iter()
            .map(|e| (e.actor, e.action, e.target, e.outcome))
            .collect();
    let entry = |target: &str, outcome: &str| {
        (
            "ops@box".to_owned(),
            "forget-authority".to_owned(),
            target.to_owned(),
            outcome.to_owned(),
        )
    };
    assert_eq!(
        audit,
        vec![
            entry("auth-1", "refused: live"),
            entry("auth-1", "refused: silent"),
            entry("nobody", "refused: not found"),
            entry("auth-2", "forgotten: was stopped"),
            entry("auth-1", "forgotten: was gone"),
        ]
    );
}

/// A registration of `id` made `at` by a process of this host that has since exited: the
/// pid and process mark it recorded, as a crashed authority leaves them.
fn crashed(id: &str, at: i64) -> Authority {
    let mut child = std::process::Command::new("sleep")
        .arg("600")
        .spawn()
        .expect("start a process to crash");
    let mark = process::mark_of(child.id()).expect("a process mark (Linux /proc)");
    child.kill().expect("kill");
    child.wait().expect("reap");
    Authority {
        config: serde_json::json!({
            "leaseDurationMs": 3000,
            "heartbeatIntervalMs": 1000,
            "processMark": mark,
        })
        .to_string(),
        host: host_name(),
        ..started(id, child.id(), at)
    }
}

/// A new start of `id` by this process, on this host.
fn restarted(id: &str, at: i64) -> Authority {
    Authority {
        host: host_name(),
        ..started(id, std::process::id(), at)
    }
}

/// A start under the id of a live registration whose process, on this host, is gone (a
/// `kill -9`): taken over at once, and in the same transaction every claim and lease the
/// crashed incarnation held goes back under a new generation, its attempt counted as
/// uncertain; its late writes are fenced; the takeover is audited naming the dead pid, and
/// the history stays clean.
pub fn a_crashed_holder_on_this_host_is_taken_over_at_once(h: &dyn Harness) {
    let s = h.store();
    let dead = crashed("auth-1", h.clock().now());
    ok("register", s.register_authority(&dead));
    for id in ["e1", "e2"] {
        ok("enqueue", s.enqueue(effect(id), K));
    }
    let e1 = ok("claim", s.claim("e1", "auth-1", K, 3_000));
    ok("claim", s.claim("e2", "auth-1", K, 3_000));
    let lease = ok(
        "acquire",
        s.acquire("r", "auth-1", 3_000.0, Keyed { key: None }),
    );

    h.clock().advance(10);
    assert_eq!(state(h, "auth-1"), Liveness::Live, "still within its beat");
    let next = restarted("auth-1", h.clock().now());
    let restart = ok("restart under its own id", s.register_authority(&next))
        .expect("a takeover of the crashed incarnation");
    assert_eq!(restart.previous, dead);
    assert!(
        matches!(restart.found, Gone::Exited | Gone::Replaced),
        "{:?}",
        restart.found
    );
    let moved = |kind, resource: &str, from| ReleasedClaim {
        kind,
        resource: resource.into(),
        from_generation: from,
        to_generation: from + 1,
    };
    assert_eq!(
        restart.claims,
        vec![
            moved("work", "e1", 1),
            moved("work", "e2", 1),
            moved("lease", "r", lease.generation),
        ]
    );
    assert_eq!(row(&s, "auth-1").expect("registered"), next);
    for id in ["e1", "e2"] {
        let released = item(h, id);
        assert_eq!(
            (
                released.state,
                released.owner_id.as_deref(),
                released.generation,
                released.uncertain_attempts
            ),
            (WorkState::Pending, None, 2, 1),
            "{id}"
        );
    }
    assert_eq!(
        refused("a late complete", s.complete("e1", "auth-1", 1, None)),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "a late renew",
            s.renew("r", &lease.token, lease.generation, 3_000.0)
        ),
        "WORK_FENCED"
    );
    let again = ok(
        "the new incarnation claims",
        s.claim("e1", "auth-1", K, 3_000),
    );
    assert_eq!(again.generation, e1.generation + 2);

    let actor = format!("auth-1 (pid {} on {})", next.pid, host_name());
    let audit: Vec<(String, String, String)> = ok("audit", s.list_audit(&PageRequest::first(100)))
        .rows
        .into_iter()
        .filter(|e| e.action == crate::store::RESTART_ACTION)
        .map(|e| (e.actor, e.target, e.outcome))
        .collect();
    assert_eq!(
        audit,
        vec![(
            actor,
            "auth-1".to_owned(),
            format!(
                "took over from crashed pid {pid} ({found}): 3 claim(s) released; reason: restarted: pid {pid} on {host} is {found}",
                pid = dead.pid,
                found = restart.found,
                host = host_name(),
            )
        )]
    );
    let report = ok("check", check(&s, &CheckOptions::at(s.now())));
    assert!(report.is_clean(), "{report:?}");
}

/// A start under the id of a live registration is still refused whenever its holder may
/// still run: a dead pid recorded from another host (this host cannot look at it), this
/// very process (alive, the recorded start), and a registration without a process mark
/// (written by an older build). Nothing is released.
pub fn a_holder_that_may_still_run_keeps_its_id(h: &dyn Harness) {
    let s = h.store();
    let elsewhere = Authority {
        host: "host-elsewhere".into(),
        ..crashed("auth-1", h.clock().now())
    };
    let alive = Authority {
        config: serde_json::json!({
            "leaseDurationMs": 3000,
            "heartbeatIntervalMs": 1000,
            "processMark": process::this_process().expect("a process mark"),
        })
        .to_string(),
        ..restarted("auth-2", h.clock().now())
    };
    let unmarked = Authority {
        host: host_name(),
        ..started("auth-3", crashed("x", 0).pid, h.clock().now())
    };
    for holder in [&elsewhere, &alive, &unmarked] {
        ok("register", s.register_authority(holder));
        let claimed = format!("{}-work", holder.instance_id);
        ok("enqueue", s.enqueue(effect(&claimed), K));
        ok("claim", s.claim(&claimed, &holder.instance_id, K, 3_000));
    }
    h.clock().advance(10);
    for holder in [&elsewhere, &alive, &unmarked] {
        let id = &holder.instance_id;
        let err = s
            .register_authority(&restarted(id, h.clock().now()))
            .expect_err("refused while the holder may run");
        assert_eq!(err.code(), "INSTANCE_IN_USE", "{id}: {err}");
        assert!(
            err.to_string().contains(&holder.pid.to_string()),
            "{id}: {err}"
        );
        assert_eq!(row(&s, id).as_ref(), Some(holder), "{id}: unchanged");
        let work = item(h, &format!("{id}-work"));
        assert_eq!(
            (work.state, work.generation),
            (WorkState::Claimed, 1),
            "{id}: its claim stays"
        );
    }
}
