//! Leases and fencing: acquire, renew, release, handoff, checkpoint, TTL clamping.

use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::model::{Checkpoint, Lease};

/// The shortest lease anyone may hold.
pub const MIN_LEASE_MS: Millis = 100;
/// The longest lease anyone may hold (30 days): nothing is leased forever.
pub const MAX_LEASE_MS: Millis = 30 * 24 * 3_600_000;
/// What a request without a usable duration gets.
pub const DEFAULT_LEASE_MS: Millis = 30_000;
/// Live leases one owner may hold through `acquire` (renewal is exempt).
pub const DEFAULT_OWNER_CAP: u64 = 10_000;

/// Clamps a requested duration into `[MIN_LEASE_MS, MAX_LEASE_MS]`. Non-finite, zero or
/// negative requests fall back to the default rather than failing open.
#[must_use]
pub fn clamp_duration(requested: f64) -> Millis {
    if !requested.is_finite() || requested <= 0.0 {
        return DEFAULT_LEASE_MS;
    }
    if requested >= MAX_LEASE_MS as f64 {
        return MAX_LEASE_MS;
    }
    // Truncation is the intent: whole milliseconds, already bounded above.
    #[allow(clippy::cast_possible_truncation)]
    let ms = requested as Millis;
    ms.clamp(MIN_LEASE_MS, MAX_LEASE_MS)
}

/// Grants `resource` to `owner` unless a live lease stands. The new generation is strictly
/// greater than any before it and than `floor` (the store epoch's, see `store/epoch.rs`,
/// for a resource the store has no lease row of); a checkpoint left by an expired holder is carried over so
/// the new owner can resume from it.
///
/// # Errors
/// `LeaseHeld` while someone else's (or one's own) lease is live.
pub fn acquire(
    floor: u64,
    current: Option<&Lease>,
    resource: &str,
    owner: &str,
    token: String,
    duration: Millis,
    now: Millis,
) -> Result<Lease> {
    if let Some(held) = current.filter(|l| l.is_live(now)) {
        return Err(Error::LeaseHeld {
            resource: resource.to_owned(),
            owner: held.owner_id.clone(),
            expires_at: held.expires_at,
        });
    }
    Ok(Lease {
        resource_id: resource.to_owned(),
        owner_id: owner.to_owned(),
        token,
        generation: current.map_or(0, |l| l.generation).max(floor) + 1,
        acquired_at: now,
        expires_at: now.saturating_add(duration),
        released_at: None,
        // Released leases dropped their checkpoint; expired ones kept it for us.
        checkpoint: current.and_then(|l| l.checkpoint.clone()),
    })
}

/// Checks that `token`/`generation` name the current, unreleased acquisition. Expiry alone
/// does not fail this check: only a reclaim (a newer generation) fences.
///
/// # Errors
/// `Fenced` when the generation or token is not the current one, or it was released.
pub fn check_holder(lease: &Lease, token: &str, generation: u64) -> Result<()> {
    if lease.generation != generation || lease.token != token || lease.released_at.is_some() {
        return Err(Error::Fenced {
            resource: lease.resource_id.clone(),
            presented: generation,
            current: lease.generation,
        });
    }
    Ok(())
}

/// Extends the holder's lease. Renewal of a lease that expired but was not reclaimed is
/// allowed: nobody else was granted it, so the holder still is the owner. (It is no longer
/// live, though, so the store charges it against the per-owner cap like an acquire: see
/// [`renewal_is_cap_exempt`].)
///
/// # Errors
/// `Fenced` for a wrong token or superseded generation.
pub fn renew(
    lease: &Lease,
    token: &str,
    generation: u64,
    duration: Millis,
    now: Millis,
) -> Result<Lease> {
    check_holder(lease, token, generation)?;
    Ok(Lease {
        expires_at: now.saturating_add(duration),
        ..lease.clone()
    })
}

