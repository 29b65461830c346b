//! Per-view table state and what changes it: selection, keyset paging, mouse clicks,
//! sorting and the `/` filter, and the rebuild of the visible rows from the snapshot's
//! table model. Kept apart from the update function, which only routes actions here.

use super::{App, PageRequest, Role, SortKey, StoreOrder, ViewId, store_filter, views};

/// Per-view table state.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableUi {
    pub selected: usize,
    pub selected_key: Option<String>,
    /// Column index and descending.
    pub sort: Option<(usize, bool)>,
    pub filter: String,
    pub page: Option<PageRequest>,
    /// Rows before this page, tracked while paging (keyset pages carry no offset);
    /// `None` when unknown.
    pub offset: Option<usize>,
    /// The pages passed on the way down a list the store reads in one direction only
    /// (`pages_forward_only`): PageUp goes back to the last of them.
    pub trail: Vec<PageRequest>,
}

/// Whether the store reads `view`'s list in one direction only: the incident lists, newest
/// first by time, and a resource's timeline, oldest first by revision. Every other list
/// reads backwards from a key too.
#[must_use]
pub fn pages_forward_only(view: ViewId) -> bool {
    matches!(view, ViewId::Failovers | ViewId::Fenced | ViewId::Timeline)
}

impl App {
    pub(super) fn move_selection(&mut self, delta: i64) {
        if self.view == ViewId::WorkflowDetail {
            self.tree_move(delta);
            return;
        }
        let len = self.visible.len();
        if len == 0 {
            return;
        }
        let t = self.tables.entry(self.view).or_default();
        let cur = i64::try_from(t.selected).unwrap_or(0);
        let max = i64::try_from(len - 1).unwrap_or(0);
        t.selected = usize::try_from((cur + delta).clamp(0, max)).unwrap_or(0);
        self.remember_selection();
    }

    pub(super) fn remember_selection(&mut self) {
        let key = self.selected_row().map(|r| r.key.clone());
        self.table_mut().selected_key = key;
    }

    pub(super) fn page(&mut self, how: PageMove) {
        if !self.view.is_table() {
            return;
        }
        let limit = self.page_size();
        let (first, last) = self
            .data
            .as_ref()
            .map_or((None, None), |d| (d.first_key.clone(), d.last_key.clone()));
        // A forward page that came back empty (the one after a page that ended the list
        // exactly) goes back from where it was asked to start.
        let first = first.or_else(|| {
            let asked = &self.query.page;
            asked.after.clone().filter(|_| !asked.backwards)
        });
        let (more_before, more_after) = self
            .data
            .as_ref()
            .map_or((false, false), |d| (d.more_before, d.more_after));
        let forward_only = pages_forward_only(self.view);
        let next = match how {
            PageMove::Down if more_after => last.map(|k| PageRequest::after(k, limit)),
            PageMove::Up if more_before && forward_only => Some(
                self.table_mut()
                    .trail
                    .pop()
                    .unwrap_or_else(|| PageRequest::first(limit)),
            ),
            PageMove::Up if more_before => first.map(|k| PageRequest::before(k, limit)),
            PageMove::Home => Some(PageRequest::first(limit)),
            PageMove::End if forward_only => {
                self.say("this list pages from its start: PgDn for more", Role::Muted);
                None
            }
            PageMove::End => Some(PageRequest::last(limit)),
            PageMove::Down => {
                self.say("last page", Role::Muted);
                None
            }
            PageMove::Up => {
                self.say("first page", Role::Muted);
                None
            }
        };
        if let Some(page) = next {
            let fetched = self.data.as_ref().map_or(0, |d| d.fetched);
            let start = views::position::page_start(self, views::position::total(self), fetched);
            let offset = match how {
                PageMove::Down => start.map(|s| s + fetched),
                PageMove::Up => start.map(|s| s.saturating_sub(limit)),
                PageMove::Home | PageMove::End => None,
            };
            let t = self.table_mut();
            match how {
                PageMove::Down if forward_only => {
                    let here = t.page.take().unwrap_or_else(|| PageRequest::first(limit));
                    t.trail.push(here);
                }
                PageMove::Home | PageMove::End => t.trail.clear(),
                PageMove::Down | PageMove::Up => {}
            }
            t.offset = offset;
            t.page = Some(page);
            t.selected = if how == PageMove::End { usize::MAX } else { 0 };
            t.selected_key = None;
        }
    }

