//! The help overlay, generated from the key map (so it lists every key that works, and
//! only those: operator keys disappear under `--read-only`, demo keys without a cluster).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph};

use super::super::app::App;
use super::super::keymap::{Group, Scope, bindings};
use super::super::theme::Role;
use super::dialog::centered;

/// The help text as lines: `(keys, scope, help)` grouped.
#[must_use]
pub fn entries(app: &App) -> Vec<(Group, String, String)> {
    let groups = [
        Group::Views,
        Group::Navigation,
        Group::Live,
        Group::Operator,
        Group::Demo,
    ];
    let mut out = Vec::new();
    for g in groups {
        if g == Group::Operator && app.options().read_only {
            continue;
        }
        if g == Group::Demo && (!app.options().demo || app.options().read_only) {
            continue;
        }
        for b in bindings().iter().filter(|b| b.group == g) {
            let scope = match b.scope {
                Scope::Global => String::new(),
                Scope::Table => " (tables)".into(),
                Scope::View(v) => format!(" ({})", v.name()),
            };
            out.push((g, b.label(), format!("{}{scope}", b.help)));
        }
    }
    out
}

pub fn render(frame: &mut Frame<'_>, area: Rect, app: &App, scroll: u16) {
    let t = app.theme();
    let popup = centered(area, 88, area.height.saturating_sub(2).max(3));
    frame.render_widget(Clear, popup);
    let mut lines: Vec<Line<'_>> = Vec::new();
    let mut last = None;
    for (g, keys, help) in entries(app) {
        if last != Some(g) {
            if last.is_some() {
                lines.push(Line::raw(""));
            }
            lines.push(Line::from(Span::styled(g.title(), t.style(Role::Header))));
            last = Some(g);
        }
        lines.push(Line::from(vec![
            Span::styled(format!("  {keys:>14}  "), t.style(Role::Key)),
            Span::styled(help, t.style(Role::Dialog)),
        ]));
    }
    if app.options().read_only {
        lines.push(Line::raw(""));
        lines.push(Line::from(Span::styled(
            "read-only: operator actions are disabled",
            t.style(Role::Warning),
        )));
    }
    lines.push(Line::raw(""));
    lines.push(Line::from(Span::styled("Prompts: type, Tab completes, Enter runs, Esc closes. Mouse: wheel scrolls, click selects, click a header sorts.", t.style(Role::Muted))));
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.style(Role::Accent))
        .title(Span::styled(
            " keys (↑↓ scroll, Esc closes) ",
            t.style(Role::Title),
        ))
        .style(t.style(Role::Dialog));
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .scroll((scroll, 0))
            .style(t.style(Role::Dialog)),
        popup,
    );
}
