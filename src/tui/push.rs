//! The dashboard's side of pushed commits: a thread holds the store's commit feed (where
//! the provider has one) and wakes the reader on every commit, so a change shows within
//! one frame instead of at the next poll. The feed's session can fail; the thread then
//! opens a new one after a pause, and the reader's polling covers the gap.

use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::Notify;

use crate::store::{Capability, CommitFeed, Store};

/// How long one wait on the feed lasts: also how soon the thread notices the reader
/// has gone.
const WAIT: Duration = Duration::from_millis(500);

/// The pause before a failed feed is opened again.
const REOPEN_AFTER: Duration = Duration::from_secs(2);

/// Starts the feed thread for `store`; `None` when the provider does not push its
/// commits (the reader polls). The feed is opened on the thread — never on the caller's,
/// which may be driving async tasks — and the thread ends once the returned handle is
/// dropped.
#[must_use]
pub fn spawn(store: &Store) -> Option<Arc<Notify>> {
    if !store.capabilities().contains(&Capability::PushesCommits) {
        return None;
    }
    let wake = Arc::new(Notify::new());
    let weak = Arc::downgrade(&wake);
    let store = store.clone();
    std::thread::Builder::new()
        .name("commit-feed".into())
        .spawn(move || follow(&store, &weak))
        .ok()?;
    Some(wake)
}

/// Holds a feed open while the reader lives, opening a new one after a failure.
fn follow(store: &Store, wake: &Weak<Notify>) {
    let mut feed: Option<Box<dyn CommitFeed>> = None;
    while wake.strong_count() > 0 {
        let Some(open) = feed.as_mut() else {
            feed = store.commit_feed().ok().flatten();
            match (&feed, wake.upgrade()) {
                // Commits may have been missed while no feed was open.
                (Some(_), Some(notify)) => notify.notify_one(),
                (None, _) => std::thread::sleep(REOPEN_AFTER),
                (Some(_), None) => return,
            }
            continue;
        };
        match open.next_commit(WAIT) {
            Ok(Some(_)) => match wake.upgrade() {
                Some(notify) => notify.notify_one(),
                None => return,
            },
            Ok(None) => {}
            Err(_) => feed = None,
        }
    }
}

/// Completes on the next pushed commit; never, without a feed.
pub async fn next(wake: Option<&Notify>) {
    match wake {
        Some(notify) => notify.notified().await,
        None => std::future::pending().await,
    }
}
