//! What operators are told about retention, once for `inspect overview` and the
//! dashboard: the policy the running authorities trim by (read from their registration
//! rows) and the first revision of the checker's history still kept whole.

use serde::Serialize;

use crate::model::Authority;
use crate::store::RetentionPolicy;

/// The retention line's facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RetentionView {
    /// The policy of the first running authority (by id); `None` when none runs, so
    /// nothing trims.
    pub policy: Option<RetentionPolicy>,
    /// How many running authorities trim by another policy than that one.
    pub differing: usize,
    /// The first revision whose grants and writes are all kept (1: nothing trimmed yet).
    pub history_from_revision: u64,
}

impl RetentionView {
    /// From the registered `authorities` and the store's retention mark (0: none).
    #[must_use]
    pub fn read(authorities: &[Authority], history_from: u64) -> Self {
        let mut policies = authorities
            .iter()
            .filter(|a| a.stopped_at.is_none())
            .map(RetentionPolicy::registered_by);
        let policy = policies.next();
        let differing = policies.filter(|p| Some(p) != policy.as_ref()).count();
        Self {
            policy,
            differing,
            history_from_revision: history_from.max(1),
        }
    }

    /// `finished 7d, audit 30d, dedup 7d; history from revision 1`.
    #[must_use]
    pub fn line(&self) -> String {
        let policy = self.policy.as_ref().map_or_else(
            || "no running authority trims".to_owned(),
            RetentionPolicy::summary,
        );
        let differ = match self.differing {
            0 => String::new(),
            n => format!(
                " ({n} other authorit{} differ)",
                if n == 1 { "y" } else { "ies" }
            ),
        };
        format!(
            "{policy}{differ}; history from revision {}",
            self.history_from_revision
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authority::AuthorityConfig;

    fn authority(id: &str, config: &AuthorityConfig, stopped: bool) -> Authority {
        Authority {
            instance_id: id.into(),
            compat: "c".into(),
            build: "v1".into(),
            config: config.to_json(),
            started_at: 0,
            heartbeat_at: 0,
            stopped_at: stopped.then_some(1),
            host: "h".into(),
            pid: 1,
            published: crate::model::Published::default(),
        }
    }

    #[test]
    fn the_line_names_the_running_policy_and_where_history_starts() {
        let base = AuthorityConfig::new("a-1", "v1");
        let mut short = base.clone();
        short.retention.finished_ms = 3_600_000;
        short
            .retention
            .dedup_by_source
            .insert("stripe".into(), 30 * 86_400_000);
        let view = RetentionView::read(&[authority("a-1", &short, false)], 0);
        assert_eq!(
            view.line(),
            "finished 1h, audit 30d, dedup 7d (stripe 30d); history from revision 1"
        );
        let mixed = [
            authority("a-1", &base, false),
            authority("a-2", &short, false),
            authority("a-3", &short, true),
        ];
        assert_eq!(
            RetentionView::read(&mixed, 4_096).line(),
            "finished 7d, audit 30d, dedup 7d (1 other authority differ); history from revision 4096"
        );
        assert_eq!(
            RetentionView::read(&[authority("a-3", &short, true)], 0).line(),
            "no running authority trims; history from revision 1"
        );
        let old_row = Authority {
            config: "{\"instanceId\":\"a-9\"}".into(),
            ..authority("a-9", &base, false)
        };
        assert_eq!(
            RetentionView::read(&[old_row], 0).policy,
            Some(RetentionPolicy::default()),
            "a row without retention trims by the defaults"
        );
    }
}
