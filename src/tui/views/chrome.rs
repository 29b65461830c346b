//! The frame around every view: the header (store — with several attached, the one on
//! screen as a badge and each other's state: live or stale — revision, a red REWOUND
//! badge when this host's writers refuse the store, LIVE / PAUSED,
//! stale and loading badges, query stats), the view tabs (or the store-error banner), and the footer
//! (prompt, status message or key hints).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use super::super::action::ViewId;
use super::super::app::{App, PICK_KEYS, PromptKind, completions};
use super::super::keymap::{Group, bindings};
use super::super::text::clean;
use super::super::theme::Role;
use crate::clock::format_duration;

/// `[header, tabs, body, footer]`.
#[must_use]
pub fn layout(area: Rect) -> [Rect; 4] {
    Layout::vertical([
        Constraint::Length(1),
        Constraint::Length(1),
        Constraint::Fill(1),
        Constraint::Length(1),
    ])
    .areas(area)
}

pub fn header(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let t = app.theme();
    let mut left = vec![Span::styled(" leasehold ", t.style(Role::Title))];
    let sep = || Span::styled(" │ ", t.style(Role::Border));
    let badges = app.store_badges();
    if let Some(current) = badges.iter().find(|b| b.current) {
        left.push(Span::styled(
            format!(" {} ", clean(&current.name, 24)),
            t.style(Role::Selection),
        ));
    }
    match app.snapshot() {
        Some(s) => {
            if badges.is_empty() {
                left.push(Span::styled(clean(&s.store, 40), t.style(Role::Accent)));
            }
            left.push(sep());
            left.push(Span::styled(
                format!("rev {}", s.overview.revision),
                t.style(Role::Base),
            ));
            if s.rewound.is_some() {
                left.push(sep());
                left.push(Span::styled(
                    "REWOUND: this host's writers refuse it (overview)",
                    t.style(Role::Error),
                ));
            } else if s.server_changed.is_some_and(|c| !c.acknowledged) {
                left.push(sep());
                left.push(Span::styled(
                    "SERVER CHANGED: commits may have been lost (overview)",
                    t.style(Role::Warning),
                ));
            }
            if let Some(scenario) = &s.scenario {
                left.push(sep());
                left.push(Span::styled(
                    format!("demo {}", clean(scenario, 30)),
                    t.style(Role::Muted),
                ));
            }
            if let Some(verdict) = app.checked() {
                left.push(sep());
                left.extend(crate::tui::checker_badge::badge(verdict, t));
            }
        }
        None => left.push(Span::styled("connecting…", t.style(Role::Stale))),
    }
    if app.options().read_only {
        left.push(sep());
        left.push(Span::styled("read-only", t.style(Role::Warning)));
    }
    for other in badges.iter().filter(|b| !b.current) {
        left.push(sep());
        left.push(Span::styled(
            format!("{} ", clean(&other.name, 24)),
            t.style(Role::Muted),
        ));
        left.push(match other.stale_for {
            None => Span::styled("live", t.style(Role::Live)),
            Some(ms) => Span::styled(format!("stale {}s", ms / 1000), t.style(Role::Stale)),
        });
    }
    let mut right: Vec<Span<'_>> = Vec::new();
    if app.show_stats()
        && let Some(s) = app.snapshot()
    {
        right.push(Span::styled(
            format!(
                "{} queries {:.1}ms ",
                s.stats.queries,
                s.stats.latency_us as f64 / 1000.0
            ),
            t.style(Role::Muted),
        ));
    }
    if app.loading() {
        right.push(Span::styled("loading… ", t.style(Role::Stale)));
    }
    if let Some(ms) = app.stale_for() {
        right.push(Span::styled(
            format!("stale {}s ", ms / 1000),
            t.style(Role::Stale),
        ));
    }
    if app.paused() {
        right.push(Span::styled(" PAUSED ", t.style(Role::Paused)));
    } else {
        right.push(Span::styled("● LIVE", t.style(Role::Live)));
    }
    right.push(Span::raw(" "));
    let right = Line::from(right);
    let rw = u16::try_from(right.width())
        .unwrap_or(u16::MAX)
        .min(area.width);
    let [l, r] = Layout::horizontal([Constraint::Fill(1), Constraint::Length(rw)]).areas(area);
    frame.render_widget(Paragraph::new(Line::from(left)), l);
    frame.render_widget(Paragraph::new(right), r);
}

