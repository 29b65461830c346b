//! Replay: the store's durable history over a window of time ([`crate::ops::replay`], what
//! `leasehold replay` prints). On top the window's summary — failovers, fenced writes,
//! failures, throughput; below, the steps around the cursor (`[` `]` one step, `{` `}`
//! the previous / next failover), failovers and refused writes marked; with Enter, a
//! last pane says who held the cursor's resource, at which generation and in what state,
//! as of the cursor's revision.

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};

use super::super::app::App;
use super::super::replay::ReplayData;
use super::super::text::clean;
use super::super::theme::Role;
use super::{Cell, Column, Row, TableData, col};
use crate::foundation::timefmt::TimeFmt;
use crate::ops::replay::StepAt;

pub const COLUMNS: &[Column] = &[
    col("rev", 6, 0),
    col("at", 8, 1),
    col("resource", 20, 0),
    col("what", 40, 0),
];

/// Rows the summary pane takes (two lines and its border).
pub const SUMMARY_ROWS: u16 = 4;
/// Rows the resource pane takes when open.
pub const RESOURCE_ROWS: u16 = 3;

/// The page key of a step: `REVISION.INDEX`.
#[must_use]
pub fn key(at: StepAt) -> String {
    format!("{}.{}", at.revision, at.index)
}

/// The steps around the cursor as table rows.
#[must_use]
pub fn table(data: &ReplayData, fmt: TimeFmt) -> TableData {
    let rows = data
        .steps
        .iter()
        .map(|(at, step)| {
            let role = if step.is_failover() {
                Some(Role::Warning)
            } else if step.is_refused() {
                Some(Role::Fenced)
            } else {
                None
            };
            let what = step.what(&clean);
            let mut cells = vec![
                Cell::num(i64::try_from(at.revision).unwrap_or(i64::MAX)),
                Cell::timed(fmt.wall(step.at()), step.at()),
                Cell::raw(step.resource(), 200),
                Cell::text(what.clone()),
            ];
            if let Some(role) = role {
                cells = cells.into_iter().map(|c| c.role(role)).collect();
            }
            Row {
                key: key(*at),
                cells,
                detail: vec![
                    ("revision".into(), at.revision.to_string()),
                    ("at".into(), fmt.at(step.at())),
                    ("what".into(), what),
                ],
                resource: Some(step.resource().to_owned()),
                version: super::version(step),
                ..Row::default()
            }
        })
        .collect();
    let summary = match data.cursor {
        Some(at) => format!("cursor at revision {}", at.revision),
        None => "the window holds no step".into(),
    };
    TableData::new(COLUMNS, rows, summary)
}

/// The replay body: summary, steps, and the resource pane when open.
pub fn render(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let t = app.theme();
    let inspecting = app.replay().is_some_and(|r| r.inspect.is_some());
    let [top, steps, bottom] = Layout::vertical([
        Constraint::Length(SUMMARY_ROWS.min(area.height)),
        Constraint::Min(0),
        Constraint::Length(if inspecting { RESOURCE_ROWS } else { 0 }),
    ])
    .areas(area);
    let data = app.replay_data();
    let fmt = app.time_fmt();
    let title = match (app.replay(), data) {
        (_, Some(d)) => format!(
            " replay {} → {} · revisions {}–{} · {} records ",
            fmt.wall(d.span.from),
            fmt.wall(d.span.to),
            d.span.from_revision,
            d.span.to_revision,
            d.summary.records
        ),
        (Some(r), None) => format!(" replay {} → {} ", fmt.wall(r.from), fmt.wall(r.to)),
        (None, None) => " replay ".into(),
    };
    // Two lines: the counts wrap on a narrow terminal (the keys are in the footer).
    let line = match data {
        Some(d) => Span::styled(d.summary.line(&clean), t.style(Role::Base)),
        None => Span::styled("loading…", t.style(Role::Muted)),
    };
    frame.render_widget(
        Paragraph::new(Line::from(line))
            .wrap(Wrap { trim: true })
            .block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(t.style(Role::Border))
                    .title(Span::styled(title, t.style(Role::Title))),
            ),
        top,
    );
    if steps.height > 0 {
        super::table::render(frame, steps, app);
    }
    if inspecting && bottom.height > 0 {
        let text = match data.and_then(|d| d.resource.as_ref()) {
            Some(Ok(at)) => Span::styled(at.line(&clean, &|ms| fmt.at(ms)), t.style(Role::Base)),
            Some(Err(e)) => Span::styled(clean(e, 200), t.style(Role::Error)),
            None => Span::styled("loading…", t.style(Role::Muted)),
        };
        frame.render_widget(
            Paragraph::new(Line::from(text)).block(
                Block::default()
                    .borders(Borders::ALL)
                    .border_style(t.style(Role::Border))
                    .title(Span::styled(
                        " at the cursor's revision (Esc closes) ",
                        t.style(Role::Title),
                    )),
            ),
            bottom,
        );
    }
}
