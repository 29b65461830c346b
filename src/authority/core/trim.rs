//! Retention, driven by the authorities: every poll asks whether the trim interval has
//! passed on the store's clock since this authority's last trim, and if so removes one
//! batch per table (`store/retention.rs`). Several authorities trimming at once delete the
//! same rows at worst, which is harmless; a store failure is counted and retried at the
//! next interval.

use tracing::{debug, warn};

use super::AuthorityCore;

/// Rows removed per table per trim: a short transaction on every provider, and at the
/// default interval far more than any one table grows by in between.
pub const TRIM_BATCH: usize = 500;

impl AuthorityCore {
    /// Trims one batch per table when [`crate::authority::AuthorityConfig::trim_interval_ms`]
    /// has passed since this authority last did; counts the rows in its stats.
    pub fn trim_when_due(&self) {
        let now = self.store.now();
        {
            let mut state = self.state();
            let due = state
                .stats
                .last_trim_at
                .is_none_or(|at| now - at >= self.config.trim_interval_ms);
            if state.stopping || !due {
                return;
            }
            state.stats.last_trim_at = Some(now);
        }
        let out = self.store.trim(&self.config.retention, TRIM_BATCH);
        self.note_store_error(&out);
        let id = self.config.instance_id.as_str();
        match out {
            Ok(report) => {
                self.state().stats.trimmed_rows += report.total();
                if report.total() > 0 {
                    self.log_scope(|| {
                        debug!(
                            instance = id,
                            work = report.work,
                            instances = report.instances,
                            dedup = report.dedup,
                            idempotency = report.idempotency,
                            ingestions = report.ingestions,
                            audit = report.audit,
                            "trimmed"
                        );
                    });
                }
            }
            Err(e) => self.log_scope(|| warn!(instance = id, error = %e, "trim-failed")),
        }
    }
}
