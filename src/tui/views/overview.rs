//! The overview: counts by kind × state, workflows and events at a glance, throughput and
//! fenced-write sparklines from successive snapshots, how late each kind of work runs (its
//! oldest due item's wait, `ops::lateness`, as `inspect overview` states it), how much
//! work no live authority can run, authorities at a glance, and the failovers of the last
//! window (the store's failover list, as the failovers view and `inspect failovers`), and
//! the outcomes held in recovery and writes stalled on the store's lock, as the
//! authorities publish them (`ops::published`, as `inspect overview` states it).

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Row as TableRow, Sparkline, Table};

use super::super::app::{App, Sample};
use super::super::snapshot::Snapshot;
use super::super::text::clean;
use super::super::theme::{Role, Theme};
use super::authorities::state_role;
use super::work::state_role as work_role;
use crate::clock::{Millis, format_duration};
use crate::foundation::timefmt::TimeFmt;
use crate::model::{WorkGroup, WorkKind, WorkState};
use crate::ops::published::PublishedView;
use crate::rules::lateness;
use crate::rules::liveness::{Liveness, liveness};

/// Per-second rates between successive samples of `f`.
#[must_use]
pub fn rates(samples: &std::collections::VecDeque<Sample>, f: impl Fn(&Sample) -> u64) -> Vec<u64> {
    samples
        .iter()
        .zip(samples.iter().skip(1))
        .map(|(a, b)| {
            let dt = (b.wall - a.wall).max(1);
            let d = f(b).saturating_sub(f(a));
            d.saturating_mul(1000) / u64::try_from(dt).unwrap_or(1)
        })
        .collect()
}

pub fn render(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let t = app.theme();
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.style(Role::Border))
        .title(Span::styled(" overview ", t.style(Role::Title)));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let Some(snap) = app.snapshot() else {
        frame.render_widget(
            Paragraph::new("loading…").style(t.style(Role::Muted)),
            inner,
        );
        return;
    };
    let now = app.now();
    let wide = inner.width >= 110;
    let spark_rows = if inner.height >= 30 { 5 } else { 2 };
    let (counts, facts, sparks, bottom) = if wide {
        let [top, sparks, bottom] = Layout::vertical([
            Constraint::Length(9),
            Constraint::Length(spark_rows),
            Constraint::Fill(1),
        ])
        .spacing(1)
        .areas(inner);
        // The counts' `discarded` column only where the facts beside keep their width.
        let counts_width = if inner.width >= 150 { 70 } else { 60 };
        let [counts, facts] =
            Layout::horizontal([Constraint::Length(counts_width), Constraint::Fill(1)])
                .spacing(2)
                .areas(top);
        (counts, facts, sparks, bottom)
    } else {
        let [counts, facts, sparks, bottom] = Layout::vertical([
            Constraint::Length(5),
            Constraint::Length(8),
            Constraint::Length(spark_rows),
            Constraint::Fill(1),
        ])
        .areas(inner);
        (counts, facts, sparks, bottom)
    };
    counts_table(frame, counts, t, snap);
    facts_panel(frame, facts, t, snap, now);
    sparklines(frame, sparks, app);
    let [auths, fails] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
            .spacing(1)
            .areas(bottom);
    authorities(frame, auths, t, snap, now);
    failover_list(frame, fails, t, snap, app.time_fmt());
}

/// A column of the counts table with its spacing: nine digits (or `succeeded`) and one.
const COLUMN: usize = 10;