/// Whether renewing `lease` at `now` is exempt from the per-owner cap: only while it is
/// still live. A lapsed lease renewed is a new hold as far as the cap is concerned, or an
/// owner could collect any number of live leases by letting each lapse and renewing it.
#[must_use]
pub fn renewal_is_cap_exempt(lease: &Lease, now: Millis) -> bool {
    lease.is_live(now)
}

/// Releases the lease; the generation stays so the next acquire goes higher. A normal
/// release means the work is finished, so the checkpoint is dropped.
///
/// # Errors
/// `Fenced` for a wrong token or superseded generation.
pub fn release(lease: &Lease, token: &str, generation: u64, now: Millis) -> Result<Lease> {
    check_holder(lease, token, generation)?;
    Ok(Lease {
        released_at: Some(now),
        checkpoint: None,
        ..lease.clone()
    })
}

/// Moves the lease straight to `recipient` under a fresh generation, in one write: the
/// giver is fenced and nobody else can take it in between. The checkpoint travels with it.
///
/// Handing a lease to its own holder is refused: it would mint a generation and fence the
/// holder's own token while nothing changed hands (renewing is how a holder keeps a lease).
///
/// # Errors
/// `Fenced` for a wrong token or superseded generation; `SelfHandoff` when `recipient`
/// already holds it.
pub fn handoff(
    lease: &Lease,
    token: &str,
    generation: u64,
    recipient: &str,
    new_token: String,
    duration: Millis,
    now: Millis,
) -> Result<Lease> {
    check_holder(lease, token, generation)?;
    if lease.owner_id == recipient {
        return Err(Error::SelfHandoff {
            resource: lease.resource_id.clone(),
            owner: recipient.to_owned(),
        });
    }
    Ok(Lease {
        owner_id: recipient.to_owned(),
        token: new_token,
        generation: lease.generation + 1,
        acquired_at: now,
        expires_at: now.saturating_add(duration),
        released_at: None,
        checkpoint: lease.checkpoint.clone(),
        resource_id: lease.resource_id.clone(),
    })
}

