//! The describe pane: the row's id and facts, then its whole record as pretty JSON with
//! instants annotated; a key line at the bottom that is always visible.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::super::app::App;
use super::super::describe::{Describe, body, pane};
use super::super::text::clean;
use super::super::theme::Role;

pub fn render(frame: &mut Frame<'_>, area: Rect, app: &App, d: &Describe) {
    let t = app.theme();
    let popup = pane(area);
    frame.render_widget(Clear, popup);
    let mut block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.style(Role::Accent))
        .title(Span::styled(
            format!(
                " {} · as of {} ",
                clean(&d.title, 60),
                app.time_fmt().wall(d.at)
            ),
            t.style(Role::Title),
        ))
        .style(t.style(Role::Dialog));
    let inner = block.inner(popup);
    if inner.height == 0 || inner.width == 0 {
        frame.render_widget(block, popup);
        return;
    }
    let keys = Rect {
        y: inner.bottom() - 1,
        height: 1,
        ..inner
    };
    let text = Rect {
        height: inner.height - 1,
        ..inner
    };
    let lines = body(d, app.options().zone, text.width);
    let total = lines.len();
    // A resize may leave the offset past the end: show the last screenful instead.
    let top = usize::from(d.scroll).min(total.saturating_sub(usize::from(text.height)));
    let position = format!(
        " {}–{} of {total} ",
        top + 1,
        (top + usize::from(text.height)).min(total)
    );
    block = block
        .title_bottom(Line::from(Span::styled(position, t.style(Role::Muted))).right_aligned());
    frame.render_widget(block, popup);
    let shown: Vec<Line<'_>> = lines
        .into_iter()
        .skip(top)
        .take(usize::from(text.height))
        .map(|l| Line::from(Span::styled(l, t.style(Role::Dialog))))
        .collect();
    frame.render_widget(Paragraph::new(shown), text);
    let hint = vec![
        Span::styled("↑↓ PgUp PgDn Home End", t.style(Role::Key)),
        Span::styled(" scroll  ", t.style(Role::Muted)),
        Span::styled("y", t.style(Role::Key)),
        Span::styled(" copy id  ", t.style(Role::Muted)),
        Span::styled("Esc", t.style(Role::Key)),
        Span::styled(" close", t.style(Role::Muted)),
    ];
    frame.render_widget(Paragraph::new(Line::from(hint)), keys);
}
