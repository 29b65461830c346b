//! Named, seedable scenarios: a fault script laid out over the run's duration. The same
//! name, seed, duration and authority count always give the same script.
//!
//! | name | what happens |
//! |---|---|
//! | `steady` | no faults: the baseline |
//! | `failover` | the busiest authority crashes (twice, with replacements): its claims lapse and are reclaimed; then an owner stalls and its late writes are refused |
//! | `stall` | an authority mid-work pauses past its lease expiry, twice; its late writes are refused (`WORK_FENCED`) |
//! | `rolling-deploy` | every authority is replaced by build `v2`; old-build work is held *incompatible* until an old-build authority comes back and drains it, while schedules (the old build's too) keep firing under `v2` |
//! | `skew` | clocks disagree by more than the renew slack: takeovers and fenced writes, never a violation |
//! | `chaos` | a seeded mix of everything, including a store outage, slow / failing handlers and one stall that ends fenced |

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use super::faults::{Fault, Target};
use crate::clock::Millis;
use crate::error::{Error, Result};

/// Every scenario name, in the order `--help` lists them.
pub const SCENARIOS: [&str; 6] = [
    "steady",
    "failover",
    "stall",
    "rolling-deploy",
    "skew",
    "chaos",
];

/// The lease timings a script is laid out against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub lease_ms: Millis,
    pub renew_ms: Millis,
    pub poll_ms: Millis,
    pub heartbeat_ms: Millis,
    pub concurrency: usize,
    pub batch: usize,
}

impl Default for Timing {
    /// Demo timings: a 5 s lease renewed every 1.5 s, polled every 250 ms, so failover is
    /// visible within seconds.
    fn default() -> Self {
        Self {
            lease_ms: 5_000,
            renew_ms: 1_500,
            poll_ms: 250,
            heartbeat_ms: 1_000,
            concurrency: 4,
            batch: 8,
        }
    }
}

/// A scenario: its name, a one-line description and its fault script (offsets from the
/// start of the run).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scenario {
    pub name: String,
    pub description: &'static str,
    pub script: Vec<(Millis, Fault)>,
}

/// One line per scenario, for `--help` and errors.
#[must_use]
pub fn describe(name: &str) -> &'static str {
    match name {
        "steady" => "no faults: the baseline",
        "failover" => {
            "the busiest authority crashes (twice, with replacements); its claims lapse and are reclaimed; then an owner stalls and its late writes are refused (WORK_FENCED)"
        }
        "stall" => {
            "the busiest authority pauses past lease expiry, twice; its late writes are refused (WORK_FENCED)"
        }
        "rolling-deploy" => {
            "authorities are replaced by build v2; old-build work is held incompatible until an old-build authority returns to drain it; schedules keep firing under v2"
        }
        "skew" => {
            "authority clocks disagree by more than the renew slack: takeovers and fenced writes, never a violation"
        }
        "chaos" => {
            "a seeded mix of crashes, pauses, a store outage, slow and failing handlers, and skew; one stalled owner is always fenced"
        }
        _ => "",
    }
}

/// The build a rolling deploy rolls out.
pub const NEXT_BUILD: &str = "v2";

/// Lays out scenario `name` over `duration_ms` for `authorities` authorities.
///
/// # Errors
/// `INVALID` for an unknown name.
pub fn build(
    name: &str,
    seed: u64,
    duration_ms: Millis,
    authorities: usize,
    timing: Timing,
    first_build: &str,
) -> Result<Scenario> {
    let at = |pct: i64| duration_ms * pct / 100;
    let script = match name {
        "steady" => Vec::new(),
        "failover" => {
            let mut s = vec![
                (at(25), Fault::Crash(Target::Busiest)),
                (
                    at(25) + timing.lease_ms,
                    Fault::AddAuthority { build: None },
                ),
            ];
            if authorities >= 2 {
                s.push((at(55), Fault::Crash(Target::Busiest)));
                s.push((
                    at(55) + timing.lease_ms,
                    Fault::AddAuthority { build: None },
                ));
                // A slow owner is the other half of failover: it is taken over while it
                // still works, wakes, and its write is refused.
                s.extend(stall(at(40), timing));
                s.sort_by_key(|(t, _)| *t);
            }
            s
        }
        "stall" => [20, 55]
            .into_iter()
            .flat_map(|pct| stall(at(pct), timing))
            .collect(),
        "rolling-deploy" => vec![
            (
                at(20),
                Fault::RollOut {
                    build: NEXT_BUILD.into(),
                    step_ms: timing.lease_ms / 2,
                },
            ),
            (
                at(65),
                Fault::AddAuthority {
                    build: Some(first_build.into()),
                },
            ),
        ],
        "skew" => {
            // Ahead by more than a lease: auth-1 sees every other claim as expired and takes
            // it over; the owners' writes are then fenced.
            let mut s = vec![(
                at(10),
                Fault::Skew {
                    target: Target::Node(0),
                    offset_ms: timing.lease_ms + timing.renew_ms,
                },
            )];
            if authorities >= 2 {
                s.push((
                    at(10),
                    Fault::Skew {
                        target: Target::Node(1),
                        offset_ms: -(timing.lease_ms / 2),
                    },
                ));
            }
            s.push((at(70), Fault::ResetSkew));
            s
        }
        "chaos" => {
            let mut s = chaos(seed, duration_ms, timing);
            // Whatever the draw, one owner stalls past its lease and wakes to be fenced,
            // once the clocks are back in sync (a clock behind would not take it over).
            s.extend(stall(duration_ms * 4 / 5 + 1_000, timing));
            s.sort_by_key(|(t, _)| *t);
            s
        }
        other => {
            return Err(Error::Invalid(format!(
                "unknown scenario {other:?}; known: {}",
                SCENARIOS.join(", ")
            )));
        }
    };
    Ok(Scenario {
        name: name.into(),
        description: describe(name),
        script,
    })
}

