//! What the reader asks the store for a filtered table: the `/` filter (parsed once by
//! [`crate::ops::filter`]) combined with the work view's quick filter, as one store read
//! that pages through every matching row, never a filter over the visible page.

use super::action::{ViewId, WorkQuick};
use crate::model::work::{WorkFilter, WorkState};
use crate::model::{Ending, WorkGroup};
use crate::ops::filter::{Filter, FilterError, Judge, Subject};
use crate::store::WorkOrder;

/// What the filter grammar knows a view as.
#[must_use]
pub fn subject(view: ViewId) -> Subject {
    match view {
        ViewId::Work => Subject::Work,
        ViewId::Workflows => Subject::Workflows,
        ViewId::Audit => Subject::Audit,
        other => Subject::Other(other.name()),
    }
}

/// An order the store gives a table through an index (ascending, then by id).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreOrder {
    Work(WorkOrder),
    WorkflowStatus,
}

impl StoreOrder {
    /// The column's name.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Work(order) => order.name(),
            Self::WorkflowStatus => "status",
        }
    }

    /// The order a sort on `column` of `view` asks for, if the store can give it.
    #[must_use]
    pub fn for_sort(view: ViewId, column: &str, descending: bool) -> Option<Self> {
        match (view, column, descending) {
            (ViewId::Work, "state", false) => Some(Self::Work(WorkOrder::State)),
            (ViewId::Work, "kind", false) => Some(Self::Work(WorkOrder::Kind)),
            (ViewId::Workflows, "status", false) => Some(Self::WorkflowStatus),
            _ => None,
        }
    }
}

/// Parses a `/` filter typed on `view`.
///
/// # Errors
/// The grammar's refusal (an unknown field with the valid ones, a bad value).
pub fn parse(view: ViewId, text: &str) -> Result<Filter, FilterError> {
    Filter::parse(subject(view), text)
}

/// The states a quick filter narrows to (empty: any).
fn quick_states(quick: WorkQuick) -> Vec<WorkState> {
    match quick {
        WorkQuick::All => Vec::new(),
        WorkQuick::Pending => vec![WorkState::Pending],
        WorkQuick::Claimed => vec![WorkState::Claimed],
        WorkQuick::Retry => vec![WorkState::Retry],
        WorkQuick::Failed => vec![WorkState::Failed],
        WorkQuick::Incompatible => vec![WorkState::Pending, WorkState::Retry, WorkState::Claimed],
    }
}

/// Both lists narrow: their intersection (either empty means "any").
fn both<T: Clone + PartialEq>(a: &[T], b: &[T]) -> Option<Vec<T>> {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => Some(b.to_vec()),
        (_, true) => Some(a.to_vec()),
        _ => {
            let kept: Vec<T> = a.iter().filter(|x| b.contains(x)).cloned().collect();
            (!kept.is_empty()).then_some(kept)
        }
    }
}

/// The store filter for the work view, or `None` when nothing can match. `present` lists
/// the compat digests the counters hold; `incompatible` those no live authority runs
/// (the overview's definition, for the quick filter); `fleet` judges the typed filter's
/// terms as every other reader does.
#[must_use]
pub fn work_filter(
    quick: WorkQuick,
    filter: Option<&Filter>,
    present: &[String],
    incompatible: &[String],
    fleet: &dyn Judge,
) -> Option<WorkFilter> {
    let typed = match filter {
        Some(f) => f.work_filter(present, fleet)?,
        None => WorkFilter::default(),
    };
    let quick_compats: &[String] = if quick == WorkQuick::Incompatible {
        if incompatible.is_empty() {
            return None;
        }
        incompatible
    } else {
        &[]
    };
    // The quick filter `failed` is the vocabulary's `failed`: a discarded item is not in it.
    let quick_endings: &[Ending] = if quick == WorkQuick::Failed {
        WorkGroup::Failed.endings()
    } else {
        &[]
    };
    let mut facets = typed.facets.clone();
    facets.endings = both(&typed.facets.endings, quick_endings)?;
    Some(WorkFilter {
        states: both(&typed.states, &quick_states(quick))?,
        compats: both(&typed.compats, quick_compats)?,
        facets,
        ..typed
    })
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::ops::filter::Subject;

    /// Runs `new` only, and every handler.
    struct NewOnly;

    impl Judge for NewOnly {
        fn compatible(&self, compat: &str) -> bool {
            compat == "new"
        }
        fn running_handlers(&self) -> Option<Vec<String>> {
            Some(Vec::new())
        }
    }

    #[test]
    fn the_quick_filter_and_the_typed_one_both_narrow() {
        let parsed = |t: &str| Filter::parse(Subject::Work, t).unwrap();
        let failed = parsed("state:failed,retry eff-");
        let w = work_filter(WorkQuick::All, Some(&failed), &[], &[], &NewOnly).unwrap();
        assert_eq!(w.states, vec![WorkState::Failed, WorkState::Retry]);
        assert_eq!(w.id_prefix.as_deref(), Some("eff-"));
        let w = work_filter(WorkQuick::Retry, Some(&failed), &[], &[], &NewOnly).unwrap();
        assert_eq!(w.states, vec![WorkState::Retry]);
        assert!(work_filter(WorkQuick::Pending, Some(&failed), &[], &[], &NewOnly).is_none());
        let w = work_filter(WorkQuick::Failed, None, &[], &[], &NewOnly).unwrap();
        assert!(!w.facets.endings.contains(&Ending::Discarded));
        let w = work_filter(WorkQuick::Claimed, None, &[], &[], &NewOnly).unwrap();
        assert_eq!(w.states, vec![WorkState::Claimed]);

        let present = ["old".to_owned(), "new".to_owned()];
        let old = ["old".to_owned()];
        let w = work_filter(WorkQuick::Incompatible, None, &present, &old, &NewOnly).unwrap();
        assert_eq!(w.compats, old.to_vec());
        assert!(work_filter(WorkQuick::Incompatible, None, &present, &[], &NewOnly).is_none());
        let w = work_filter(
            WorkQuick::All,
            Some(&parsed("compat:incompatible")),
            &present,
            &old,
            &NewOnly,
        );
        assert_eq!(w.unwrap().compats, old.to_vec());
        let w = work_filter(
            WorkQuick::All,
            Some(&parsed("compat:compatible")),
            &present,
            &old,
            &NewOnly,
        );
        assert_eq!(w.unwrap().compats, vec!["new".to_owned()]);
    }
}