/// Saves resume state under the holder's generation.
///
/// # Errors
/// `Fenced` for a wrong token or superseded generation.
pub fn checkpoint(
    lease: &Lease,
    token: &str,
    generation: u64,
    data: String,
    now: Millis,
) -> Result<Lease> {
    check_holder(lease, token, generation)?;
    Ok(Lease {
        checkpoint: Some(Checkpoint {
            generation,
            data,
            saved_at: now,
        }),
        ..lease.clone()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn held(now: Millis) -> Lease {
        acquire(0, None, "r", "a", "t1".into(), 1_000, now).expect("free resource")
    }

    #[test]
    fn clamping_bounds_every_request() {
        assert_eq!(clamp_duration(f64::NAN), DEFAULT_LEASE_MS);
        assert_eq!(clamp_duration(f64::INFINITY), DEFAULT_LEASE_MS);
        assert_eq!(clamp_duration(-5.0), DEFAULT_LEASE_MS);
        assert_eq!(clamp_duration(1.0), MIN_LEASE_MS);
        assert_eq!(clamp_duration(1e30), MAX_LEASE_MS);
        assert_eq!(clamp_duration(5_000.0), 5_000);
    }

    #[test]
    fn live_lease_refuses_acquire_expired_does_not() {
        let lease = held(0);
        assert_eq!(
            acquire(0, Some(&lease), "r", "b", "t2".into(), 1_000, 999)
                .expect_err("refused")
                .code(),
            "WORK_IN_PROGRESS"
        );
        let next = acquire(0, Some(&lease), "r", "b", "t2".into(), 1_000, 1_000).expect("expired");
        assert_eq!(next.generation, 2);
    }

    #[test]
    fn handoff_mints_a_generation_and_fences_the_giver() {
        let lease = held(0);
        let moved = handoff(&lease, "t1", 1, "b", "t2".into(), 1_000, 10).expect("holder");
        assert_eq!((moved.owner_id.as_str(), moved.generation), ("b", 2));
        assert_eq!(
            renew(&moved, "t1", 1, 1_000, 20)
                .expect_err("refused")
                .code(),
            "WORK_FENCED"
        );
    }

    /// The README states the lease window as part of the contract; each number there is
    /// this module's constant, so neither can change without the other.
    #[test]
    fn the_readme_states_the_lease_window_of_the_code() {
        let readme = include_str!("../../README.md");
        let rows = [
            format!("| Shortest lease | {MIN_LEASE_MS} ms |"),
            format!("| Longest lease | {MAX_LEASE_MS} ms (30 days)"),
            format!("| Default duration | {DEFAULT_LEASE_MS} ms |"),
            format!("| Live leases per owner | at most {DEFAULT_OWNER_CAP} by default"),
        ];
        for row in rows {
            assert!(readme.contains(&row), "README lacks {row:?}");
        }
        assert_eq!(
            MAX_LEASE_MS,
            30 * 24 * 3_600_000,
            "30 days, as the README says"
        );
        for request in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -1.0] {
            assert_eq!(clamp_duration(request), DEFAULT_LEASE_MS, "{request}");
        }
    }

    #[test]
    fn handoff_to_the_holder_itself_is_refused() {
        let lease = held(0);
        assert_eq!(
            handoff(&lease, "t1", 1, "a", "t2".into(), 1_000, 10)
                .expect_err("self-handoff")
                .code(),
            "LEASE_SELF_HANDOFF"
        );
    }

    #[test]
    fn only_a_live_lease_renews_cap_exempt() {
        let lease = held(0);
        assert!(renewal_is_cap_exempt(&lease, 999));
        assert!(!renewal_is_cap_exempt(&lease, 1_000));
    }

    #[test]
    fn checkpoint_survives_expiry_and_is_dropped_on_release() {
        let lease = checkpoint(&held(0), "t1", 1, "page=3".into(), 5).expect("holder");
        let next = acquire(0, Some(&lease), "r", "b", "t2".into(), 1_000, 2_000).expect("expired");
        assert_eq!(
            next.checkpoint.as_ref().map(|c| c.data.as_str()),
            Some("page=3")
        );
        let released = release(&next, "t2", 2, 2_100).expect("holder");
        assert!(released.checkpoint.is_none());
    }

    /// Each part of the holder's proof is checked on its own: the right token under a
    /// stale generation, a stale token under the right generation, and the right pair
    /// after a release are each fenced.
    #[test]
    fn each_part_of_the_holders_proof_is_checked() {
        let lease = held(0);
        assert!(check_holder(&lease, "t1", 1).is_ok());
        for (token, generation) in [("t1", 2), ("t0", 1)] {
            assert_eq!(
                check_holder(&lease, token, generation)
                    .expect_err("fenced")
                    .code(),
                "WORK_FENCED",
                "{token} under generation {generation}"
            );
        }
        let released = release(&lease, "t1", 1, 10).expect("holder");
        assert_eq!(
            check_holder(&released, "t1", 1)
                .expect_err("released")
                .code(),
            "WORK_FENCED"
        );
    }

    /// A renewal moves the expiry from `now` (a lapsed, unreclaimed lease included) and
    /// leaves everything else, the generation above all, as it was.
    #[test]
    fn renewal_moves_only_the_expiry() {
        let lease = held(0);
        for now in [900, 5_000] {
            let renewed = renew(&lease, "t1", 1, 2_000, now).expect("holder");
            assert_eq!(renewed.expires_at, now + 2_000);
            assert_eq!(
                Lease {
                    expires_at: lease.expires_at,
                    ..renewed
                },
                lease
            );
        }
    }

    /// A release stamps its instant and keeps the row's generation, so the next acquire
    /// is free at once and goes one higher.
    #[test]
    fn release_frees_the_resource_and_keeps_the_generation() {
        let released = release(&held(0), "t1", 1, 10).expect("holder");
        assert_eq!((released.released_at, released.generation), (Some(10), 1));
        assert!(!released.is_live(10));
        let next = acquire(0, Some(&released), "r", "b", "t2".into(), 1_000, 11).expect("free");
        assert_eq!((next.owner_id.as_str(), next.generation), ("b", 2));
    }
}