fn counts_table(frame: &mut Frame<'_>, area: Rect, t: &Theme, snap: &Snapshot) {
    // One column per stored state, and failed items a person discarded apart from the
    // failures nobody decided (as `state:failed` and `state:discarded` name them), where
    // there is room for a column more; `failed` never counts the discards either way.
    let room = usize::from(area.width) >= COLUMN * (WorkState::ALL.len() + 2);
    let columns: Vec<(WorkState, bool)> = (WorkState::ALL.iter().map(|s| (*s, false)))
        .chain(room.then_some((WorkState::Failed, true)))
        .collect();
    let header = TableRow::new(
        std::iter::once(Span::styled("WORK", t.style(Role::Header))).chain(columns.iter().map(
            |(s, discarded)| {
                let role = if *discarded {
                    Role::Muted
                } else {
                    work_role(*s)
                };
                Span::styled(WorkGroup::count_name(*s, *discarded), t.style(role))
            },
        )),
    );
    let count = |kind: Option<WorkKind>, (state, discarded): (WorkState, bool)| -> u64 {
        snap.overview
            .work
            .iter()
            .filter(|w| kind.is_none_or(|k| w.kind == k))
            .filter(|w| w.state == state && w.discarded == discarded)
            .map(|w| w.count)
            .sum()
    };
    let mut rows: Vec<TableRow<'_>> = WorkKind::ALL
        .iter()
        .map(|k| {
            TableRow::new(
                std::iter::once(Span::raw(k.as_str())).chain(columns.iter().map(|c| {
                    let n = count(Some(*k), *c);
                    Span::styled(
                        format!("{n:>9}"),
                        if n == 0 {
                            t.style(Role::Muted)
                        } else {
                            t.style(Role::Base)
                        },
                    )
                })),
            )
        })
        .collect();
    rows.push(TableRow::new(
        std::iter::once(Span::styled("total", t.style(Role::Accent))).chain(
            columns
                .iter()
                .map(|c| Span::styled(format!("{:>9}", count(None, *c)), t.style(Role::Accent))),
        ),
    ));
    let widths =
        std::iter::once(Constraint::Length(9)).chain(columns.iter().map(|_| Constraint::Length(9)));
    frame.render_widget(
        Table::new(rows, widths).header(header).column_spacing(1),
        area,
    );
    // Without the column, discards are still said, under the table where it has a row
    // to spare (the wide layout's), so none of them goes unseen.
    let discarded = count(None, (WorkState::Failed, true));
    let below = 1 + u16::try_from(WorkKind::ALL.len() + 1).unwrap_or(u16::MAX);
    if !room && discarded > 0 && area.height > below {
        let line = Line::from(vec![
            Span::styled("discarded ", t.style(Role::Muted)),
            Span::styled(discarded.to_string(), t.style(Role::Base)),
            Span::styled(" (apart from failed)", t.style(Role::Muted)),
        ]);
        let row = Rect {
            y: area.y + below,
            height: 1,
            ..area
        };
        frame.render_widget(Paragraph::new(line), row);
    }
}

/// Per kind, how late its latest lane runs — `effect 45m00s  schedule 1.2s` — or `-`. The
/// latest of them is the oldest waiting item's age; `inspect overview` names each lane.
fn late_kinds(snap: &Snapshot, now: Millis) -> String {
    let kinds = lateness::by_kind(&lateness::lanes(&snap.overview.waiting_lanes, now));
    if kinds.is_empty() {
        return "-".into();
    }
    kinds
        .iter()
        .map(|k| format!("{} {}", k.kind.as_str(), format_duration(k.late_ms)))
        .collect::<Vec<_>>()
        .join("  ")
}