/// An owner stalling past its lease at `at`: slow handlers around the pause keep every
/// authority mid-work when it freezes, and keep the successor mid-work when the stalled
/// one wakes up, so its late completions meet a newer claim (`WORK_FENCED`), not only a
/// finished item (already-terminal). The pause outlasts the lease by a renew interval and
/// three polls: the stalled owner's claims expire within a lease of it freezing, a lapsed
/// attempt is reclaimable only after a reclaim backoff past that, and a successor whose
/// slots the slow handlers fill takes it over only when one of them frees — a pause of a
/// lease and three polls left that to which items the claims happened to deal.
fn stall(at: Millis, timing: Timing) -> [(Millis, Fault); 2] {
    let pause = timing.lease_ms + timing.renew_ms + timing.poll_ms * 3;
    [
        (
            at - 2_000,
            Fault::SlowHandlers {
                factor_pct: 2_000,
                for_ms: 2_000 + pause + 3_000,
            },
        ),
        (
            at,
            Fault::Pause {
                target: Target::Stallable,
                for_ms: pause,
            },
        ),
    ]
}

/// A seeded mix: one fault every eighth of the run (none in the last fifth, so the run
/// ends healthy), plus a store outage.
fn chaos(seed: u64, duration_ms: Millis, timing: Timing) -> Vec<(Millis, Fault)> {
    let mut rng = SmallRng::seed_from_u64(seed ^ 0xc4a0_5c4a_05c4_a05c);
    let mut script = Vec::new();
    let slot = (duration_ms / 8).max(1);
    let mut t = slot / 2;
    while t < duration_ms * 4 / 5 {
        let jitter = rng.random_range(0..slot / 2 + 1);
        let when = t + jitter;
        match rng.random_range(0..6) {
            0 => {
                script.push((when, Fault::Crash(Target::Random)));
                script.push((when + timing.lease_ms, Fault::AddAuthority { build: None }));
            }
            1 => script.push((
                when,
                Fault::Pause {
                    target: Target::Random,
                    for_ms: timing.lease_ms + rng.random_range(0..timing.lease_ms),
                },
            )),
            2 => script.push((
                when,
                Fault::Outage {
                    for_ms: rng.random_range(500..timing.lease_ms / 2 + 501),
                },
            )),
            3 => script.push((
                when,
                Fault::SlowHandlers {
                    factor_pct: rng.random_range(300..1_000),
                    for_ms: timing.lease_ms * 2,
                },
            )),
            4 => script.push((
                when,
                Fault::FailingHandlers {
                    per_mille: rng.random_range(100..500),
                    for_ms: timing.lease_ms * 2,
                },
            )),
            _ => {
                script.push((
                    when,
                    Fault::Skew {
                        target: Target::Random,
                        offset_ms: rng.random_range(-timing.lease_ms..timing.lease_ms),
                    },
                ));
            }
        }
        t += slot;
    }
    // Always one outage, and skew undone before the end.
    script.push((
        duration_ms * 2 / 5,
        Fault::Outage {
            for_ms: timing.lease_ms / 2,
        },
    ));
    script.push((duration_ms * 4 / 5, Fault::ResetSkew));
    script.sort_by_key(|(t, _)| *t);
    script
}
