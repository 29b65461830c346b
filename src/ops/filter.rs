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
//! - work: `state:G[,G…]` (any of the groups of [`WorkGroup`]: `pending`, `claimed`,
//!   `retry`, `succeeded`, `failed`, `retries-exhausted`, `terminal`, `dead-letter`,
//!   `discarded`; or one of `stranded`, `incompatible`, `no-handler` alone, judged against
//!   the running authorities), `kind:K`, `owner:ID` (the current owner: claimed items
//!   only), `compat:DIGEST-PREFIX`, `compat:compatible`, `compat:incompatible`,
//!   `handler:NAME[,NAME…]`, `code:CODE[,CODE…]` and `class:CLASS[,CLASS…]` (the last
//!   failure's), `id:PREFIX`;
//! - workflows: `status:S` (`running`, `waiting`, `completed`, `failed`, `cancelled`),
//!   `id:PREFIX`;
//! - audit: `actor:NAME` and `action:NAME`, each the whole value (`ops/audit.rs` reads
//!   them), `id:PREFIX`;
//! - every other view: `id:PREFIX` only.
//!
//! `state:failed` names the failures nobody decided: an item a person discarded is
//! matched only by `state:discarded`, so a requeue by `state:failed` never revives one.
//!
//! State, kind, owner, compat and id map onto an index the store already has (`(state,
//! id)`, `(kind, id)`, `(owner_id, id)`, `(compat, id)`, `(status, instance_id)`, the
//! primary key), so a filtered page is an index seek on every provider. Handler, code,
//! class and the failed groups' endings are read off the rows those indexes yield, a
//! bounded number per page (`store/work_facets.rs`).

use crate::ids::check_id;
use crate::model::work::{WorkFacets, WorkFilter, WorkKind, WorkState};
use crate::model::{Ending, FailureClass, InstanceStatus, WorkGroup};