#[expect(clippy::too_many_lines, reason = "the facts panel, one line per fact")]
fn facts_panel(frame: &mut Frame<'_>, area: Rect, t: &Theme, snap: &Snapshot, now: Millis) {
    let states: Vec<Liveness> = snap
        .fleet
        .registrations()
        .iter()
        .map(|a| liveness(a, now))
        .collect();
    let mut spans = vec![Span::styled("authorities", t.style(Role::Muted))];
    for state in Liveness::ALL {
        let n = states.iter().filter(|x| **x == state).count();
        // Live is always coloured; the others only when there are some to notice.
        let role = if n > 0 || state == Liveness::Live {
            state_role(state)
        } else {
            Role::Muted
        };
        spans.push(Span::raw(" "));
        spans.push(Span::styled(format!("{n} {state}"), t.style(role)));
    }
    let mut lines: Vec<Line<'_>> = snap
        .rewound
        .iter()
        .map(|why| {
            Line::from(vec![
                Span::styled("rewound ", t.style(Role::Muted)),
                Span::styled(
                    format!("{}; this host's writers refuse it", clean(why, 300)),
                    t.style(Role::Error),
                ),
            ])
        })
        .chain(snap.server_changed.iter().map(|change| {
            let (said, role) = if change.acknowledged {
                (
                    format!("changed (acknowledged): {}", change.sentence()),
                    Role::Muted,
                )
            } else {
                (change.sentence(), Role::Warning)
            };
            Line::from(vec![
                Span::styled("server ", t.style(Role::Muted)),
                Span::styled(clean(&said, 300), t.style(role)),
            ])
        }))
        .collect();
    lines.push(Line::from(spans));
    lines.push(Line::from(vec![
        Span::styled("stranded ", t.style(Role::Muted)),
        Span::styled(
            snap.incompatible.to_string(),
            t.style(if snap.incompatible > 0 {
                Role::Incompatible
            } else {
                Role::Ok
            }),
        ),
        Span::styled(
            if snap.incompatible > 0 && !snap.fleet.any_running() {
                " (no authority is running)"
            } else {
                ""
            },
            t.style(Role::Incompatible),
        ),
        Span::styled("  late ", t.style(Role::Muted)),
        Span::styled(late_kinds(snap, now), t.style(Role::Base)),
    ]));
    let wf: Vec<Span<'_>> = snap
        .overview
        .workflows
        .iter()
        .filter(|(_, n)| *n > 0)
        .flat_map(|(s, n)| {
            [
                Span::styled(
                    format!("{n} {s}"),
                    t.style(super::workflows::status_role(s)),
                ),
                Span::raw(" "),
            ]
        })
        .collect();
    lines.push(Line::from(
        std::iter::once(Span::styled("workflows ", t.style(Role::Muted)))
            .chain(if wf.is_empty() {
                vec![Span::styled("none", t.style(Role::Muted))]
            } else {
                wf
            })
            .collect::<Vec<_>>(),
    ));
    let ev: Vec<Span<'_>> = snap
        .overview
        .events
        .iter()
        .filter(|(_, n)| *n > 0)
        .flat_map(|(s, n)| {
            let role = crate::model::DedupOutcome::parse(s)
                .map_or(Role::Base, super::events::outcome_role);
            [
                Span::styled(format!("{n} {s}"), t.style(role)),
                Span::raw(" "),
            ]
        })
        .collect();
    lines.push(Line::from(
        std::iter::once(Span::styled("events ", t.style(Role::Muted)))
            .chain(if ev.is_empty() {
                vec![Span::styled("none", t.style(Role::Muted))]
            } else {
                ev
            })
            .collect::<Vec<_>>(),
    ));
    lines.push(Line::from(vec![
        Span::styled("claims ", t.style(Role::Muted)),
        Span::raw(snap.overview.claims.to_string()),
        Span::styled("  writes ", t.style(Role::Muted)),
        Span::styled(
            format!("{} ok", snap.overview.writes_accepted),
            t.style(Role::Ok),
        ),
        Span::raw(" "),
        Span::styled(
            format!("{} fenced", snap.overview.writes_refused),
            t.style(if snap.overview.writes_refused > 0 {
                Role::Fenced
            } else {
                Role::Muted
            }),
        ),
    ]));
    let (count, window) = snap
        .failovers
        .as_ref()
        .map_or((0, String::new()), |l| (l.total, l.window.label()));
    lines.push(Line::from(vec![
        Span::styled("failovers ", t.style(Role::Muted)),
        Span::styled(
            count.to_string(),
            t.style(if count > 0 { Role::Fenced } else { Role::Ok }),
        ),
        Span::styled(
            format!("  (last {window}; F lists them, W the fenced writes)"),
            t.style(Role::Muted),
        ),
    ]));
    let retention = crate::ops::retention::RetentionView::read(
        snap.fleet.registrations(),
        snap.overview.history_from,
    );
    lines.push(Line::from(vec![
        Span::styled("retention ", t.style(Role::Muted)),
        Span::styled(retention.line(), t.style(Role::Base)),
    ]));
    let published = PublishedView::read(snap.fleet.registrations(), &snap.stalls, now);
    let stalls = published.stalls_text(now).map_or_else(
        || Span::styled("no write stalled", t.style(Role::Muted)),
        |text| Span::styled(clean(&text, 400), t.style(Role::Warning)),
    );
    lines.push(Line::from(vec![
        Span::styled("in recovery ", t.style(Role::Muted)),
        Span::styled(
            published.in_recovery.to_string(),
            t.style(if published.in_recovery > 0 {
                Role::Warning
            } else {
                Role::Ok
            }),
        ),
        Span::raw("  "),
        stalls,
    ]));
    frame.render_widget(
        Paragraph::new(lines).wrap(ratatui::widgets::Wrap { trim: true }),
        area,
    );
}

