//! Popups: the cancel confirmation (which says what will and will not happen) and the row
//! detail.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::super::app::App;
use super::super::text::clean;
use super::super::theme::{Role, Theme};

/// A rectangle of at most `width` × `height` centred in `area`.
#[must_use]
pub fn centered(area: Rect, width: u16, height: u16) -> Rect {
    let w = width.min(area.width);
    let h = height.min(area.height);
    Rect {
        x: area.x + (area.width - w) / 2,
        y: area.y + (area.height - h) / 2,
        width: w,
        height: h,
    }
}

pub fn confirm_cancel(frame: &mut Frame<'_>, area: Rect, app: &App, instance: &str) {
    let t = app.theme();
    let popup = centered(area, 72, 16);
    frame.render_widget(Clear, popup);
    let bullet = |s: &'static str, role: Role| {
        Line::from(vec![
            Span::styled("  • ", t.style(role)),
            Span::styled(s, t.style(Role::Dialog)),
        ])
    };
    let lines = vec![
        Line::from(vec![
            Span::styled("Cancel workflow ", t.style(Role::Dialog)),
            Span::styled(clean(instance, 50), t.style(Role::Accent)),
        ]),
        Line::raw(""),
        Line::from(Span::styled("This will:", t.style(Role::Ok))),
        bullet(
            "move the instance to cancelled (a fenced, idempotent transition)",
            Role::Ok,
        ),
        bullet(
            "stop its future steps; later timers and events are ignored",
            Role::Ok,
        ),
        bullet("fence out any authority running it right now", Role::Ok),
        Line::from(Span::styled(
            "This will NOT (cancel is not rollback):",
            t.style(Role::Warning),
        )),
        bullet(
            "undo steps that already ran or effects already sent",
            Role::Warning,
        ),
        bullet(
            "run compensation, or cancel from an incompatible build",
            Role::Warning,
        ),
        Line::raw(""),
        Line::from(Span::styled(
            format!(
                "Recorded in the audit log as {}.",
                clean(&app.options().actor, 40)
            ),
            t.style(Role::Muted),
        )),
        Line::raw(""),
        Line::from(vec![
            Span::styled(" y ", t.style(Role::Key)),
            Span::styled("cancel it   ", t.style(Role::Dialog)),
            Span::styled(" n/Esc ", t.style(Role::Key)),
            Span::styled("keep it running", t.style(Role::Dialog)),
        ]),
    ];
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.style(Role::Warning))
        .title(Span::styled(" confirm cancel ", t.style(Role::Title)))
        .style(t.style(Role::Dialog));
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false })
            .style(t.style(Role::Dialog)),
        popup,
    );
}

pub fn detail(
    frame: &mut Frame<'_>,
    area: Rect,
    t: &Theme,
    title: &str,
    fields: &[(String, String)],
    scroll: u16,
) {
    let popup = centered(area, 100, area.height.saturating_sub(2).max(3));
    frame.render_widget(Clear, popup);
    let width = fields
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0)
        .min(28);
    let lines: Vec<Line<'_>> = fields
        .iter()
        .map(|(k, v)| {
            Line::from(vec![
                Span::styled(format!("{k:>width$}  "), t.style(Role::Muted)),
                Span::styled(v.clone(), t.style(Role::Dialog)),
            ])
        })
        .collect();
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.style(Role::Accent))
        .title(Span::styled(
            format!(" {} (Esc closes) ", clean(title, 60)),
            t.style(Role::Title),
        ))
        .style(t.style(Role::Dialog));
    frame.render_widget(
        Paragraph::new(lines)
            .block(block)
            .wrap(Wrap { trim: false })
            .scroll((scroll, 0))
            .style(t.style(Role::Dialog)),
        popup,
    );
}
