//! The shared table renderer of every paged view: fits columns to the width (dropping the
//! least important first), marks the sort column, highlights the selection and the rows
//! that just changed, and says where the page is (`◀ more`, `more ▶`).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row as TableRow, Table, TableState};

use super::super::action::ViewId;
use super::super::app::App;
use super::super::text::clean;
use super::super::theme::Role;
use super::Column;

/// Indices of the columns that fit in `width`, in display order.
#[must_use]
pub fn fit(columns: &[Column], width: u16) -> Vec<usize> {
    let mut order: Vec<usize> = (0..columns.len()).collect();
    order.sort_by_key(|i| (columns.get(*i).map_or(u8::MAX, |c| c.priority), *i));
    let mut used: u16 = 0;
    let mut keep = Vec::new();
    for i in order {
        let w = columns.get(i).map_or(0, |c| c.width);
        let need = if keep.is_empty() { w } else { w + 1 };
        if used + need <= width || keep.is_empty() {
            used = used.saturating_add(need);
            keep.push(i);
        }
    }
    keep.sort_unstable();
    keep
}

fn constraints(columns: &[Column], keep: &[usize]) -> Vec<Constraint> {
    keep.iter()
        .enumerate()
        .map(|(n, i)| {
            let w = columns.get(*i).map_or(1, |c| c.width);
            if n + 1 == keep.len() {
                Constraint::Fill(1)
            } else {
                Constraint::Length(w)
            }
        })
        .collect()
}

/// Which column (index into `columns`) is under screen column `x` of a table in `body`.
#[must_use]
pub fn column_at(body: Rect, columns: &[Column], x: u16) -> Option<usize> {
    let inner = Block::default().borders(Borders::ALL).inner(body);
    let keep = fit(columns, inner.width);
    let areas = Layout::horizontal(constraints(columns, &keep))
        .spacing(1)
        .split(inner);
    areas
        .iter()
        .position(|a| x >= a.x && x < a.right())
        .and_then(|n| keep.get(n).copied())
}

/// The title of a table view: its name, quick filter, filter and sort.
fn title(app: &App) -> String {
    let mut title = format!(" {} ", app.view().name());
    if app.view() == ViewId::Work {
        title.push_str(&format!("[{}] ", app.work_quick().name()));
    }
    if app.view() == ViewId::Timeline {
        if let Some(r) = app.resource() {
            title.push_str(&format!("of {} ", clean(r, 48)));
        }
    }
    if let Some(data) = app.table_data() {
        if !data.summary.is_empty() {
            title.push_str(&format!("· {} ", data.summary));
        }
    }
    title.push_str(&super::position::filter_and_sort(app));
    title
}

pub fn render(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let t = app.theme();
    let ui = app.table_ui();
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.style(Role::Border))
        .title(Span::styled(title(app), t.style(Role::Title)));
    if let Some(data) = app.table_data() {
        let mut nav = Vec::new();
        if data.more_before {
            nav.push(Span::styled(" ◀ more ", t.style(Role::Accent)));
        }
        if data.more_after {
            nav.push(Span::styled(" more ▶ ", t.style(Role::Accent)));
        }
        if !nav.is_empty() {
            block = block.title_bottom(Line::from(nav).right_aligned());
        }
        if let Some(at) = super::position::position(app) {
            block = block.title_bottom(
                Line::from(Span::styled(format!(" {at} "), t.style(Role::Muted))).left_aligned(),
            );
        }
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.width == 0 || inner.height == 0 {
        return;
    }
    let Some(data) = app.table_data() else {
        let text = if app.view() == ViewId::Timeline && app.resource().is_none() {
            "No resource chosen: select a row in leases, work, workflows or cursors and press t."
        } else {
            "loading…"
        };
        frame.render_widget(Paragraph::new(text).style(t.style(Role::Muted)), inner);
        return;
    };
    let keep = fit(data.columns, inner.width);
    let header = TableRow::new(keep.iter().map(|i| {
        let name = data.columns.get(*i).map_or("", |c| c.name);
        let arrow = match ui.sort {
            Some((c, false)) if c == *i => " ▲",
            Some((c, true)) if c == *i => " ▼",
            _ => "",
        };
        Span::styled(
            format!("{}{arrow}", name.to_uppercase()),
            t.style(Role::Header),
        )
    }));
    if app.visible().is_empty() {
        let msg = if data.rows.is_empty() && !ui.filter.is_empty() {
            "no rows match the filter (Esc clears it)"
        } else if data.rows.is_empty() {
            "no rows on this page"
        } else {
            "no rows on this page match the filter (Esc clears it)"
        };
        let table = Table::new(Vec::<TableRow<'_>>::new(), constraints(data.columns, &keep))
            .header(header)
            .column_spacing(1);
        frame.render_widget(table, inner);
        if inner.height > 1 {
            let msg_area = Rect {
                y: inner.y + 1,
                height: 1,
                ..inner
            };
            frame.render_widget(Paragraph::new(msg).style(t.style(Role::Muted)), msg_area);
        }
        return;
    }
    let rows: Vec<TableRow<'_>> = app
        .visible()
        .iter()
        .enumerate()
        .filter_map(|(n, i)| data.rows.get(*i).map(|r| (n, r)))
        .map(|(n, row)| {
            let plain = n == ui.selected || app.is_flashing(&row.key);
            let cells = keep.iter().map(|c| match row.cells.get(*c) {
                // Selected and flashing rows take the row style whole, for contrast.
                Some(cell) if plain => Span::raw(cell.text.clone()),
                Some(cell) => Span::styled(
                    cell.text.clone(),
                    cell.role
                        .map_or_else(|| t.style(Role::Base), |r| t.style(r)),
                ),
                None => Span::raw(""),
            });
            let mut r = TableRow::new(cells);
            if n == ui.selected {
                r = r.style(t.style(Role::Selection));
            } else if app.is_flashing(&row.key) {
                r = r.style(t.style(Role::Flash));
            }
            r
        })
        .collect();
    let table = Table::new(rows, constraints(data.columns, &keep))
        .header(header)
        .column_spacing(1);
    let mut state = TableState::default().with_selected(Some(ui.selected));
    frame.render_stateful_widget(table, inner, &mut state);
}
