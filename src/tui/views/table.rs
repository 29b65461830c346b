//! The shared table renderer of every paged view: sizes columns from their content and the
//! width (cutting with `…` only when the row is out of room, dropping the least important
//! columns last), marks the sort column, highlights the selection and the rows
//! that just changed, and says where the page is (`◀ more`, `more ▶`).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row as TableRow, Table, TableState};

use super::super::action::ViewId;
use super::super::app::App;
use super::super::text::clean;
use super::super::theme::Role;
use super::{Column, TableData};

/// Indices of the columns that fit in `width` at the given widths, in display order; the
/// least important (highest `priority`) are dropped first.
#[must_use]
pub fn fit(columns: &[Column], widths: &[u16], width: u16) -> Vec<usize> {
    let mut order: Vec<usize> = (0..columns.len()).collect();
    order.sort_by_key(|i| (columns.get(*i).map_or(u8::MAX, |c| c.priority), *i));
    let mut used: u16 = 0;
    let mut keep = Vec::new();
    for i in order {
        let w = widths.get(i).copied().unwrap_or(0);
        let need = if keep.is_empty() {
            w
        } else {
            w.saturating_add(1)
        };
        if used.saturating_add(need) <= width || keep.is_empty() {
            used = used.saturating_add(need);
            keep.push(i);
        }
    }
    keep.sort_unstable();
    keep
}

/// Display width of a cell's text.
fn text_width(text: &str) -> u16 {
    u16::try_from(Span::raw(text).width()).unwrap_or(u16::MAX)
}

/// The columns shown in `width` and how wide each is, sized from the page's content: every
/// column gets its widest cell (or header) when the row has room; when it does not, the
/// widest columns give way first, never below their declared width, and only then are
/// the least important columns dropped. So a value is cut only when space has run out.
/// `sorted`: the sort column, whose header carries an arrow.
#[must_use]
pub fn layout(data: &TableData, width: u16, sorted: Option<usize>) -> Vec<(usize, u16)> {
    let natural: Vec<u16> = data
        .columns
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let arrow = if sorted == Some(i) { 2 } else { 0 };
            let header = text_width(c.name).saturating_add(arrow);
            data.rows
                .iter()
                .filter_map(|r| r.cells.get(i))
                .map(|cell| text_width(&cell.text))
                .fold(header, u16::max)
        })
        .collect();
    let floor: Vec<u16> = data
        .columns
        .iter()
        .zip(&natural)
        .map(|(c, n)| c.width.min(*n))
        .collect();
    let keep = fit(data.columns, &floor, width);
    let mut sized: Vec<(usize, u16)> = keep
        .iter()
        .map(|i| (*i, natural.get(*i).copied().unwrap_or(1)))
        .collect();
    let spacing = u16::try_from(sized.len().saturating_sub(1)).unwrap_or(u16::MAX);
    let total = |s: &[(usize, u16)]| s.iter().fold(spacing, |acc, (_, w)| acc.saturating_add(*w));
    // Shrink the widest column that is still above its floor, one cell at a time.
    while total(&sized) > width {
        let widest = sized
            .iter_mut()
            .filter(|(i, w)| *w > floor.get(*i).copied().unwrap_or(0))
            .max_by_key(|(_, w)| *w);
        match widest {
            Some((_, w)) => *w -= 1,
            None => break,
        }
    }
    sized
}

fn constraints(sized: &[(usize, u16)]) -> Vec<Constraint> {
    sized
        .iter()
        .enumerate()
        .map(|(n, (_, w))| {
            if n + 1 == sized.len() {
                Constraint::Fill(1)
            } else {
                Constraint::Length(*w)
            }
        })
        .collect()
}

/// `text` cut to `width` display columns, ending in `…` when something was cut.
#[must_use]
pub fn ellipsize(text: &str, width: u16) -> String {
    if text_width(text) <= width {
        return text.to_owned();
    }
    let mut out = String::new();
    let mut used = 0u16;
    for c in text.chars() {
        let w = text_width(c.encode_utf8(&mut [0; 4]));
        if used.saturating_add(w).saturating_add(1) > width {
            break;
        }
        used += w;
        out.push(c);
    }
    if width > 0 {
        out.push('…');
    }
    out
}

/// Which column (index into the page's columns) is under screen column `x` of a table in
/// `body` (sorted by `sorted`).
#[must_use]
pub fn column_at(body: Rect, data: &TableData, sorted: Option<usize>, x: u16) -> Option<usize> {
    let inner = Block::default().borders(Borders::ALL).inner(body);
    let sized = layout(data, inner.width, sorted);
    let areas = Layout::horizontal(constraints(&sized))
        .spacing(1)
        .split(inner);
    areas
        .iter()
        .position(|a| x >= a.x && x < a.right())
        .and_then(|n| sized.get(n).map(|(i, _)| *i))
}

/// The title of a table view: its name, quick filter, filter and sort.
fn title(app: &App) -> String {
    let mut title = format!(" {} ", app.view().name());
    if app.view() == ViewId::Work {
        title.push_str(&format!("[{}] ", app.work_quick().name()));
    }
    if app.view() == ViewId::Timeline
        && let Some(r) = app.resource()
    {
        title.push_str(&format!("of {} ", clean(r, 48)));
    }
    if let Some(data) = app.table_data()
        && !data.summary.is_empty()
    {
        title.push_str(&format!("· {} ", data.summary));
    }
    title.push_str(&super::position::filter_and_sort(app));
    title
}

#[expect(
    clippy::too_many_lines,
    reason = "the table's layout, one column per line"
)]
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
    let sized = layout(data, inner.width, ui.sort.map(|(c, _)| c));
    let header = TableRow::new(sized.iter().map(|(i, _)| {
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
        let table = Table::new(Vec::<TableRow<'_>>::new(), constraints(&sized))
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
            let cells = sized.iter().map(|(c, w)| match row.cells.get(*c) {
                // Selected and flashing rows take the row style whole, for contrast.
                Some(cell) if plain => Span::raw(ellipsize(&cell.text, *w)),
                Some(cell) => Span::styled(
                    ellipsize(&cell.text, *w),
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
    let table = Table::new(rows, constraints(&sized))
        .header(header)
        .column_spacing(1);
    let mut state = TableState::default().with_selected(Some(ui.selected));
    frame.render_stateful_widget(table, inner, &mut state);
}
