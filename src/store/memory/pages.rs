//! Keyset pages over the memory store's ordered maps: the rows strictly after (or, backwards,
//! before) a page's key, in key order, as the SQL providers read them from an index.

use std::collections::BTreeMap;
use std::ops::Bound;

use crate::model::PageRequest;

pub(super) fn page_of<'m, V: Clone + 'm>(
    map: &'m BTreeMap<String, V>,
    page: &PageRequest,
    keep: impl Fn(&V) -> bool,
) -> Vec<V> {
    page_in(
        |bounds| map.range::<str, _>(bounds).map(|(_, v)| v),
        page,
        keep,
    )
}

/// A page of the rows `range` gives for bounds on their keys, in key order.
pub(super) fn page_in<'m, 'p, V: Clone + 'm, I: DoubleEndedIterator<Item = &'m V>>(
    range: impl FnOnce((Bound<&'p str>, Bound<&'p str>)) -> I,
    page: &'p PageRequest,
    keep: impl Fn(&V) -> bool,
) -> Vec<V> {
    let limit = page.limit.max(1);
    let key = page
        .after
        .as_deref()
        .map_or(Bound::Unbounded, Bound::Excluded);
    if page.backwards {
        let mut rows: Vec<V> = range((Bound::Unbounded, key))
            .rev()
            .filter(|v| keep(v))
            .take(limit)
            .cloned()
            .collect();
        rows.reverse();
        rows
    } else {
        range((key, Bound::Unbounded))
            .filter(|v| keep(v))
            .take(limit)
            .cloned()
            .collect()
    }
}

pub(super) fn numeric_page<V: Clone>(map: &BTreeMap<i64, V>, page: &PageRequest) -> Vec<V> {
    let limit = page.limit.max(1);
    let key = page.after.as_ref().and_then(|k| k.parse::<i64>().ok());
    if page.backwards {
        let upper = key.map_or(Bound::Unbounded, Bound::Excluded);
        let mut rows: Vec<V> = map
            .range((Bound::Unbounded, upper))
            .rev()
            .take(limit)
            .map(|(_, v)| v.clone())
            .collect();
        rows.reverse();
        rows
    } else {
        let lower = key.map_or(Bound::Unbounded, Bound::Excluded);
        map.range((lower, Bound::Unbounded))
            .take(limit)
            .map(|(_, v)| v.clone())
            .collect()
    }
}
