//! The chain over the history (`store/chain.rs`): every provider keeps the link each
//! commit writes and gives it back as written, so the links recompute from the rows and a
//! handle opened later carries the chain on.

use crate::model::work::NewWork;

use super::{Harness, ok};

/// Enqueues, claims and completes `id` through `store`: three commits.
fn run_one(store: &crate::Store, id: &str) {
    ok(
        "enqueue",
        store.enqueue(NewWork::effect(id, "h", "{}"), "k"),
    );
    let item = ok("claim", store.claim(id, "a", "k", 60_000));
    ok("complete", store.complete(id, "a", item.generation, None));
}

pub fn every_commit_writes_a_link_that_recomputes(h: &dyn Harness) {
    let s = h.store();
    let before = ok("revision", s.revision());
    for id in ["c-1", "c-2"] {
        run_one(&s, id);
    }
    let head = ok("revision", s.revision());
    assert_eq!(head, before + 6, "three commits per item");
    for revision in before + 1..=head {
        let link = ok("link", s.chain_link(revision));
        assert!(link.is_some(), "revision {revision} has its link");
    }
    let last = ok("link", s.chain_link(head)).map(|l| l.counts);
    assert_eq!(
        last.map(|c| (c.generations, c.completions)),
        Some((2, 2)),
        "the counts sum the claims and completions"
    );
    let report = ok("verify", s.verify_chain());
    assert!(report.breaks.is_empty(), "{:?}", report.breaks);
    assert_eq!(report.span.map(|(_, last)| last), Some(head));

    // A handle opened later carries the same chain on.
    let again = h.reopen();
    run_one(&again, "c-3");
    let report = ok("verify", again.verify_chain());
    assert!(report.breaks.is_empty(), "{:?}", report.breaks);
    assert_eq!(report.span.map(|(_, last)| last), Some(head + 3));
}