fn sparklines(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let t = app.theme();
    let claims = rates(app.samples(), |s| s.claims);
    let fenced = rates(app.samples(), |s| s.refused);
    let [a, b] = Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
        .spacing(1)
        .areas(area);
    for (area, title, data, role) in [
        (a, "claims/s", claims, Role::Sparkline),
        (b, "fenced writes/s", fenced, Role::WorkFailed),
    ] {
        let latest = data.last().copied().unwrap_or(0);
        let [label, spark] =
            Layout::vertical([Constraint::Length(1), Constraint::Fill(1)]).areas(area);
        frame.render_widget(
            Paragraph::new(Line::from(vec![
                Span::styled(format!("{title} "), t.style(Role::Muted)),
                Span::styled(latest.to_string(), t.style(Role::Accent)),
            ])),
            label,
        );
        let width = usize::from(spark.width);
        let tail: Vec<u64> = data
            .iter()
            .skip(data.len().saturating_sub(width))
            .copied()
            .collect();
        frame.render_widget(Sparkline::default().data(&tail).style(t.style(role)), spark);
    }
}

fn authorities(frame: &mut Frame<'_>, area: Rect, t: &Theme, snap: &Snapshot, now: Millis) {
    let mut lines = vec![Line::from(Span::styled(
        "AUTHORITIES",
        t.style(Role::Header),
    ))];
    let registrations = snap.fleet.registrations();
    if registrations.is_empty() {
        lines.push(Line::from(Span::styled(
            "none registered",
            t.style(Role::Muted),
        )));
    }
    // A row per line the panel shows: the registry may hold thousands.
    for a in registrations.iter().take(usize::from(area.height)) {
        let state = liveness(a, now);
        let demo = snap
            .demo
            .as_ref()
            .and_then(|d| d.iter().find(|x| x.id == a.instance_id))
            .map(|d| d.state.as_str())
            .filter(|s| *s != "running");
        let mut spans = vec![
            Span::styled(format!("{:<8}", state.as_str()), t.style(state_role(state))),
            Span::raw(clean(&a.instance_id, 24)),
            Span::styled(format!(" {} ", clean(&a.build, 12)), t.style(Role::Muted)),
            Span::styled(
                format!(
                    "hb {}",
                    crate::ops::heartbeat::heartbeat_age(now, a.heartbeat_at)
                ),
                t.style(Role::Muted),
            ),
        ];
        if let Some(d) = demo {
            spans.push(Span::styled(format!(" [{d}]"), t.style(Role::Warning)));
        }
        // Another build than the running fleet's; with none running, no build is the
        // fleet's and the overview's stranded line says why.
        if snap.fleet.any_running() && !snap.live_compats.contains(&a.compat) {
            spans.push(Span::styled(" incompatible", t.style(Role::Incompatible)));
        }
        lines.push(Line::from(spans));
    }
    frame.render_widget(Paragraph::new(lines), area);
}

fn failover_list(frame: &mut Frame<'_>, area: Rect, t: &Theme, snap: &Snapshot, fmt: TimeFmt) {
    let Some(list) = &snap.failovers else {
        return;
    };
    let mut lines = vec![Line::from(Span::styled(
        format!("FAILOVERS · {}", list.headline("in window", "in window")),
        t.style(Role::Header),
    ))];
    if list.rows.is_empty() {
        lines.push(Line::from(Span::styled(
            format!("none in the last {}", list.window.label()),
            t.style(Role::Muted),
        )));
    }
    for f in list
        .rows
        .iter()
        .take(usize::from(area.height.saturating_sub(1)))
    {
        lines.push(Line::from(vec![
            Span::styled(fmt.wall(f.at), t.style(Role::Muted)),
            Span::raw(" "),
            Span::raw(clean(&f.resource, 22)),
            Span::styled(
                format!(" {} → {}", clean(&f.from, 14), clean(&f.to, 14)),
                t.style(Role::Fenced),
            ),
            Span::styled(
                format!(
                    " gen {} lapsed {} ({})",
                    f.generation,
                    f.lapsed_label(),
                    fmt.relative(f.at)
                ),
                t.style(Role::Muted),
            ),
        ]));
    }
    frame.render_widget(Paragraph::new(lines), area);
}
