//! Invariant 12 (docs/ARCHITECTURE.md#checker): an idempotency key names one work item.
//! An enqueue looks its key up in the writing transaction, so a store this build wrote
//! holds each key once; a store an older build wrote may hold one twice (it deduplicated
//! by id only), and a provider deduplicating on the key would then run one of the two
//! effects at most. The key index is read in key order a page at a time, so items sharing
//! a key come next to each other and only the current key is kept between pages, whatever
//! the store's size.

use super::Findings;
use super::codes::IDEMPOTENCY_KEY_SHARED;
use crate::error::Result;
use crate::store::Store;

/// Reports every item holding a key an item with a lower id holds too.
///
/// # Errors
/// A store failure while reading.
pub(super) fn scan(store: &Store, page: usize, findings: &mut Findings) -> Result<()> {
    let mut after: Option<(String, String)> = None;
    // The key being read and the item that holds it first (lowest id).
    let mut first: Option<(String, String)> = None;
    loop {
        let from = after.as_ref().map(|(k, id)| (k.as_str(), id.as_str()));
        let rows = store.read(|tx| tx.work_keys(from, page))?;
        for (key, id) in &rows {
            match &first {
                Some((k, holder)) if k == key => one_item_per_key(key, holder, id, findings),
                _ => first = Some((key.clone(), id.clone())),
            }
        }
        if rows.len() < page {
            return Ok(());
        }
        after = rows.last().cloned();
    }
}

/// `second` holds `key`, which `first` holds already.
fn one_item_per_key(key: &str, first: &str, second: &str, findings: &mut Findings) {
    findings.push(
        IDEMPOTENCY_KEY_SHARED,
        vec![key.to_owned(), first.to_owned(), second.to_owned()],
        format!(
            "work items {first} and {second} both hold idempotency key {key}: a key names one effect, so a provider deduplicating on it runs at most one of them"
        ),
    );
}
