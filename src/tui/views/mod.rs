//! Rendering: pure functions from [`App`] and its theme to a frame. No I/O, no clock reads,
//! no panics on tiny areas. One file per view; this module holds the frame layout (header,
//! tabs, body, footer, overlays) and the row model the table views share.
//!
//! Table views turn a snapshot into [`TableData`] (columns, rows with a page key, cell
//! roles, detail pairs); filtering, sorting, selection and flashing are done once, in the
//! app, over that model — so every table behaves the same.

pub mod audit;
pub mod authorities;
pub mod builds;
pub mod chrome;
pub mod cursors;
pub mod describe;
pub mod dialog;
pub mod events;
pub mod failovers;
pub mod fenced;
pub mod help;
pub mod horizon;
pub mod leases;
pub mod overview;
pub mod position;
pub mod replay;
pub mod schedules;
pub mod table;
pub mod ticker;
pub mod timeline;
pub mod triage;
pub mod work;
pub mod workflow_detail;
pub mod workflows;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};

use super::app::{App, Overlay};
use super::snapshot::{Snapshot, ViewData};
use super::theme::Role;
use crate::foundation::timefmt::TimeFmt;

/// Rows of chrome around a table body: header, tabs, footer, two borders, column header.
pub const CHROME_ROWS: u16 = 6;

/// One column of a table view. Lower `priority` columns survive narrow terminals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Column {
    pub name: &'static str,
    pub width: u16,
    pub priority: u8,
}

pub const fn col(name: &'static str, width: u16, priority: u8) -> Column {
    Column {
        name,
        width,
        priority,
    }
}

/// How a cell sorts.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum SortKey {
    Num(i64),
    Text(String),
}

/// One cell: cleaned text, an optional role, its sort key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cell {
    pub text: String,
    pub role: Option<Role>,
    pub sort: SortKey,
}

impl Cell {
    pub fn text(s: impl Into<String>) -> Self {
        let text = s.into();
        Self {
            sort: SortKey::Text(text.to_lowercase()),
            text,
            role: None,
        }
    }
    /// Store-sourced text: escaped and cut to `max`.
    pub fn raw(s: &str, max: usize) -> Self {
        Self::text(super::text::clean(s, max))
    }
    pub fn num(n: impl Into<i64> + Copy + std::fmt::Display) -> Self {
        Self {
            text: n.to_string(),
            role: None,
            sort: SortKey::Num(n.into()),
        }
    }
    /// Text that sorts by a number (durations, instants).
    pub fn timed(text: impl Into<String>, key: i64) -> Self {
        Self {
            text: text.into(),
            role: None,
            sort: SortKey::Num(key),
        }
    }
    #[must_use]
    pub fn role(mut self, role: Role) -> Self {
        self.role = Some(role);
        self
    }
    #[must_use]
    pub fn role_if(self, cond: bool, role: Role) -> Self {
        if cond { self.role(role) } else { self }
    }
}

/// One row: its page key (what keyset paging continues from), cells, and what Enter / `t`
/// open.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Row {
    pub key: String,
    pub cells: Vec<Cell>,
    /// Field/value pairs: the row's facts in the view's words, atop its describe pane.
    pub detail: Vec<(String, String)>,
    /// The lease / work resource for the generation timeline.
    pub resource: Option<String>,
    /// A workflow instance id (Enter opens the workflow detail, `C` cancels).
    pub instance: Option<String>,
    /// An authority id (demo keys act on it).
    pub authority: Option<String>,
    /// A work item's handler (`Z` / `W` pause and resume it fleet-wide).
    pub handler: Option<String>,
    /// A work filter Enter opens the work view with (a triage group).
    pub filter: Option<String>,
    /// Fingerprint of the underlying record (see [`version`]): a change flashes the row.
    pub version: String,
}

/// A table view's model for one snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableData {
    pub columns: &'static [Column],
    pub rows: Vec<Row>,
    /// One line in the title (counts, journal high-water, …).
    pub summary: String,
    /// Page keys to continue from (PageUp / PageDown).
    pub first_key: Option<String>,
    pub last_key: Option<String>,
    /// Rows the store returned for this page.
    pub fetched: usize,
    pub more_before: bool,
    pub more_after: bool,
}

impl TableData {
    /// A page whose row keys are the store's page keys.
    #[must_use]
    pub fn new(columns: &'static [Column], rows: Vec<Row>, summary: String) -> Self {
        Self {
            columns,
            first_key: rows.first().map(|r| r.key.clone()),
            last_key: rows.last().map(|r| r.key.clone()),
            fetched: rows.len(),
            rows,
            summary,
            more_before: false,
            more_after: false,
        }
    }
}

