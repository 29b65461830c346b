//! The event ticker pane (demo, toggled with `e`): the newest notable events, one line
//! each, big enough to read across a room — reclaims in the reclaim colour, refused writes
//! in the fenced colour, faults done to the cluster in the warning colour, and any
//! violation the checker found above them all, in red.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph};

use super::super::app::App;
use super::super::text::clean;
use super::super::theme::Role;
use crate::ops::ticker::{TickerKind, ago};
use crate::ops::window::Window;

/// Lines the reader keeps.
pub const LINES: usize = 12;
/// How far back the ticker looks.
pub const WINDOW: Window = Window { ms: 10 * 60_000 };
/// Rows the pane takes (borders included), when there is room.
pub const HEIGHT: u16 = 8;

/// Rows the pane takes from a body `body` rows high: [`HEIGHT`] when shown and the body
/// has room for it twice, else none.
#[must_use]
pub fn rows_taken(app: &App, body: u16) -> u16 {
    if app.show_ticker() && body >= HEIGHT * 2 {
        HEIGHT
    } else {
        0
    }
}

/// Draws the ticker into `area`.
pub fn render(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let t = app.theme();
    let now = app.time_fmt().now;
    // Violations first, in red: the one thing that must never scroll away.
    let violations = app
        .checked()
        .map(|v| v.listed.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|v| {
            Line::from(vec![
                Span::styled("VIOLATION ", t.style(Role::Error)),
                Span::styled(clean(v, 300), t.style(Role::Error)),
            ])
        });
    let lines: Vec<Line> = violations
        .chain(
            app.snapshot()
                .map(|s| s.ticker.as_slice())
                .unwrap_or_default()
                .iter()
                .take(usize::from(area.height.saturating_sub(2)))
                .map(|l| {
                    let (tag, role) = match l.kind {
                        TickerKind::Reclaim => ("RECLAIM", Role::Accent),
                        TickerKind::Fenced => ("FENCED ", Role::Error),
                        TickerKind::Fault => ("FAULT  ", Role::Warning),
                    };
                    Line::from(vec![
                        Span::styled(format!("{:>9} ", ago(now, l.at)), t.style(Role::Muted)),
                        Span::styled(format!("{tag} "), t.style(role)),
                        Span::styled(clean(&l.text, 300), t.style(Role::Base)),
                    ])
                }),
        )
        .take(usize::from(area.height.saturating_sub(2)))
        .collect();
    let body = if lines.is_empty() {
        vec![Line::styled(
            "nothing yet: T starts a guided tour; P pauses an authority, K kills one",
            t.style(Role::Muted),
        )]
    } else {
        lines
    };
    frame.render_widget(
        Paragraph::new(body).block(
            Block::default()
                .borders(Borders::ALL)
                .border_style(t.style(Role::Border))
                .title(Span::styled(" events (e hides) ", t.style(Role::Title))),
        ),
        area,
    );
}
