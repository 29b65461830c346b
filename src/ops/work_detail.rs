//! One work item in full, as `leasehold work show` and the dashboard's describe state it:
//! the item (its payload and result among its fields), the errors of its attempts, the
//! grants of its claims, and the retry policies the registered authorities apply to its
//! handler — so the budget an item shows can be read beside the caps that set it.

use serde::Serialize;

use crate::error::Result;
use crate::model::work::Ending;
use crate::model::{AttemptError, Grant, WorkItem};
use crate::rules::retry::RetryPolicy;
use crate::store::Store;

/// How many of an item's grants are shown: the newest.
pub const GRANTS_SHOWN: usize = 20;

/// One item with what the store keeps about its attempts.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkDetail {
    pub item: WorkItem,
    /// Why a failed item ended (`discarded`, `terminal`, `retries-exhausted`,
    /// `uncertain-exhausted`; `null` for any other state), as `inspect work --json` names
    /// it: the item's own `state` says only `failed`.
    pub ending: Option<&'static str>,
    /// Newest first (`model/attempt_error.rs` bounds them).
    pub attempt_errors: Vec<AttemptError>,
    /// The newest [`GRANTS_SHOWN`] claims of it, newest first.
    pub grants: Vec<Grant>,
    /// The retry policy each registered, not stopped authority applies to its handler
    /// (none: the default backoff), by instance id.
    pub policies: Vec<AppliedPolicy>,
}

/// The policy one authority applies to the item's handler.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AppliedPolicy {
    pub authority: String,
    pub policy: RetryPolicy,
}

impl WorkDetail {
    /// Item `id` in full; `None` when there is no such item. The item, its errors and its
    /// grants are read in one transaction, so they agree.
    ///
    /// # Errors
    /// A store failure.
    pub fn load(store: &Store, id: &str) -> Result<Option<Self>> {
        let read = store.read(|tx| {
            let Some(item) = tx.work(id)? else {
                return Ok(None);
            };
            Ok(Some((
                item,
                tx.attempt_errors(id)?,
                tx.latest_grants(id, GRANTS_SHOWN)?,
            )))
        })?;
        let Some((item, attempt_errors, grants)) = read else {
            return Ok(None);
        };
        let policies = store
            .registrations()?
            .into_iter()
            .filter(|a| a.stopped_at.is_none())
            .filter_map(|a| {
                let policy = policy_of(&a.config, &item.handler)?;
                Some(AppliedPolicy {
                    authority: a.instance_id,
                    policy,
                })
            })
            .collect();
        Ok(Some(Self {
            ending: item.ending().map(Ending::code),
            item,
            attempt_errors,
            grants,
            policies,
        }))
    }
}

/// The retry policy a registered config (its JSON) gives `handler`, if it gives one.
fn policy_of(config: &str, handler: &str) -> Option<RetryPolicy> {
    let config: serde_json::Value = serde_json::from_str(config).ok()?;
    serde_json::from_value(config.get("retry")?.get(handler)?.clone()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_registered_config_names_its_handlers_policies() {
        let config = crate::authority::AuthorityConfig::new("a", "v1")
            .with_retry("charge", RetryPolicy::default())
            .to_json();
        assert_eq!(policy_of(&config, "charge"), Some(RetryPolicy::default()));
        assert_eq!(policy_of(&config, "other"), None);
        assert_eq!(policy_of("not json", "charge"), None);
    }
}