    pub(super) fn click(&mut self, column: u16, row: u16) {
        let (w, h) = self.size;
        let [_, tabs, body, _] = views::chrome::layout(ratatui::layout::Rect::new(0, 0, w, h));
        if row == tabs.y {
            if let Some(view) = views::chrome::tab_at(tabs, column, self.view) {
                self.switch(view);
            }
            return;
        }
        if !self.view.is_table() || row < body.y + 1 || row >= body.bottom().saturating_sub(1) {
            return;
        }
        let Some(data) = &self.data else { return };
        if row == body.y + 1 {
            if let Some(c) =
                views::table::column_at(body, data, self.table_ui().sort.map(|(c, _)| c), column)
            {
                self.sort_by(c);
            }
            return;
        }
        let index = usize::from(row - body.y - 2);
        if index < self.visible.len() {
            self.table_mut().selected = index;
            self.remember_selection();
        }
    }

    /// Recomputes the table model, then the filtered / sorted order and the selection.
    pub(super) fn rebuild(&mut self) {
        self.data = self
            .snapshot
            .as_deref()
            .filter(|s| s.query.view == self.view)
            .and_then(|s| views::table(s, self.time_fmt()));
        if self.view == ViewId::Replay {
            // The replay's selection is its cursor.
            let key = self.replay_selected_key();
            self.table_mut().selected_key = key;
        }
        let ui = self.table_ui();
        let Some(data) = &self.data else {
            self.visible.clear();
            return;
        };
        // Only an id prefix on a view whose store read takes none narrows the page here.
        let prefix = store_filter::parse(self.view, &ui.filter)
            .ok()
            .and_then(|f| f.page_prefix().map(str::to_owned));
        let mut visible: Vec<usize> = (0..data.rows.len())
            .filter(|i| {
                data.rows
                    .get(*i)
                    .is_some_and(|r| prefix.as_deref().is_none_or(|p| r.key.starts_with(p)))
            })
            .collect();
        // A store order arrives sorted; only a sort the store cannot give is done here.
        if let Some((col, desc)) = ui.sort.filter(|_| self.store_order().is_none()) {
            let key = |i: &usize| {
                data.rows
                    .get(*i)
                    .and_then(|r| r.cells.get(col))
                    .map_or(SortKey::Num(i64::MIN), |c| c.sort.clone())
            };
            visible.sort_by_key(key);
            if desc {
                visible.reverse();
            }
        }
        let selected = ui
            .selected_key
            .as_ref()
            .and_then(|k| {
                visible
                    .iter()
                    .position(|i| data.rows.get(*i).is_some_and(|r| &r.key == k))
            })
            .unwrap_or(ui.selected)
            .min(visible.len().saturating_sub(1));
        self.visible = visible;
        let t = self.table_mut();
        t.selected = selected;
        self.remember_selection();
    }

    /// `s`: sort by the next column (ascending first), then unsorted.
    pub(super) fn cycle_sort(&mut self) {
        let before = self.store_order();
        let columns = self.data.as_ref().map_or(0, |d| d.columns.len());
        let t = self.table_mut();
        t.sort = match t.sort {
            None if columns > 0 => Some((0, false)),
            Some((c, desc)) if c + 1 < columns => Some((c + 1, desc)),
            _ => None,
        };
        self.sort_changed(before);
    }

    /// `z`: reverse the sort (the first column descending when unsorted).
    pub(super) fn reverse_sort(&mut self) {
        let before = self.store_order();
        let t = self.table_mut();
        t.sort = Some(t.sort.map_or((0, true), |(c, d)| (c, !d)));
        self.sort_changed(before);
    }

    /// Sort by column `c`, or reverse it when it already sorts by `c` (a header click).
    pub(super) fn sort_by(&mut self, c: usize) {
        let before = self.store_order();
        let t = self.table_mut();
        t.sort = match t.sort {
            Some((old, desc)) if old == c => Some((c, !desc)),
            _ => Some((c, false)),
        };
        self.sort_changed(before);
    }

    /// After a sort change: a new store order pages from its first page.
    pub(super) fn sort_changed(&mut self, before: Option<StoreOrder>) {
        if self.store_order() != before {
            let t = self.table_mut();
            t.page = None;
            t.offset = None;
            t.selected = 0;
            t.selected_key = None;
        }
        self.rebuild();
    }

    /// Applies a submitted `/` filter (from the first page), or refuses it on the status
    /// line and keeps the one in force: the filter is parsed by the same grammar as
    /// `inspect --filter`. An empty text clears it.
    pub(super) fn apply_filter(&mut self, text: &str) {
        match store_filter::parse(self.view, text) {
            Ok(_) => {
                let t = self.table_mut();
                text.clone_into(&mut t.filter);
                t.page = None;
                t.selected = 0;
                t.selected_key = None;
                self.rebuild();
            }
            Err(e) => self.say(e.to_string(), Role::Error),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PageMove {
    Up,
    Down,
    Home,
    End,
}
