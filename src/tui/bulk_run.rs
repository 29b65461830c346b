//! The dashboard's bulk triage, carried out: the filter is read exactly as `leasehold work
//! requeue|discard|retry-now --filter` reads it (the `/` grammar, `compat:` judged against
//! the running builds), and the run is [`crate::ops::bulk`]'s. Blocking, like every
//! store-side command.

use crate::ops::bulk::{Bulk, Tally, TriageMatches};
use crate::ops::filter::{Filter, Subject};
use crate::ops::live_builds::LiveBuilds;
use crate::rules::triage::Verb;
use crate::store::Store;

/// What `filter` matches now, and the first of it.
///
/// # Errors
/// The filter's refusal, or a store failure, in words.
pub fn preview(store: &Store, verb: Verb, filter: &str) -> Result<Tally, String> {
    with_bulk(store, verb, filter, "", "", |bulk| {
        bulk.preview().map_err(|e| e.to_string())
    })
}

/// Runs `verb` over what `filter` matches, unless more than `confirmed` items match by
/// now (the operator confirmed a count, not a filter): the counts in words, and whether
/// anything was refused.
#[must_use]
pub fn run(
    store: &Store,
    verb: Verb,
    filter: &str,
    (actor, reason): (&str, &str),
    confirmed: usize,
) -> (String, bool) {
    let ran = with_bulk(store, verb, filter, actor, reason, |bulk| {
        let mut tally = bulk.preview().map_err(|e| e.to_string())?;
        if tally.matched > confirmed {
            return Err(format!(
                "now {} items match, not the {confirmed} confirmed; nothing changed",
                tally.matched
            ));
        }
        bulk.apply(&mut tally).map_err(|e| e.to_string())?;
        Ok((bulk.summary(&tally), tally.refused > 0))
    });
    ran.unwrap_or_else(|why| (why, true))
}

fn with_bulk<T>(
    store: &Store,
    verb: Verb,
    filter_text: &str,
    actor: &str,
    reason: &str,
    act: impl FnOnce(&Bulk<'_, TriageMatches>) -> Result<T, String>,
) -> Result<T, String> {
    let filter = Filter::parse(Subject::Work, filter_text).map_err(|e| e.to_string())?;
    let live = LiveBuilds::load(store, store.now()).map_err(|e| e.to_string())?;
    let matched = live
        .work_filter(store, &filter)
        .map_err(|e| e.to_string())?;
    act(&Bulk {
        store,
        action: TriageMatches::new(verb, &filter, matched),
        filter_text,
        actor,
        reason,
    })
}
