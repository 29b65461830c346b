//! A poll that would find nothing takes no turn at the write lock: an authority whose last
//! poll found nothing, or that has no free slot, reads first whether a poll could act, and
//! writes only then. What it must still find — new work, a retry coming due, a schedule's
//! boundary — it finds on the poll after it appears.

use leasehold::clock::{Clock, ManualClock};
use leasehold::model::work::NewWork;

use crate::support::runtime::{T0, compat, every_minute, faulty_store, solo};

#[test]
fn idle_polls_write_nothing_and_still_find_new_and_due_work() {
    let clock = ManualClock::new(T0);
    let (backend, s) = faulty_store(&clock);
    let core = solo(&s, 4);
    assert!(
        core.poll().expect("polls").is_empty(),
        "nothing to claim yet"
    );
    let writes = backend.writes();
    for _ in 0..20 {
        clock.advance(10);
        assert!(core.poll().expect("polls").is_empty());
    }
    assert_eq!(
        backend.writes(),
        writes,
        "twenty polls on an empty store each took the write lock"
    );

    // Work enqueued by someone else is claimed by the next poll.
    s.enqueue_batch(vec![NewWork::effect("now", "send-email", "{}")], &compat())
        .expect("enqueues");
    assert_eq!(
        core.poll().expect("polls").len(),
        1,
        "the new item is claimed"
    );

    // An item that becomes eligible later is claimed once its instant has come, not before.
    let later = NewWork {
        not_before: Some(clock.now() + 5_000),
        ..NewWork::effect("later", "send-email", "{}")
    };
    s.enqueue_batch(vec![later], &compat()).expect("enqueues");
    assert!(core.poll().expect("polls").is_empty(), "not eligible yet");
    let writes = backend.writes();
    assert!(core.poll().expect("polls").is_empty());
    assert_eq!(
        backend.writes(),
        writes,
        "a poll before the instant writes nothing"
    );
    clock.advance(5_000);
    assert_eq!(
        core.poll().expect("polls").len(),
        1,
        "claimed at its instant"
    );
}

#[test]
fn a_saturated_authority_takes_the_lock_only_for_a_due_schedule() {
    let clock = ManualClock::new(T0);
    let (backend, s) = faulty_store(&clock);
    every_minute(&s);
    s.enqueue_batch(
        vec![
            NewWork::effect("a", "send-email", "{}"),
            NewWork::effect("b", "send-email", "{}"),
        ],
        &compat(),
    )
    .expect("enqueues");
    // One slot, held by a job that has not finished.
    let core = solo(&s, 1);
    assert_eq!(
        core.poll().expect("polls").len(),
        1,
        "the one slot is taken"
    );
    let fired = core.stats().schedules_fired;
    let writes = backend.writes();
    for _ in 0..20 {
        clock.advance(10);
        assert!(core.poll().expect("polls").is_empty(), "no free slot");
    }
    assert_eq!(
        backend.writes(),
        writes,
        "polls without a free slot or a due schedule took the write lock"
    );
    clock.advance(60_000);
    assert!(core.poll().expect("polls").is_empty(), "still no free slot");
    assert_eq!(
        core.stats().schedules_fired,
        fired + 1,
        "the next boundary was fired"
    );
}
