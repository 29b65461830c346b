//! The one filter grammar, shared by `inspect --filter` and the dashboard's `/` prompt.
//!
//! A filter is whitespace-separated terms, all of which must hold:
//! - `field:value` narrows on a field the view knows ([`Subject::fields`]); an unknown
//!   field is refused with the list of valid ones, never ignored;
//! - a bare word (no `:`) is free text: an **id prefix**, the same as `id:WORD`. On views
//!   whose store read takes a prefix ([`Subject::prefix_in_store`]: work and workflows)
//!   it is a range over the primary key, so it pages through the whole store like any
//!   other filter; elsewhere it narrows the rows already on the page, and the dashboard
//!   says so.
//!
//! Fields, by view:
//! - work: `state:S[,S…]` (any of), `kind:K`, `owner:ID`, `compat:DIGEST-PREFIX`,
//!   `compat:compatible`, `compat:incompatible`, `id:PREFIX`;
//! - workflows: `status:S` (`running`, `waiting`, `completed`, `failed`, `cancelled`),
//!   `id:PREFIX`;
//! - every other view: `id:PREFIX` only.
//!
//! Every field maps onto an index the store already has (`(state, id)`, `(kind, id)`,
//! `(owner_id, id)`, `(compat, id)`, `(status, instance_id)`, the primary key), so a
//! filtered page is an index seek on every provider, never a scan.

use crate::ids::check_id;
use crate::model::InstanceStatus;
use crate::model::work::{WorkFilter, WorkKind, WorkState};

/// What is being filtered: decides which fields are valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    Work,
    Workflows,
    /// Any other table, by its name (for messages).
    Other(&'static str),
}

impl Subject {
    /// The view's name, as the operator types it.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Work => "work",
            Self::Workflows => "workflows",
            Self::Other(name) => name,
        }
    }

    /// The fields this view accepts.
    #[must_use]
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            Self::Work => &["state", "kind", "owner", "compat", "id"],
            Self::Workflows => &["status", "id"],
            Self::Other(_) => &["id"],
        }
    }

    /// Whether the store applies an id prefix itself (paging the whole store); otherwise
    /// the prefix narrows the rows of the page already read.
    #[must_use]
    pub fn prefix_in_store(self) -> bool {
        matches!(self, Self::Work | Self::Workflows)
    }
}

/// How a filter narrows on the compatibility key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompatTerm {
    /// Items some live authority can run.
    Compatible,
    /// Items no live authority can run.
    Incompatible,
    /// Items whose compat digest starts with this.
    Prefix(String),
}

/// A parsed filter. Empty fields do not narrow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub subject: Subject,
    /// Any of these work states.
    pub states: Vec<WorkState>,
    pub kind: Option<WorkKind>,
    pub owner: Option<String>,
    pub compat: Option<CompatTerm>,
    /// One workflow status.
    pub status: Option<InstanceStatus>,
    /// Rows whose id starts with this (free text, or `id:`).
    pub id_prefix: Option<String>,
}

/// Why a filter was refused: one line for the status line or stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FilterError(pub String);

impl std::fmt::Display for FilterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for FilterError {}

/// Shows an operator's text in a message without letting it act on the terminal.
fn shown(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .take(40)
        .collect();
    format!("{clean:?}")
}

impl Filter {
    /// A filter that narrows nothing.
    #[must_use]
    pub fn none(subject: Subject) -> Self {
        Self {
            subject,
            states: Vec::new(),
            kind: None,
            owner: None,
            compat: None,
            status: None,
            id_prefix: None,
        }
    }