/// A stable fingerprint of a record, so a row flashes only when its data changed.
pub fn version<T: std::fmt::Debug>(value: &T) -> String {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    format!("{value:?}").hash(&mut h);
    format!("{:016x}", h.finish())
}

/// The table model of the snapshot's view, instants written by `fmt`.
#[must_use]
pub fn table(snap: &Snapshot, fmt: TimeFmt) -> Option<TableData> {
    let mut data = match &snap.data {
        ViewData::Authorities { page, owned } => authorities::table(snap, page, owned, fmt),
        ViewData::Leases(page) => leases::table(page, fmt),
        ViewData::Work(page) => work::table(snap, page, fmt),
        ViewData::Workflows(page) => workflows::table(snap, page, fmt),
        ViewData::Cursors(page) => cursors::table(page, fmt),
        ViewData::Events { page, high_water } => events::table(page, *high_water, fmt),
        ViewData::Schedules { page, firings } => schedules::table(page, firings, fmt),
        // Paged by its own read, which may end a filtered page early.
        ViewData::Audit(page) => return Some(audit::table(page, &snap.query.page, fmt)),
        ViewData::Triage(groups) => triage::table(groups, fmt),
        ViewData::Builds(matrix) => builds::table(matrix),
        ViewData::Horizon(h) => horizon::table(h, fmt),
        // Moved through by cursor, not paged: the view's own pane says where it is.
        ViewData::Replay(Some(data)) => return Some(replay::table(data, fmt)),
        ViewData::Failovers(list) => failovers::table(list, fmt),
        ViewData::Fenced(list) => fenced::table(list, fmt),
        ViewData::Timeline {
            resource,
            grants,
            writes,
            lease,
            item,
        } => {
            let limit = snap.query.page.limit.max(1) * super::snapshot::TIMELINE_FACTOR;
            timeline::table(
                resource.as_deref(),
                grants,
                writes,
                lease.as_ref(),
                item.as_ref(),
                limit,
                fmt,
            )
        }
        ViewData::Overview | ViewData::Detail { .. } | ViewData::Replay(None) => return None,
    };
    let page = &snap.query.page;
    let full = data.fetched >= page.limit.max(1);
    if matches!(snap.data, ViewData::Timeline { .. }) {
        data.more_before = page.after.is_some();
        data.more_after = data.fetched == usize::MAX;
    } else if page.backwards {
        data.more_before = full;
        data.more_after = page.after.is_some();
    } else {
        data.more_before = page.after.is_some();
        data.more_after = full;
    }
    Some(data)
}

/// Draws the whole dashboard.
pub fn render(frame: &mut Frame<'_>, app: &App) {
    let area = frame.area();
    let theme = app.theme();
    frame.buffer_mut().set_style(area, theme.style(Role::Base));
    if area.width < 4 || area.height < 3 {
        return;
    }
    let [header, tabs, body, footer] = chrome::layout(area);
    chrome::header(frame, header, app);
    chrome::tabs(frame, tabs, app);
    let body = match app.caption() {
        Some(caption) if body.height > 2 => {
            let [line, rest] =
                Layout::vertical([Constraint::Length(1), Constraint::Min(0)]).areas(body);
            frame.render_widget(
                ratatui::widgets::Paragraph::new(format!(" {}", super::text::clean(caption, 400)))
                    .style(theme.style(Role::Selection)),
                line,
            );
            rest
        }
        _ => body,
    };
    let pane = ticker::rows_taken(app, body.height);
    if pane > 0 {
        let [main, pane] =
            Layout::vertical([Constraint::Min(0), Constraint::Length(pane)]).areas(body);
        render_body(frame, main, app);
        ticker::render(frame, pane, app);
    } else {
        render_body(frame, body, app);
    }
    chrome::footer(frame, footer, app);
    match app.overlay() {
        Some(Overlay::Help { scroll }) => help::render(frame, area, app, *scroll),
        Some(Overlay::Describe(d)) => describe::render(frame, area, app, d),
        Some(Overlay::Confirm(c)) => dialog::confirmation(frame, area, app, c),
        Some(Overlay::ConfirmBulk {
            verb,
            tally,
            typed,
            reason,
            editing,
        }) => {
            let field = dialog::Field {
                reason,
                editing: *editing,
            };
            dialog::confirm_bulk(frame, area, app, *verb, tally, typed, &field);
        }
        None => {}
    }
}

fn render_body(frame: &mut Frame<'_>, area: Rect, app: &App) {
    if area.height == 0 || area.width == 0 {
        return;
    }
    match app.view() {
        super::action::ViewId::Overview => overview::render(frame, area, app),
        super::action::ViewId::WorkflowDetail => workflow_detail::render(frame, area, app),
        super::action::ViewId::Replay => replay::render(frame, area, app),
        _ => table::render(frame, area, app),
    }
}
