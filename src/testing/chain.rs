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

/// A trim keeps what `chain::trims_link` says it keeps, on every provider: the links from
/// the kept mark on, every milestone's within the span below it, and below that only the
/// sparse milestones'. The links are written at revisions far above the store's own, so
/// the rule meets each case without millions of commits.
pub fn a_trim_keeps_the_milestones_links_and_no_other(h: &dyn Harness) {
    use crate::store::chain::{MILESTONE, sparse_below, trims_link};
    let s = h.store();
    run_one(&s, "t-1");
    let keep_from = 40 * MILESTONE * 64 + 5;
    let sparse = sparse_below(keep_from);
    let sparse_milestone = sparse - sparse % (64 * MILESTONE);
    let revisions = [
        sparse_milestone,                        // a sparse milestone below the span: kept
        sparse_milestone - MILESTONE,            // a milestone below the span: trimmed
        sparse + MILESTONE - sparse % MILESTONE, // a milestone within the span: kept
        keep_from - 1,                           // no milestone, below the mark: trimmed
        keep_from,                               // the mark: kept
        keep_from + 1,
    ];
    let template = ok("link", s.chain_link(ok("revision", s.revision())))
        .expect("the store's own head has a link");
    ok(
        "put links",
        s.write(|tx, _| {
            for revision in revisions {
                tx.put_link(&crate::model::ChainLink {
                    revision,
                    ..template.clone()
                })?;
            }
            Ok(())
        }),
    );
    ok("trim", s.write(|tx, _| tx.trim_links(keep_from)));
    for revision in revisions {
        let kept = ok("link", s.chain_link(revision)).is_some();
        assert_eq!(
            kept,
            !trims_link(revision, keep_from),
            "revision {revision}: kept {kept}"
        );
    }
    assert_eq!(
        revisions.map(|r| trims_link(r, keep_from)),
        [false, true, false, true, false, false],
        "the cases meet each branch of the rule"
    );
}