/// The label of each tab: the full name, a short one when the terminal is narrow, its
/// first three letters when even those do not fit, and at the narrowest only the keys,
/// with the short name of the view on screen (`current`), so every tab stays in sight.
fn tab_labels(width: u16, current: ViewId) -> Vec<(ViewId, String)> {
    let fits = |name: &dyn Fn(ViewId) -> &'static str| {
        ViewId::MAIN
            .iter()
            .map(|v| u16::try_from(name(*v).len()).unwrap_or(0) + 3)
            .sum::<u16>()
            < width
    };
    let three = |v: ViewId| short_name(v).get(..3).unwrap_or(short_name(v));
    let keys_only = |v: ViewId| if v == current { short_name(v) } else { "" };
    let name: &dyn Fn(ViewId) -> &'static str = if fits(&ViewId::name) {
        &ViewId::name
    } else if fits(&short_name) {
        &short_name
    } else if fits(&three) {
        &three
    } else {
        &keys_only
    };
    ViewId::MAIN
        .iter()
        .map(|v| {
            let key = v.digit().unwrap_or(' ');
            match name(*v) {
                "" => (*v, key.to_string()),
                named => (*v, format!("{key}:{named}")),
            }
        })
        .collect()
}

fn short_name(view: ViewId) -> &'static str {
    match view {
        ViewId::Overview => "over",
        ViewId::Authorities => "auth",
        ViewId::Leases => "lease",
        ViewId::Work => "work",
        ViewId::Workflows => "wflow",
        ViewId::Cursors => "curs",
        ViewId::Events => "event",
        ViewId::Schedules => "sched",
        ViewId::Audit => "audit",
        ViewId::Timeline => "time",
        ViewId::WorkflowDetail => "wf",
        ViewId::Failovers => "fail",
        ViewId::Fenced => "fence",
        ViewId::Triage => "triage",
        ViewId::Builds => "builds",
        ViewId::Horizon => "horizon",
        ViewId::Replay => "replay",
    }
}

/// The tab that stands for `view` (a workflow's detail is under the workflows).
fn tab_of(view: ViewId) -> ViewId {
    if view == ViewId::WorkflowDetail {
        ViewId::Workflows
    } else {
        view
    }
}

/// The view tab under column `x` of the tabs row, while `on_screen` is shown.
#[must_use]
pub fn tab_at(area: Rect, x: u16, on_screen: ViewId) -> Option<ViewId> {
    let mut pos = area.x + 1;
    for (view, label) in tab_labels(area.width, tab_of(on_screen)) {
        let w = u16::try_from(label.chars().count()).unwrap_or(0);
        if x >= pos && x < pos + w {
            return Some(view);
        }
        pos += w + 1;
    }
    None
}

