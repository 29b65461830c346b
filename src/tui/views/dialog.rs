//! Popups: the confirmations of operator actions (cancel a workflow; requeue, discard or
//! retry now a work item; release or forget a gone authority; pause, resume or delete a
//! schedule; pause or resume a handler fleet-wide), each saying what will and will not
//! happen.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Clear, Paragraph, Wrap};

use super::super::app::TYPE_COUNT_ABOVE;
use super::super::app::{Act, App, AuthorityVerb, Confirmation};
use super::super::snapshot::ViewData;
use super::super::text::clean;
use super::super::theme::Role;
use crate::ops::bulk::Tally;
use crate::rules::handler::HandlerControl;
use crate::rules::schedule::Control;
use crate::rules::triage::Verb;

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

/// The confirmation of one act on one subject, in the act's own words.
pub fn confirmation(frame: &mut Frame<'_>, area: Rect, app: &App, c: &Confirmation) {
    let field = Field {
        reason: &c.reason,
        editing: c.editing,
    };
    match c.act {
        Act::Cancel => {
            let text = explanation(app, &c.subject);
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
        Act::Triage(verb) => confirm_triage(frame, area, app, verb, &c.subject, &field),
        Act::Authority(verb) => confirm_authority(frame, area, app, verb, &c.subject, &field),
        Act::Schedule(control) => confirm_schedule(frame, area, app, control, &c.subject, &field),
        Act::Handler(control) => confirm_handler(frame, area, app, control, &c.subject, &field),
    }
}

/// The confirmation of a requeue, discard or retry-now of one work item.
fn confirm_triage(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    verb: Verb,
    item: &str,
    field: &Field<'_>,
) {
    let t = app.theme();
    let words = VerbWords::of(verb);
    let mut text = vec![Line::from(vec![
        Span::styled(format!("{} work item ", words.what), t.style(Role::Dialog)),
        Span::styled(clean(item, 50), t.style(Role::Accent)),
    ])];
    text.extend(consequences(app, &words));
    text.push(Line::from(vec![
        Span::styled(" a ", t.style(Role::Key)),
        Span::styled(
            " instead: every item the / filter matches",
            t.style(Role::Dialog),
        ),
    ]));
    confirm(frame, area, app, words.title, text, field, words.yes);
}

/// The confirmation of a pause, a resume or a delete of one schedule.
fn confirm_schedule(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    control: Control,
    schedule: &str,
    field: &Field<'_>,
) {
    let words = match control {
        Control::Pause => ControlWords {
            title: " confirm pause ",
            what: "Pause schedule ",
            effect: "it fires nothing until resumed; firings already enqueued still run",
            yes: " pause it  ",
        },
        Control::Resume => ControlWords {
            title: " confirm resume ",
            what: "Resume schedule ",
            effect: "the boundaries it missed while paused fire as its catch-up policy keeps them",
            yes: " resume it  ",
        },
        Control::Delete => ControlWords {
            title: " confirm delete ",
            what: "Delete schedule ",
            effect: "its definition is removed: nothing fires after it; firings already enqueued still run",
            yes: " delete it  ",
        },
    };
    confirm_control(frame, area, app, &words, schedule, field);
}

/// The confirmation of a fleet-wide pause or resume of one handler.
fn confirm_handler(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    control: HandlerControl,
    handler: &str,
    field: &Field<'_>,
) {
    let words = match control {
        HandlerControl::Pause => ControlWords {
            title: " confirm pause ",
            what: "Pause handler ",
            effect: "no authority claims its work until resumed; items stay pending, attempts in flight finish",
            yes: " pause it  ",
        },
        HandlerControl::Resume => ControlWords {
            title: " confirm resume ",
            what: "Resume handler ",
            effect: "every authority running it claims its pending work again, from its next poll",
            yes: " resume it  ",
        },
    };
    confirm_control(frame, area, app, &words, handler, field);
}

/// What a confirmation of an operator's control of one subject says.
struct ControlWords {
    title: &'static str,
    what: &'static str,
    effect: &'static str,
    yes: &'static str,
}

/// The confirmation of a control of `subject`: what it is, who it is recorded as, and
/// its effect.
fn confirm_control(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    words: &ControlWords,
    subject: &str,
    field: &Field<'_>,
) {
    let t = app.theme();
    let text = vec![
        Line::from(vec![
            Span::styled(words.what, t.style(Role::Dialog)),
            Span::styled(clean(subject, 40), t.style(Role::Accent)),
        ]),
        audited_as(app),
        Line::from(vec![
            Span::styled("  • ", t.style(Role::Ok)),
            Span::styled(words.effect, t.style(Role::Dialog)),
        ]),
    ];
    confirm(frame, area, app, words.title, text, field, words.yes);
}

/// The confirmation of a release or a forget of one authority.
fn confirm_authority(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    verb: AuthorityVerb,
    instance: &str,
    field: &Field<'_>,
) {
    let t = app.theme();
    let (title, what, effect, yes) = match verb {
        AuthorityVerb::Release => (
            " confirm release ",
            "Release the claims of authority ",
            "each claim moves to a new generation: its work back to pending, its leases free, its late writes fenced",
            " release them  ",
        ),
        AuthorityVerb::Forget => (
            " confirm forget ",
            "Forget authority ",
            "its registration is removed (refused while it holds a claim: release first)",
            " forget it  ",
        ),
    };
    let mut text = vec![
        Line::from(vec![
            Span::styled(what, t.style(Role::Dialog)),
            Span::styled(clean(instance, 40), t.style(Role::Accent)),
        ]),
        audited_as(app),
        Line::from(vec![
            Span::styled("  • ", t.style(Role::Ok)),
            Span::styled(effect, t.style(Role::Dialog)),
        ]),
    ];
    // What the last refresh counted, so the operator knows the size of what is handed back
    // (`leasehold authority release --dry-run` lists it one by one).
    if let Some(held) = owned_now(app, instance) {
        text.push(Line::from(vec![
            Span::styled("  • ", t.style(Role::Ok)),
            Span::styled(held, t.style(Role::Dialog)),
        ]));
    }
    text.push(Line::from(Span::styled(
        "Refused while it is live or silent: the store judges its liveness as it writes.",
        t.style(Role::Muted),
    )));
    confirm(frame, area, app, title, text, field, yes);
}

/// The confirmation of a triage verb over every item a filter matches: how many, the
/// first of them, and (above the threshold) the count to type.
pub fn confirm_bulk(
    frame: &mut Frame<'_>,
    area: Rect,
    app: &App,
    verb: Verb,
    tally: &Tally,
    typed: &str,
    field: &Field<'_>,
) {
    let t = app.theme();
    let words = VerbWords::of(verb);
    let more = if tally.matched > tally.first.len() {
        ", …"
    } else {
        ""
    };
    let first: Vec<String> = tally.first.iter().map(|id| clean(id, 24)).collect();
    let mut text = vec![
        Line::from(vec![
            Span::styled(format!("{} ", words.what), t.style(Role::Dialog)),
            Span::styled(
                format!("{} work items", tally.matched),
                t.style(Role::Accent),
            ),
            Span::styled(" matching ", t.style(Role::Dialog)),
            Span::styled(clean(&tally.filter, 40), t.style(Role::Accent)),
        ]),
        Line::from(Span::styled(
            format!("first: {}{more}", first.join(", ")),
            t.style(Role::Muted),
        )),
    ];
    text.extend(consequences(app, &words));
    if tally.matched > TYPE_COUNT_ABOVE {
        text.push(Line::from(vec![
            Span::styled(
                format!("type {} to confirm: ", tally.matched),
                t.style(Role::Warning),
            ),
            Span::styled(clean(typed, 12), t.style(Role::Base)),
            // The cursor shows where digits go: here, unless the reason has the keyboard.
            Span::styled(if field.editing { "" } else { "█" }, t.style(Role::Accent)),
        ]));
    }
    confirm(frame, area, app, words.title, text, field, words.yes_all);
}

/// How a dialog speaks of a triage verb.
struct VerbWords {
    title: &'static str,
    what: &'static str,
    effect: &'static str,
    yes: &'static str,
    yes_all: &'static str,
}

impl VerbWords {
    fn of(verb: Verb) -> Self {
        match verb {
            Verb::Requeue => Self {
                title: " confirm requeue ",
                what: "Requeue",
                effect: "a fresh attempt budget, due now (failed and dead-lettered items)",
                yes: " requeue it  ",
                yes_all: " requeue them  ",
            },
            Verb::Discard => Self {
                title: " confirm discard ",
                what: "Discard",
                effect: "ended for good (failed, with your reason); never run again",
                yes: " discard it  ",
                yes_all: " discard them  ",
            },
            Verb::RetryNow => Self {
                title: " confirm retry now ",
                what: "Retry now",
                effect: "its backoff or delay skipped: due at once",
                yes: " retry it now  ",
                yes_all: " retry them now  ",
            },
        }
    }
}

/// What the change does, and who it is recorded as.
fn consequences<'a>(app: &'a App, words: &VerbWords) -> [Line<'a>; 3] {
    let t = app.theme();
    [
        audited_as(app),
        Line::from(vec![
            Span::styled("  • ", t.style(Role::Ok)),
            Span::styled(words.effect, t.style(Role::Dialog)),
        ]),
        Line::from(Span::styled(
            "The store judges each item again as it writes: one that moved is refused.",
            t.style(Role::Muted),
        )),
    ]
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

/// `holds 12 claimed items now (3 expired), and any leases`, as the authorities view's
/// last refresh counted them.
fn owned_now(app: &App, instance: &str) -> Option<String> {
    let ViewData::Authorities { owned, .. } = &app.snapshot()?.data else {
        return None;
    };
    let held = owned.get(instance).copied().unwrap_or_default();
    let expired = match held.expired {
        0 => String::new(),
        n => format!(" ({n} expired)"),
    };
    Some(format!(
        "holds {} claimed items now{expired}, and any leases",
        held.claimed
    ))
}