    /// Parses `text` (terms separated by whitespace) for `subject`.
    ///
    /// # Errors
    /// An unknown field (with the valid ones), a field without a value or given twice, or a
    /// value the field does not take (with the valid values).
    pub fn parse(subject: Subject, text: &str) -> Result<Self, FilterError> {
        let mut filter = Self::none(subject);
        let mut seen: Vec<String> = Vec::new();
        for term in text.split_whitespace() {
            let (field, value) = match term.split_once(':') {
                Some((field, value)) => (field.to_lowercase(), value),
                None => ("id".to_owned(), term),
            };
            if !subject.fields().contains(&field.as_str()) {
                return Err(FilterError(format!(
                    "the {} view cannot filter on {}: use {} (or plain text for an id prefix)",
                    subject.name(),
                    shown(&field),
                    subject
                        .fields()
                        .iter()
                        .map(|f| format!("{f}:"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            if value.is_empty() {
                return Err(FilterError(format!(
                    "{field}: needs a value, e.g. {}",
                    example(&field)
                )));
            }
            if seen.contains(&field) {
                return Err(FilterError(format!(
                    "{field}: given twice; list several values in one term, e.g. state:pending,retry"
                )));
            }
            seen.push(field.clone());
            filter.set(&field, value)?;
        }
        Ok(filter)
    }

    fn set(&mut self, field: &str, value: &str) -> Result<(), FilterError> {
        let bad = |what: &str, valid: &[&str]| {
            FilterError(format!(
                "{field}: unknown {what} {}: use {}",
                shown(value),
                valid.join(", ")
            ))
        };
        match field {
            "state" => {
                for s in value.split(',').filter(|s| !s.is_empty()) {
                    let state = WorkState::parse(&s.to_lowercase()).ok_or_else(|| {
                        let all: Vec<&str> = WorkState::ALL.iter().map(|s| s.as_str()).collect();
                        bad("work state", &all)
                    })?;
                    if !self.states.contains(&state) {
                        self.states.push(state);
                    }
                }
            }
            "kind" => {
                let all: Vec<&str> = WorkKind::ALL.iter().map(|k| k.as_str()).collect();
                self.kind =
                    Some(WorkKind::parse(&value.to_lowercase()).ok_or_else(|| bad("kind", &all))?);
            }
            "status" => {
                let all: Vec<&str> = InstanceStatus::ALL.iter().map(|s| s.as_str()).collect();
                self.status = Some(
                    InstanceStatus::parse(&value.to_lowercase())
                        .ok_or_else(|| bad("workflow status", &all))?,
                );
            }
            "owner" => {
                check_id("owner", value).map_err(|e| FilterError(plain(&e)))?;
                self.owner = Some(value.to_owned());
            }
            "compat" => {
                self.compat = Some(match value.to_lowercase().as_str() {
                    "compatible" => CompatTerm::Compatible,
                    "incompatible" => CompatTerm::Incompatible,
                    _ => CompatTerm::Prefix(value.to_owned()),
                });
            }
            _ => {
                check_id("id prefix", value).map_err(|e| FilterError(plain(&e)))?;
                self.id_prefix = Some(value.to_owned());
            }
        }
        Ok(())
    }

    /// Whether nothing narrows.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        *self == Self::none(self.subject)
    }

    /// The id prefix to apply to the rows of a page, when the store does not apply it.
    #[must_use]
    pub fn page_prefix(&self) -> Option<&str> {
        self.id_prefix
            .as_deref()
            .filter(|_| !self.subject.prefix_in_store())
    }

    /// The store's [`WorkFilter`] for this filter, or `None` when it can match nothing
    /// (e.g. `compat:incompatible` while every build present is run by a live authority).
    /// `present` lists the compat digests the store holds (from its counters, never a
    /// scan); `compatible` says whether a live authority runs a digest.
    #[must_use]
    pub fn work_filter(
        &self,
        present: &[String],
        compatible: impl Fn(&str) -> bool,
    ) -> Option<WorkFilter> {
        let compats: Vec<String> = match &self.compat {
            None => Vec::new(),
            Some(term) => {
                let chosen: Vec<String> = present
                    .iter()
                    .filter(|d| match term {
                        CompatTerm::Compatible => compatible(d),
                        CompatTerm::Incompatible => !compatible(d),
                        CompatTerm::Prefix(p) => d.starts_with(p.as_str()),
                    })
                    .cloned()
                    .collect();
                if chosen.is_empty() {
                    return None;
                }
                chosen
            }
        };
        Some(WorkFilter {
            states: self.states.clone(),
            kind: self.kind,
            owner: self.owner.clone(),
            compats,
            id_prefix: self.id_prefix.clone(),
        })
    }
}

/// A library error's message without its code (the filter names its own field).
fn plain(e: &crate::Error) -> String {
    let text = e.to_string();
    text.split_once(": ")
        .map_or(text.clone(), |(_, rest)| rest.to_owned())
}

fn example(field: &str) -> &'static str {
    match field {
        "state" => "state:failed",
        "kind" => "kind:effect",
        "owner" => "owner:auth-a",
        "compat" => "compat:incompatible",
        "status" => "status:waiting",
        _ => "id:order-",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn refused(subject: Subject, text: &str) -> String {
        Filter::parse(subject, text).unwrap_err().to_string()
    }

    #[test]
    fn fields_parse_into_the_store_filter() {
        let f = Filter::parse(Subject::Work, "state:pending,RETRY kind:effect owner:a-1").unwrap();
        assert_eq!(f.states, vec![WorkState::Pending, WorkState::Retry]);
        assert_eq!(f.kind, Some(WorkKind::Effect));
        assert_eq!(f.owner.as_deref(), Some("a-1"));
        let w = f.work_filter(&[], |_| true).unwrap();
        assert_eq!(w.states, f.states);
        assert_eq!(w.id_prefix, None);

        let f = Filter::parse(Subject::Workflows, "Status:waiting").unwrap();
        assert_eq!(f.status, Some(InstanceStatus::Waiting));
        assert!(Filter::parse(Subject::Work, "  ").unwrap().is_empty());
    }

    #[test]
    fn free_text_is_an_id_prefix() {
        let f = Filter::parse(Subject::Work, "effect-01 state:failed").unwrap();
        assert_eq!(f.id_prefix.as_deref(), Some("effect-01"));
        assert_eq!(
            f.page_prefix(),
            None,
            "the store applies it on the work view"
        );
        assert_eq!(
            f.work_filter(&[], |_| true).unwrap().id_prefix.as_deref(),
            Some("effect-01")
        );
        let f = Filter::parse(Subject::Other("leases"), "id:lease-7").unwrap();
        assert_eq!(
            f.page_prefix(),
            Some("lease-7"),
            "elsewhere it narrows the page"
        );
        assert!(refused(Subject::Work, "a b").contains("id: given twice"));
    }

    #[test]
    fn unknown_fields_are_refused_with_the_valid_ones() {
        assert_eq!(
            refused(Subject::Work, "bogus:zzz"),
            "the work view cannot filter on \"bogus\": use state:, kind:, owner:, compat:, id: \
             (or plain text for an id prefix)"
        );
        assert!(refused(Subject::Workflows, "state:failed").contains("use status:, id:"));
        assert!(refused(Subject::Other("leases"), "owner:a").contains("the leases view"));
        let hostile = refused(Subject::Work, "\u{1b}[2J:x");
        assert!(!hostile.contains('\u{1b}'), "{hostile:?}");
    }

    #[test]
    fn bad_values_are_refused_with_the_valid_ones() {
        assert_eq!(
            refused(Subject::Work, "state:bogus"),
            "state: unknown work state \"bogus\": use pending, claimed, retry, succeeded, failed"
        );
        assert!(refused(Subject::Work, "kind:x").contains("use effect, schedule, cursor"));
        assert!(refused(Subject::Workflows, "status:done").contains("use running, waiting"));
        assert!(refused(Subject::Work, "state:").contains("state: needs a value"));
        assert!(refused(Subject::Work, "state:failed state:retry").contains("given twice"));
        assert!(refused(Subject::Work, "owner:a\u{202e}b").contains("owner: holds U+202E"));
        assert!(refused(Subject::Work, &"x".repeat(300)).contains("id prefix: is 300 bytes"));
    }

    #[test]
    fn compat_terms_choose_among_the_digests_present() {
        let present = ["aaa1".to_owned(), "aab2".to_owned(), "bbb3".to_owned()];
        let live = |d: &str| d.starts_with('a');
        let pick = |text: &str| {
            Filter::parse(Subject::Work, text)
                .unwrap()
                .work_filter(&present, live)
                .map(|w| w.compats)
        };
        assert_eq!(pick("compat:aa"), Some(vec!["aaa1".into(), "aab2".into()]));
        assert_eq!(pick("compat:incompatible"), Some(vec!["bbb3".into()]));
        assert_eq!(
            pick("compat:compatible"),
            Some(vec!["aaa1".into(), "aab2".into()])
        );
        assert_eq!(pick("compat:zz"), None, "matches nothing");
        assert_eq!(pick("state:failed"), Some(vec![]), "no compat term: any");
    }
}
