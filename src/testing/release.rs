//! Force-releasing and forgetting a gone authority: `release` moves every claim the
//! authority still holds to a new generation (its late writes are fenced) and its work
//! back to pending, once; `forget` waits until it holds nothing and repeats quietly. Both
//! are refused while it runs and for an unknown id, and audit one entry per change.

use crate::Store;
use crate::check::{CheckOptions, check};
use crate::clock::Clock;
use crate::model::attempt_error::LAPSED_CODE;
use crate::model::work::NewWork;
use crate::model::{Authority, PageRequest, WorkState};
use crate::rules::liveness::Liveness;
use crate::rules::work::DEAD_LETTER_CODE;
use crate::store::{Forgot, Keyed, ReleasedClaim};

use super::work::{effect, item};
use super::{Harness, K, ok, refused};

const ACTOR: &str = "alice@ops-1";
const LEASE: i64 = 3_000;
const NO_KEY: Keyed<'static> = Keyed { key: None };

/// `id` registered now on a 3 s lease with a 1 s heartbeat.
fn registered(h: &dyn Harness, id: &str) {
    let now = h.clock().now();
    ok(
        "register",
        h.store().register_authority(&Authority {
            instance_id: id.into(),
            compat: K.into(),
            build: "test".into(),
            config: r#"{"leaseDurationMs":3000,"heartbeatIntervalMs":1000}"#.into(),
            started_at: now,
            heartbeat_at: now,
            stopped_at: None,
            host: "host-1".into(),
            pid: 7,
            published: crate::model::Published::default(),
        }),
    );
}

/// The audit entries of `action`, oldest first, as `(target, outcome)`.
fn audited(s: &Store, action: &str) -> Vec<(String, String)> {
    let mut rows = ok("audit", s.list_audit(&PageRequest::first(1_000))).rows;
    rows.sort_by_key(|a| a.id);
    rows.into_iter()
        .filter(|a| a.action == action)
        .inspect(|a| assert_eq!(a.actor, ACTOR))
        .map(|a| (a.target, a.outcome))
        .collect()
}

fn claim(kind: &'static str, resource: &str, from: u64) -> ReleasedClaim {
    ReleasedClaim {
        kind,
        resource: resource.into(),
        from_generation: from,
        to_generation: from + 1,
    }
}

/// A gone authority's claimed items and its lease move to new generations, its work is
/// pending and due at once (or a dead letter when the lost attempt was its last), another authority's claim is left alone, and its late complete
/// and renew are fenced; a second release finds nothing and writes nothing.
#[expect(
    clippy::too_many_lines,
    reason = "a scripted scenario: its steps in the order they happen"
)]
pub fn release_moves_a_gone_authoritys_claims_to_new_generations_once(h: &dyn Harness) {
    let s = h.store();
    registered(h, "auth-1");
    registered(h, "auth-2");
    for id in ["e1", "e2", "e3"] {
        ok("enqueue", s.enqueue(effect(id), K));
    }
    let spent = NewWork {
        max_attempts: 1,
        ..effect("e9")
    };
    ok("enqueue", s.enqueue(spent, K));
    let e1 = ok("claim", s.claim("e1", "auth-1", K, LEASE));
    ok("claim", s.claim("e2", "auth-1", K, LEASE));
    ok("claim its only attempt", s.claim("e9", "auth-1", K, LEASE));
    let other = ok("claim", s.claim("e3", "auth-2", K, LEASE));
    let lease = ok("acquire", s.acquire("r", "auth-1", 3_000.0, NO_KEY));

    assert_eq!(
        refused("live", s.release_authority("auth-1", ACTOR, "paged")),
        "INSTANCE_IN_USE"
    );
    assert_eq!(
        refused("unknown", s.release_authority("nobody", ACTOR, "paged")),
        "NOT_FOUND"
    );
    h.clock().advance(LEASE + 1);
    let expected = vec![
        claim("work", "e1", 1),
        claim("work", "e2", 1),
        claim("work", "e9", 1),
        claim("lease", "r", lease.generation),
    ];
    let revision = ok("revision", s.revision());
    let preview = ok("preview", s.release_preview("auth-1"));
    assert_eq!(
        (preview.liveness, &preview.claims),
        (Liveness::Gone, &expected)
    );
    assert_eq!(
        ok("revision", s.revision()),
        revision,
        "a preview writes nothing"
    );

    let done = ok("release", s.release_authority("auth-1", ACTOR, "host died"));
    assert_eq!(done.claims, expected);
    let now = h.clock().now();
    for id in ["e1", "e2"] {
        let released = item(h, id);
        assert_eq!(
            (
                released.state,
                released.owner_id.as_deref(),
                released.generation,
                released.uncertain_attempts,
                released.next_eligible_at
            ),
            (WorkState::Pending, None, 2, 1, now),
            "{id}"
        );
    }
    assert_eq!(
        item(h, "e3"),
        other,
        "another authority's claim is untouched"
    );
    // Each released attempt leaves its error, under the gone owner and its generation.
    for (id, code) in [("e1", LAPSED_CODE), ("e9", DEAD_LETTER_CODE)] {
        let errors = ok("attempt errors", s.attempt_errors(id));
        assert_eq!(
            errors
                .iter()
                .map(|e| (
                    e.attempt,
                    e.generation,
                    e.owner_id.as_str(),
                    e.code.as_str()
                ))
                .collect::<Vec<_>>(),
            [(1, 1, "auth-1", code)],
            "{id}"
        );
    }
    assert!(ok("none", s.attempt_errors("e3")).is_empty());

    assert_eq!(
        refused(
            "late complete",
            s.complete("e1", "auth-1", e1.generation, None)
        ),
        "WORK_FENCED"
    );
    assert_eq!(
        refused(
            "late renew",
            s.renew("r", &lease.token, lease.generation, 3_000.0)
        ),
        "WORK_FENCED"
    );
    let next = ok(
        "a live authority claims at once",
        s.claim("e1", "auth-2", K, LEASE),
    );
    assert_eq!(next.generation, 3);

    let revision = ok("revision", s.revision());
    let again = ok("repeat", s.release_authority("auth-1", ACTOR, "host died"));
    assert!(again.claims.is_empty(), "nothing left to release");
    assert_eq!(
        ok("revision", s.revision()),
        revision,
        "a repeat writes nothing"
    );

    let released = |target: &str, from: u64, noun: &str| {
        (
            target.to_owned(),
            format!(
                "released {noun} {target} from auth-1: generation {from} → {}; reason: host died",
                from + 1
            ),
        )
    };
    assert_eq!(
        audited(&s, "release-authority"),
        vec![
            (
                "auth-1".to_owned(),
                "refused: live; reason: paged".to_owned()
            ),
            (
                "nobody".to_owned(),
                "refused: not found; reason: paged".to_owned()
            ),
            released("e1", 1, "work"),
            released("e2", 1, "work"),
            released("e9", 1, "work"),
            released("r", lease.generation, "lease"),
        ]
    );
    let report = ok("check", check(&s, &CheckOptions::at(s.now())));
    assert!(report.is_clean(), "{report:?}");
}