pub fn tabs(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let t = app.theme();
    if let Some(err) = app.store_error() {
        let text = format!(
            " STORE ERROR: {} — retry #{} in {} (showing the last good frame) ",
            clean(&err.message, 200),
            err.failures,
            format_duration(i64::try_from(err.retry_in_ms).unwrap_or(0))
        );
        frame.render_widget(Paragraph::new(text).style(t.style(Role::Error)), area);
        return;
    }
    let current = tab_of(app.view());
    let mut spans = vec![Span::raw(" ")];
    for (view, label) in tab_labels(area.width, current) {
        let role = if view == current {
            Role::Selection
        } else {
            Role::Muted
        };
        spans.push(Span::styled(label, t.style(role)));
        spans.push(Span::raw(" "));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

pub fn footer(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let t = app.theme();
    if let Some(prompt) = app.prompt() {
        let label = match &prompt.kind {
            PromptKind::Command => ":".to_owned(),
            PromptKind::Filter => "/".to_owned(),
            PromptKind::Pick(key) => format!("{} ", key.question()),
            PromptKind::Skew { authority } => {
                format!("clock offset ms for {}: ", clean(authority, 30))
            }
        };
        let mut spans = vec![
            Span::styled(label, t.style(Role::Key)),
            Span::styled(clean(&prompt.text, 200), t.style(Role::Base)),
            Span::styled("█", t.style(Role::Accent)),
        ];
        if let PromptKind::Pick(_) = prompt.kind {
            spans.pop();
            for (key, choice) in PICK_KEYS.chars().zip(app.pick_choices()) {
                spans.push(Span::styled(format!(" {key} "), t.style(Role::Key)));
                spans.push(Span::styled(clean(&choice.label, 60), t.style(Role::Base)));
            }
            spans.push(Span::styled("  Esc cancel", t.style(Role::Muted)));
        }
        if prompt.kind == PromptKind::Command {
            let options = completions(&prompt.text, &app.store_names());
            if !options.is_empty() && !prompt.text.is_empty() {
                spans.push(Span::styled(
                    format!("  Tab → {}", options.join(" ")),
                    t.style(Role::Muted),
                ));
            }
        }
        if prompt.kind == PromptKind::Filter {
            let fields = crate::tui::store_filter::subject(app.view())
                .fields()
                .iter()
                .map(|f| format!("{f}:"))
                .collect::<Vec<_>>()
                .join(" ");
            spans.push(Span::styled(
                format!("  {fields} or an id prefix · Enter apply · Esc keep"),
                t.style(Role::Muted),
            ));
        }
        frame.render_widget(Paragraph::new(Line::from(spans)), area);
        return;
    }
    if let Some(status) = app.status() {
        frame.render_widget(
            Paragraph::new(format!(" {}", clean(&status.text, 300))).style(t.style(status.role)),
            area,
        );
        return;
    }
    // Whole hints only: drop the ones that do not fit, keeping `q quit` last.
    let mut hints = hints(app);
    let quit = hints.pop();
    let mut spans = vec![Span::raw(" ")];
    let mut used = 1 + quit
        .as_ref()
        .map_or(0, |(k, w)| k.chars().count() + w.len() + 1);
    for (keys, what) in hints {
        let w = keys.chars().count() + what.len() + 3;
        if used + w > usize::from(area.width) {
            continue;
        }
        used += w;
        spans.push(Span::styled(keys, t.style(Role::Key)));
        spans.push(Span::styled(format!(" {what}  "), t.style(Role::Muted)));
    }
    if let Some((keys, what)) = quit {
        spans.push(Span::styled(keys, t.style(Role::Key)));
        spans.push(Span::styled(format!(" {what}"), t.style(Role::Muted)));
    }
    frame.render_widget(Paragraph::new(Line::from(spans)), area);
}

/// The few keys worth showing in the footer for this view.
fn hints(app: &App) -> Vec<(String, &'static str)> {
    let mut out: Vec<(String, &'static str)> = vec![("?".into(), "help"), (":".into(), "view")];
    let view = app.view();
    if view.is_table() {
        out.extend([
            ("/".into(), "filter"),
            ("s".into(), "sort"),
            ("PgDn".into(), "page"),
            ("d".into(), "describe"),
        ]);
    }
    if !app.mouse_captured() {
        out.insert(0, ("m".into(), "mouse released: select text"));
    }
    match view {
        ViewId::Work => out.push(("p c r f x a".into(), "quick filter")),
        ViewId::Leases | ViewId::Cursors | ViewId::Schedules => out.push(("t".into(), "timeline")),
        ViewId::WorkflowDetail => out.push(("Esc".into(), "back")),
        ViewId::Replay => out.extend([
            ("[ ]".into(), "step"),
            ("{ }".into(), "failover"),
            ("Enter".into(), "owner at step"),
        ]),
        _ => {}
    }
    let operator = !app.options().read_only;
    if operator && matches!(view, ViewId::Workflows | ViewId::WorkflowDetail) {
        out.push(("C".into(), "cancel"));
    }
    if operator && app.options().demo {
        // The demo's fault keys come first in every view: they are what the demo is for.
        let demo: Vec<String> = bindings()
            .iter()
            .filter(|b| b.group == Group::Demo)
            .map(super::super::keymap::Binding::label)
            .collect();
        out.insert(0, (demo.join(" "), "faults"));
    }
    out.push((
        "space".into(),
        if app.paused() { "resume" } else { "pause" },
    ));
    out.push(("q".into(), "quit"));
    out
}
