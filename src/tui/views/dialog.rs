//! Popups: the confirmations of operator actions (cancel a workflow; requeue, discard or
//! retry now a work item), each saying what will and will not happen.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::super::app::App;
use super::super::text::clean;
use super::super::theme::Role;
use crate::ops::triage::Verb;

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

/// The cancel confirmation.
pub fn confirm_cancel(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    instance: &str,
    reason: &str,
    editing: bool,
) {
    let field = Field { reason, editing };
    let text = explanation(app, instance);
    confirm(
        frame,
        area,
        app,
        " confirm cancel ",
        text,
        &field,
        " cancel it  ",
    );
}

/// The confirmation of a requeue, discard or retry-now of one work item.
pub fn confirm_triage(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    verb: Verb,
    item: &str,
    field: &Field<'_>,
) {
    let t = app.theme();
    let (title, what, effect) = match verb {
        Verb::Requeue => (
            " confirm requeue ",
            "Requeue work item ",
            "give it a fresh attempt budget and make it due now",
        ),
        Verb::Discard => (
            " confirm discard ",
            "Discard work item ",
            "end it for good (failed, with your reason); it never runs again",
        ),
        Verb::RetryNow => (
            " confirm retry now ",
            "Retry now work item ",
            "skip its backoff or delay: it is due at once",
        ),
    };
    let text = vec![
        Line::from(vec![
            Span::styled(what, t.style(Role::Dialog)),
            Span::styled(clean(item, 50), t.style(Role::Accent)),
        ]),
        audited_as(app),
        Line::from(vec![
            Span::styled("  • ", t.style(Role::Ok)),
            Span::styled(effect, t.style(Role::Dialog)),
        ]),
        Line::from(Span::styled(
            "The store judges the item again as it writes: one that moved meanwhile is refused.",
            t.style(Role::Muted),
        )),
    ];
    let yes = match verb {
        Verb::Requeue => " requeue it  ",
        Verb::Discard => " discard it  ",
        Verb::RetryNow => " retry it now  ",
    };
    confirm(frame, area, app, title, text, field, yes);
}

/// A dialog's reason field as typed so far, and whether it has the keyboard.
pub struct Field<'a> {
    pub reason: &'a str,
    pub editing: bool,
}

/// A confirmation popup. Its reason field and its choices are pinned to the bottom of the
/// popup, so they stay visible however small the terminal; the explanation above them is
/// cut first.
fn confirm(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    title: &'static str,
    text: Vec<Line<'_>>,
    field: &Field<'_>,
    yes: &'static str,
) {
    let Field { reason, editing } = *field;
    let t = app.theme();
    let popup = centered(area, 72, 16);
    frame.render_widget(Clear, popup);
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.style(Role::Warning))
        .title(Span::styled(title, t.style(Role::Title)))
        .style(t.style(Role::Dialog));
    let inner = block.inner(popup);
    frame.render_widget(block, popup);
    if inner.height == 0 || inner.width == 0 {
        return;
    }
    let choices = Rect {
        y: inner.bottom() - 1,
        height: 1,
        ..inner
    };
    let mut rest = Rect {
        height: inner.height - 1,
        ..inner
    };
    frame.render_widget(
        Paragraph::new(choice_line(app, editing, yes)).style(t.style(Role::Dialog)),
        choices,
    );
    if rest.height > 0 {
        let field = Rect {
            y: rest.bottom() - 1,
            height: 1,
            ..rest
        };
        rest.height -= 1;
        frame.render_widget(Paragraph::new(reason_line(app, reason, editing)), field);
    }
    if rest.height > 0 {
        frame.render_widget(
            Paragraph::new(text)
                .wrap(Wrap { trim: false })
                .style(t.style(Role::Dialog)),
            rest,
        );
    }
}

fn explanation<'a>(app: &'a App, instance: &str) -> Vec<Line<'a>> {
    let t = app.theme();
    let bullet = |s: &'static str, role: Role| {
        Line::from(vec![
            Span::styled("  • ", t.style(role)),
            Span::styled(s, t.style(Role::Dialog)),
        ])
    };
    vec![
        Line::from(vec![
            Span::styled("Cancel workflow ", t.style(Role::Dialog)),
            Span::styled(clean(instance, 50), t.style(Role::Accent)),
        ]),
        audited_as(app),
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
    ]
}

fn audited_as(app: &App) -> Line<'_> {
    Line::from(Span::styled(
        format!(
            "Recorded in the audit log as {}.",
            clean(&app.options().actor, 40)
        ),
        app.theme().style(Role::Muted),
    ))
}

fn reason_line<'a>(app: &'a App, reason: &str, editing: bool) -> Line<'a> {
    let t = app.theme();
    let mut spans = vec![Span::styled("reason: ", t.style(Role::Header))];
    if editing {
        spans.push(Span::styled(clean(reason, 200), t.style(Role::Base)));
        spans.push(Span::styled("█", t.style(Role::Accent)));
    } else if reason.is_empty() {
        spans.push(Span::styled(
            "(none — Tab to add one)",
            t.style(Role::Muted),
        ));
    } else {
        spans.push(Span::styled(clean(reason, 200), t.style(Role::Dialog)));
    }
    Line::from(spans)
}

fn choice_line<'a>(app: &'a App, editing: bool, yes: &'static str) -> Line<'a> {
    let t = app.theme();
    let pair = |key: &'static str, what: &'static str| {
        [
            Span::styled(key, t.style(Role::Key)),
            Span::styled(what, t.style(Role::Dialog)),
        ]
    };
    let spans: Vec<Span<'_>> = if editing {
        [pair(" Enter ", yes), pair(" Esc/Tab ", " done typing")]
            .into_iter()
            .flatten()
            .collect()
    } else {
        [
            pair(" y ", yes),
            pair(" n/Esc ", " keep it  "),
            pair(" Tab ", " reason"),
        ]
        .into_iter()
        .flatten()
        .collect()
    };
    Line::from(spans)
}