/// `forget` is refused while the gone authority still holds a claim, removes it once
/// released, and a repeat says it was forgotten before without writing; an id never
/// registered stays `NOT_FOUND`.
pub fn forget_waits_for_release_and_repeats_quietly(h: &dyn Harness) {
    let s = h.store();
    registered(h, "auth-1");
    ok("enqueue", s.enqueue(effect("e1"), K));
    ok("claim", s.claim("e1", "auth-1", K, LEASE));
    h.clock().advance(LEASE + 1);

    assert_eq!(
        refused("holds a claim", s.forget_authority("auth-1", ACTOR, "")),
        "WORK_IN_PROGRESS"
    );
    assert_eq!(
        refused("preview", s.forget_preview("auth-1")),
        "WORK_IN_PROGRESS"
    );
    ok("release", s.release_authority("auth-1", ACTOR, ""));
    assert!(matches!(
        ok("preview", s.forget_preview("auth-1")),
        Forgot::Now(_, Liveness::Gone)
    ));
    let forgot = ok(
        "forget",
        s.forget_authority("auth-1", ACTOR, "decommissioned"),
    );
    assert!(matches!(forgot, Forgot::Now(ref row, Liveness::Gone) if row.pid == 7));

    let revision = ok("revision", s.revision());
    assert_eq!(
        ok(
            "repeat",
            s.forget_authority("auth-1", ACTOR, "decommissioned")
        ),
        Forgot::Already
    );
    assert_eq!(ok("preview", s.forget_preview("auth-1")), Forgot::Already);
    assert_eq!(
        ok("revision", s.revision()),
        revision,
        "a repeat writes nothing"
    );
    assert_eq!(
        refused("never registered", s.forget_authority("nobody", ACTOR, "")),
        "NOT_FOUND"
    );

    let outcomes: Vec<String> = audited(&s, "forget-authority")
        .into_iter()
        .map(|(_, outcome)| outcome)
        .collect();
    assert_eq!(outcomes.len(), 3, "{outcomes:?}");
    assert!(
        outcomes[0].starts_with("refused: ") && outcomes[0].contains("e1"),
        "{outcomes:?}"
    );
    assert_eq!(outcomes[1], "forgotten: was gone; reason: decommissioned");
    assert_eq!(outcomes[2], "refused: not found");
}