/// What is being filtered: decides which fields are valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Subject {
    Work,
    Workflows,
    Audit,
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
            Self::Audit => "audit",
            Self::Other(name) => name,
        }
    }

    /// The fields this view accepts.
    #[must_use]
    pub fn fields(self) -> &'static [&'static str] {
        match self {
            Self::Work => &[
                "state", "kind", "owner", "compat", "handler", "code", "class", "id",
            ],
            Self::Workflows => &["status", "id"],
            Self::Audit => &["actor", "action", "id"],
            Self::Other(_) => &["id"],
        }
    }

    /// Whether the store applies an id prefix itself (paging the whole store); otherwise
    /// the prefix narrows the rows of the page already read.
    #[must_use]
    pub fn prefix_in_store(self) -> bool {
        matches!(self, Self::Work | Self::Workflows)
    }

    /// Whether the view's read takes the filter (work, workflows, audit); on the others
    /// only an id prefix narrows the page already read.
    #[must_use]
    pub fn read_filtered(self) -> bool {
        matches!(self, Self::Work | Self::Workflows | Self::Audit)
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

/// What the groups that depend on the running authorities are judged against.
pub trait Judge {
    /// Whether a running authority runs under `compat`.
    fn compatible(&self, compat: &str) -> bool;
    /// The handlers some running authority has; `None` when no authority runs.
    fn running_handlers(&self) -> Option<Vec<String>>;
}

/// A parsed filter. Empty fields do not narrow.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub subject: Subject,
    /// Any of these groups.
    pub groups: Vec<WorkGroup>,
    pub kind: Option<WorkKind>,
    /// The current owner (claimed items only).
    pub owner: Option<String>,
    pub compat: Option<CompatTerm>,
    /// Any of these handlers.
    pub handlers: Vec<String>,
    /// The last failure's code is any of these.
    pub codes: Vec<String>,
    /// The last failure's class is any of these.
    pub classes: Vec<FailureClass>,
    /// One workflow status.
    pub status: Option<InstanceStatus>,
    /// The audit entries of this actor, compared whole.
    pub actor: Option<String>,
    /// The audit entries of this action, compared whole.
    pub action: Option<String>,
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
            groups: Vec::new(),
            kind: None,
            owner: None,
            compat: None,
            handlers: Vec::new(),
            codes: Vec::new(),
            classes: Vec::new(),
            status: None,
            actor: None,
            action: None,
            id_prefix: None,
        }
    }

    /// Parses `text` (terms separated by whitespace) for `subject`.
    ///
    /// # Errors
    /// An unknown field (with the valid ones), a field without a value or given twice, or a
    /// value the field does not take (with the valid values).
    pub fn parse(subject: Subject, text: &str) -> Result<Self, FilterError> {
        // A newline or a tab would split a term where the eye sees none.
        if let Some(c) = text.chars().find(|c| c.is_control()) {
            return Err(FilterError(format!(
                "the filter holds the control character U+{:04X}; separate terms with spaces",
                c as u32
            )));
        }
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
            // `state:,` lists no value, as `state:` does: it must not narrow by nothing.
            if values(value).next().is_none() {
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
                let all: Vec<&str> = WorkGroup::ALL.iter().map(|g| g.as_str()).collect();
                for g in values(value) {
                    let group = WorkGroup::parse(&g.to_lowercase())
                        .ok_or_else(|| bad("work state", &all))?;
                    if !self.groups.contains(&group) {
                        self.groups.push(group);
                    }
                }
                if self.groups.len() > 1 && self.groups.iter().any(|g| g.needs_fleet()) {
                    return Err(FilterError(
                        "state: stranded, incompatible and no-handler each stand alone in the term"
                            .into(),
                    ));
                }
            }
            "handler" => {
                for name in values(value) {
                    check_id("handler", name).map_err(|e| FilterError(plain(&e)))?;
                    self.handlers.push(name.to_owned());
                }
            }
            "code" => {
                for code in values(value) {
                    check_id("code", code).map_err(|e| FilterError(plain(&e)))?;
                    self.codes.push(code.to_owned());
                }
            }
            "class" => {
                let all: Vec<&str> = FailureClass::ALL.iter().map(|c| c.as_str()).collect();
                for c in values(value) {
                    let class = FailureClass::parse(&c.to_lowercase())
                        .ok_or_else(|| bad("failure class", &all))?;
                    self.classes.push(class);
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
            "actor" => {
                check_id("actor", value).map_err(|e| FilterError(plain(&e)))?;
                self.actor = Some(value.to_owned());
            }
            "action" => {
                check_id("action", value).map_err(|e| FilterError(plain(&e)))?;
                self.action = Some(value.to_owned());
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
    /// scan); `fleet` judges what the running authorities run.
    #[must_use]
    pub fn work_filter(&self, present: &[String], fleet: &dyn Judge) -> Option<WorkFilter> {
        let mut compats: Vec<String> = match &self.compat {
            None => Vec::new(),
            Some(term) => {
                let chosen: Vec<String> = present
                    .iter()
                    .filter(|d| match term {
                        CompatTerm::Compatible => fleet.compatible(d),
                        CompatTerm::Incompatible => !fleet.compatible(d),
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
        let mut states: Vec<WorkState> = Vec::new();
        let mut facets = WorkFacets {
            handlers: self.handlers.clone(),
            codes: self.codes.clone(),
            classes: self.classes.clone(),
            ..WorkFacets::default()
        };
        for group in &self.groups {
            for state in group.states() {
                if !states.contains(state) {
                    states.push(*state);
                }
            }
            for ending in group.endings() {
                if !facets.endings.contains(ending) {
                    facets.endings.push(*ending);
                }
            }
        }
        if facets.endings.len() >= Ending::ALL.len() {
            facets.endings.clear();
        }
        if let Some(standing) = self.groups.iter().find(|g| g.needs_fleet()) {
            let stranded: Vec<String> = present
                .iter()
                .filter(|d| !fleet.compatible(d))
                .cloned()
                .collect();
            compats = if compats.is_empty() {
                stranded
            } else {
                compats
                    .into_iter()
                    .filter(|d| stranded.contains(d))
                    .collect()
            };
            if compats.is_empty() {
                return None;
            }
            match (standing, fleet.running_handlers()) {
                (WorkGroup::Incompatible, Some(running)) => {
                    facets.handlers = narrow(&facets.handlers, &running)?;
                }
                (WorkGroup::NoHandler, Some(running)) => facets.not_handlers = running,
                (WorkGroup::NoHandler, None) => return None,
                _ => {}
            }
        }
        if self.owner.is_some() {
            // The current owner: only a claimed item has one.
            if !states.is_empty() && !states.contains(&WorkState::Claimed) {
                return None;
            }
            states = vec![WorkState::Claimed];
        }
        Some(WorkFilter {
            states,
            kind: self.kind,
            owner: self.owner.clone(),
            compats,
            id_prefix: self.id_prefix.clone(),
            facets,
        })
    }
}

/// The comma-separated values of a term, empty ones skipped.
fn values(value: &str) -> impl Iterator<Item = &str> {
    value.split(',').filter(|v| !v.is_empty())
}

/// Both lists narrow (`wanted` empty: any of `allowed`); `None` when nothing is left.
fn narrow(wanted: &[String], allowed: &[String]) -> Option<Vec<String>> {
    let kept: Vec<String> = if wanted.is_empty() {
        allowed.to_vec()
    } else {
        wanted
            .iter()
            .filter(|w| allowed.contains(w))
            .cloned()
            .collect()
    };
    (!kept.is_empty()).then_some(kept)
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
        "handler" => "handler:charge-card",
        "code" => "code:TIMEOUT",
        "class" => "class:terminal",
        "status" => "status:waiting",
        "actor" => "actor:ana@ops-host",
        "action" => "action:requeue-work",
        _ => "id:order-",
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Runs the digests starting with `a`, and these handlers (`None`: nobody runs).
    struct Fleet(Option<Vec<String>>);

    impl Judge for Fleet {
        fn compatible(&self, compat: &str) -> bool {
            compat.starts_with('a')
        }
        fn running_handlers(&self) -> Option<Vec<String>> {
            self.0.clone()
        }
    }

    /// Runs everything.
    struct Everyone;

    impl Judge for Everyone {
        fn compatible(&self, _: &str) -> bool {
            true
        }
        fn running_handlers(&self) -> Option<Vec<String>> {
            Some(Vec::new())
        }
    }

    fn refused(subject: Subject, text: &str) -> String {
        Filter::parse(subject, text).unwrap_err().to_string()
    }

    #[test]
    fn fields_parse_into_the_store_filter() {
        let f = Filter::parse(Subject::Work, "state:pending,RETRY kind:effect").unwrap();
        assert_eq!(f.groups, vec![WorkGroup::Pending, WorkGroup::Retry]);
        assert_eq!(f.kind, Some(WorkKind::Effect));
        let w = f.work_filter(&[], &Everyone).unwrap();
        assert_eq!(w.states, vec![WorkState::Pending, WorkState::Retry]);
        assert_eq!(w.id_prefix, None);
        assert!(w.facets.is_empty());

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
            f.work_filter(&[], &Everyone).unwrap().id_prefix.as_deref(),
            Some("effect-01")
        );
        let f = Filter::parse(Subject::Other("leases"), "id:lease-7").unwrap();
        assert_eq!(
            f.page_prefix(),
            Some("lease-7"),
            "elsewhere it narrows the page"
        );
        assert!(refused(Subject::Work, "a b").contains("id: given twice"));
        assert!(refused(Subject::Work, "id:a\nb").contains("control character U+000A"));
        assert!(refused(Subject::Work, "state:failed\tid:x").contains("U+0009"));
    }

    #[test]
    fn unknown_fields_are_refused_with_the_valid_ones() {
        assert_eq!(
            refused(Subject::Work, "bogus:zzz"),
            "the work view cannot filter on \"bogus\": use state:, kind:, owner:, compat:, \
             handler:, code:, class:, id: (or plain text for an id prefix)"
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
            "state: unknown work state \"bogus\": use pending, claimed, retry, succeeded, \
             failed, retries-exhausted, terminal, dead-letter, discarded, stranded, \
             incompatible, no-handler"
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
        let pick = |text: &str| {
            Filter::parse(Subject::Work, text)
                .unwrap()
                .work_filter(&present, &Fleet(Some(vec![])))
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

    #[test]
    fn groups_name_exactly_their_items() {
        let filter = |text: &str, fleet: &Fleet| {
            Filter::parse(Subject::Work, text)
                .unwrap()
                .work_filter(&["aaa".into(), "bbb".into()], fleet)
        };
        let running = Fleet(Some(vec!["h".into()]));
        let w = filter("state:failed", &running).unwrap();
        assert_eq!(w.states, vec![WorkState::Failed]);
        assert!(
            !w.facets.endings.contains(&Ending::Discarded),
            "discarded is named apart"
        );
        let w = filter("state:failed,discarded", &running).unwrap();
        assert!(w.facets.endings.is_empty(), "every ending");
        let w = filter("state:dead-letter", &running).unwrap();
        assert_eq!(w.facets.endings, vec![Ending::UncertainExhausted]);
        let w = filter("state:no-handler", &running).unwrap();
        assert_eq!(
            (w.compats.clone(), w.facets.not_handlers),
            (vec!["bbb".into()], vec!["h".into()])
        );
        assert_eq!(w.states.len(), 3, "unfinished only");
        let w = filter("state:incompatible handler:h,x", &running).unwrap();
        assert_eq!(w.facets.handlers, vec!["h".to_owned()]);
        assert!(
            filter("state:no-handler", &Fleet(None)).is_none(),
            "nobody runs: incompatible"
        );
        assert!(
            filter("state:incompatible", &Fleet(None))
                .unwrap()
                .facets
                .handlers
                .is_empty()
        );
        assert!(refused(Subject::Work, "state:stranded,pending").contains("stand alone"));
        let w = filter("owner:a-1", &running).unwrap();
        assert_eq!(w.states, vec![WorkState::Claimed], "the current owner");
        assert!(filter("owner:a-1 state:succeeded", &running).is_none());
        let w = filter("code:TIMEOUT class:retryable handler:h", &running).unwrap();
        assert_eq!(
            (w.facets.codes, w.facets.classes, w.facets.handlers),
            (
                vec!["TIMEOUT".into()],
                vec![FailureClass::Retryable],
                vec!["h".into()]
            )
        );
        assert!(refused(Subject::Work, "class:bad").contains("use retryable, terminal"));
    }
}
