//! Where a table's page sits and how many rows match, for its title: `rows 51–100 of
//! 1,000,002`. The total is shown only where it is cheap — the incremental counters the
//! overview already reads (work by kind / state / compat, workflows by status) — and never
//! from a count query; where it is not (an owner or id-prefix filter, the other views),
//! the title says only which rows are on screen. The position is tracked as the operator
//! pages (keyset pages carry no offset), so rows committed meanwhile can shift it slightly.

use crate::ops::filter::Filter;
use crate::tui::action::ViewId;
use crate::tui::app::App;
use crate::tui::store_filter;
use crate::tui::text::clean;

/// `1,000,002`.
#[must_use]
pub fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// How many rows match the view's query, when the counters say so.
#[must_use]
pub fn total(app: &App) -> Option<u64> {
    let snapshot = app.snapshot().filter(|s| s.query.view == app.view())?;
    let query = &snapshot.query;
    let overview = &snapshot.overview;
    match app.view() {
        ViewId::Work => {
            let present: Vec<String> = overview.work.iter().map(|w| w.compat.clone()).collect();
            let Some(f) = store_filter::work_filter(
                query.work,
                query.filter.as_ref(),
                &present,
                &snapshot.incompatible_compats,
                snapshot.fleet.fleet(),
            ) else {
                return Some(0);
            };
            if f.owner.is_some() || f.id_prefix.is_some() || !f.facets.is_empty() {
                return None;
            }
            Some(
                overview
                    .work
                    .iter()
                    .filter(|c| f.states.is_empty() || f.states.contains(&c.state))
                    .filter(|c| f.kind.is_none_or(|k| k == c.kind))
                    .filter(|c| f.compats.is_empty() || f.compats.contains(&c.compat))
                    .map(|c| c.count)
                    .sum(),
            )
        }
        ViewId::Workflows => {
            let filter: Option<&Filter> = query.filter.as_ref();
            if filter.is_some_and(|f| f.id_prefix.is_some()) {
                return None;
            }
            let status = filter.and_then(|f| f.status);
            Some(
                overview
                    .workflows
                    .iter()
                    .filter(|(s, _)| status.is_none_or(|want| *s == want))
                    .map(|(_, n)| *n)
                    .sum(),
            )
        }
        _ => None,
    }
}

/// How many rows come before the page on screen: 0 on the first page, `total − rows` on
/// the last (End), otherwise what paging tracked.
#[must_use]
pub fn page_start(app: &App, total: Option<u64>, fetched: usize) -> Option<usize> {
    let ui = app.table_ui();
    match &ui.page {
        None => Some(0),
        Some(p) if p.after.is_none() && !p.backwards => Some(0),
        Some(p) if p.after.is_none() => total.map(|t| {
            usize::try_from(t)
                .unwrap_or(usize::MAX)
                .saturating_sub(fetched)
        }),
        Some(_) => ui.offset,
    }
}

/// `rows 51–100 of 1,000,002`, `rows 51–100`, `0 rows`; `None` before the first page.
#[must_use]
pub fn position(app: &App) -> Option<String> {
    // The timeline pages by revision through one resource's history, not by rows.
    if matches!(app.view(), ViewId::Timeline | ViewId::Replay) {
        return None;
    }
    let data = app.table_data()?;
    let total = total(app);
    let fetched = data.fetched;
    if fetched == 0 {
        return Some(match total {
            Some(t) if t > 0 => format!("0 rows here of {}", thousands(t)),
            _ => "0 rows".into(),
        });
    }
    let start = page_start(app, total, fetched);
    let fetched_u = fetched as u64;
    if let (1, Some(s)) = (fetched, start) {
        let of = total
            .map(|t| format!(" of {}", thousands(t)))
            .unwrap_or_default();
        return Some(format!("row {}{of}", thousands(s as u64 + 1)));
    }
    Some(match (start, total) {
        (Some(s), Some(t)) => format!(
            "rows {}–{} of {}",
            thousands(s as u64 + 1),
            thousands(s as u64 + fetched_u),
            thousands(t)
        ),
        (Some(s), None) => format!(
            "rows {}–{}",
            thousands(s as u64 + 1),
            thousands(s as u64 + fetched_u)
        ),
        (None, Some(t)) => format!("{} rows of {}", fetched, thousands(t)),
        (None, None) => format!("{fetched} rows"),
    })
}

/// The title's filter and sort notes: the filter in force, and — where it is not the
/// store's doing — that it narrows or orders only the page on screen.
#[must_use]
pub fn filter_and_sort(app: &App) -> String {
    let ui = app.table_ui();
    let mut notes = String::new();
    if !ui.filter.is_empty() {
        notes.push_str(&format!("· /{} ", clean(&ui.filter, 30)));
        let on_page =
            store_filter::parse(app.view(), &ui.filter).is_ok_and(|f| f.page_prefix().is_some());
        if let (true, Some(data)) = (on_page, app.table_data()) {
            notes.push_str(&format!(
                "(within page: {} of {}) ",
                app.visible().len(),
                data.fetched
            ));
        }
    }
    match (ui.sort, app.store_order()) {
        (_, Some(order)) => notes.push_str(&format!("· by {} (store order) ", order.name())),
        (Some(_), None) => notes.push_str("· sorted within page "),
        (None, None) => {}
    }
    notes
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::thousands;

    #[test]
    fn thousands_are_grouped() {
        assert_eq!(thousands(0), "0");
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1_000), "1,000");
        assert_eq!(thousands(1_000_002), "1,000,002");
    }
}
