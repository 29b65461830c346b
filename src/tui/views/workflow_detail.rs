//! Workflow detail: the inspection fields, the bindings, and the durable history as a tree
//! (tui-tree-widget) — one node per step activation holding its transitions, with the
//! instance-level records (started, completed, cancelled…) between them in log order.

use std::collections::BTreeSet;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, Borders, Paragraph, Wrap};
use tui_tree_widget::{Tree, TreeItem, TreeState};

use super::super::app::App;
use super::super::snapshot::ViewData;
use super::super::text::{clean, relative};
use super::super::theme::{Role, Theme};
use super::super::wf;
use crate::foundation::timefmt::TimeFmt;
use crate::model::{HistoryRecord, InstanceRow};
use crate::ops::pretty;

/// One node of the history tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub id: String,
    pub record: Option<HistoryRecord>,
    /// For activation nodes: the activation id and step.
    pub activation: Option<(String, Option<String>)>,
    pub children: Vec<Node>,
}

/// Groups the log by activation, keeping log order.
#[must_use]
pub fn nodes(history: &[HistoryRecord]) -> Vec<Node> {
    let mut out: Vec<Node> = Vec::new();
    for r in history {
        let leaf = Node {
            id: format!("h{}", r.position),
            record: Some(r.clone()),
            activation: None,
            children: Vec::new(),
        };
        match &r.activation_id {
            Some(a) => {
                let id = format!("a:{a}");
                if let Some(node) = out.iter_mut().find(|n| n.id == id) {
                    node.children.push(leaf);
                } else {
                    out.push(Node {
                        id,
                        record: None,
                        activation: Some((a.clone(), r.step_id.clone())),
                        children: vec![leaf],
                    });
                }
            }
            None => out.push(leaf),
        }
    }
    out
}

/// The selectable paths, top to bottom, with `closed` nodes collapsed.
#[must_use]
pub fn visible_paths(nodes: &[Node], closed: &BTreeSet<String>) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    for n in nodes {
        out.push(vec![n.id.clone()]);
        if !closed.contains(&n.id) {
            for c in &n.children {
                out.push(vec![n.id.clone(), c.id.clone()]);
            }
        }
    }
    out
}

fn kind_role(kind: &str) -> Role {
    match kind {
        "step-failed" | "failed" | "timeout-fired" => Role::WorkFailed,
        "retry-scheduled" => Role::WorkRetry,
        "completed" | "step-succeeded" => Role::Ok,
        "cancelled" => Role::WfCancelled,
        "event-matched" | "timer-fired" => Role::WfWaiting,
        _ => Role::Base,
    }
}

fn record_line<'a>(t: &Theme, fmt: TimeFmt, r: &HistoryRecord, width: usize) -> Line<'a> {
    // Instants inside the detail are annotated (`"fireAt":… (14:03:07, in 4.2s)`).
    let detail = match serde_json::from_str::<serde_json::Value>(&r.detail) {
        Ok(serde_json::Value::Null) => String::new(),
        Ok(serde_json::Value::Object(m)) if m.is_empty() => String::new(),
        Ok(v) => pretty::inline(&v, fmt),
        Err(_) => r.detail.clone(),
    };
    Line::from(vec![
        Span::styled(format!("{} ", fmt.wall(r.at)), t.style(Role::Muted)),
        Span::styled(
            format!("{:<15}", clean(&r.kind, 20)),
            t.style(kind_role(&r.kind)),
        ),
        Span::styled(format!(" r{} ", r.instance_revision), t.style(Role::Muted)),
        Span::raw(clean(&detail, width.max(8))),
    ])
}

fn items<'a>(t: &Theme, fmt: TimeFmt, nodes: &[Node], width: usize) -> Vec<TreeItem<'a, String>> {
    nodes
        .iter()
        .filter_map(|n| {
            if let Some((activation, step)) = &n.activation {
                let failed = n
                    .children
                    .iter()
                    .any(|c| c.record.as_ref().is_some_and(|r| r.kind == "step-failed"));
                let label = Line::from(vec![
                    Span::styled(clean(activation, 40), t.style(Role::Accent)),
                    Span::styled(
                        format!("  {}  ", clean(step.as_deref().unwrap_or("-"), 30)),
                        t.style(Role::Base),
                    ),
                    Span::styled(
                        format!("{} transitions", n.children.len()),
                        t.style(if failed { Role::WorkRetry } else { Role::Muted }),
                    ),
                ]);
                let children: Vec<TreeItem<'a, String>> = n
                    .children
                    .iter()
                    .filter_map(|c| {
                        c.record.as_ref().map(|r| {
                            TreeItem::new_leaf(c.id.clone(), record_line(t, fmt, r, width))
                        })
                    })
                    .collect();
                TreeItem::new(n.id.clone(), label, children).ok()
            } else {
                n.record
                    .as_ref()
                    .map(|r| TreeItem::new_leaf(n.id.clone(), record_line(t, fmt, r, width)))
            }
        })
        .collect()
}

fn fields(app: &App, row: &InstanceRow) -> Vec<(String, String)> {
    let fmt = app.time_fmt();
    let now = fmt.now;
    let state = wf::state(row);
    let snap = app.snapshot();
    let (compat_text, ok) = snap.map_or(("?", true), |s| super::work::compatible(s, &row.compat));
    let terminal = super::workflows::terminal(row.status.as_str());
    let mut f = vec![
        ("status".to_owned(), row.status.to_string()),
        ("revision".into(), row.instance_revision.to_string()),
        (
            "step".into(),
            state
                .as_ref()
                .and_then(|s| s.current_step_id.clone())
                .map_or_else(|| "-".into(), |s| clean(&s, 60)),
        ),
        (
            "activation".into(),
            state
                .as_ref()
                .and_then(|s| s.activation_id.clone())
                .map_or_else(|| "-".into(), |s| clean(&s, 60)),
        ),
        (
            "attempt".into(),
            state
                .as_ref()
                .map_or_else(|| "-".into(), |s| s.attempt.to_string()),
        ),
        (
            "waiting".into(),
            state
                .as_ref()
                .and_then(super::workflows::wf_waiting)
                .map_or_else(|| "-".into(), |s| clean(&s, 60)),
        ),
        ("next eligible".into(), relative(now, row.next_eligible_at)),
        ("definition".into(), clean(&row.workflow_id, 60)),
        ("created".into(), fmt.at(row.created_at)),
        ("updated".into(), fmt.at(row.updated_at)),
        (
            "compatible".into(),
            format!("{compat_text} ({})", clean(&row.compat, 16)),
        ),
        ("principal".into(), clean(&row.principal, 60)),
    ];
    if !ok && !terminal {
        f.push((
            "incompatible".into(),
            "no live authority has this instance's build key; it waits, untouched".into(),
        ));
    }
    if let Some(s) = &state {
        if let Some(failure) = &s.failure {
            f.push((
                "failure".into(),
                clean(
                    &format!(
                        "{}: {} (retryable: {})",
                        failure.code, failure.message, failure.retryable
                    ),
                    300,
                ),
            ));
        }
        if let Some(output) = &s.output {
            f.push(("output".into(), clean(&output.to_string(), 300)));
        }
        let bindings = serde_json::Value::Object(s.bindings.clone()).to_string();
        f.push(("bindings".into(), clean(&bindings, 600)));
    } else {
        f.push((
            "state".into(),
            "the stored state could not be decoded".into(),
        ));
    }
    f
}

#[expect(
    clippy::too_many_lines,
    reason = "the detail view's layout, top to bottom"
)]
pub fn render(frame: &mut Frame<'_>, area: Rect, app: &App) {
    let t = app.theme();
    let id = app.instance().unwrap_or("-");
    let block = Block::default()
        .borders(Borders::ALL)
        .border_style(t.style(Role::Border))
        .title(Span::styled(
            format!(" workflow {} ", clean(id, 60)),
            t.style(Role::Title),
        ));
    let inner = block.inner(area);
    frame.render_widget(block, area);
    let data = app
        .snapshot()
        .filter(|_| app.snapshot_fits_view())
        .map(|s| &s.data);
    let Some(ViewData::Detail { instance, history }) = data else {
        frame.render_widget(
            Paragraph::new("loading…").style(t.style(Role::Muted)),
            inner,
        );
        return;
    };
    let Some(row) = instance else {
        frame.render_widget(
            Paragraph::new(format!("no workflow instance named {}", clean(id, 80)))
                .style(t.style(Role::Warning)),
            inner,
        );
        return;
    };
    let fields = fields(app, row);
    let two_cols = inner.width >= 60;
    let (fixed, rest): (Vec<_>, Vec<_>) = fields.iter().partition(|(k, _)| {
        !matches!(
            k.as_str(),
            "bindings" | "failure" | "output" | "incompatible"
        )
    });
    let fixed_lines = if two_cols {
        fixed.len().div_ceil(2)
    } else {
        fixed.len()
    };
    let top_height = u16::try_from(fixed_lines + rest.len())
        .unwrap_or(u16::MAX)
        .min(inner.height / 2)
        .max(1);
    let [top, tree_area] =
        Layout::vertical([Constraint::Length(top_height), Constraint::Fill(1)]).areas(inner);
    let field_line = |(k, v): &(String, String)| -> Line<'_> {
        let role = match (k.as_str(), v.as_str()) {
            ("status", s) => super::workflows::status_role(s),
            ("compatible", v) if v.starts_with("NO") => Role::Incompatible,
            ("incompatible", _) => Role::Incompatible,
            ("failure", _) => Role::WorkFailed,
            _ => Role::Base,
        };
        Line::from(vec![
            Span::styled(format!("{k:>13} "), t.style(Role::Muted)),
            Span::styled(v.clone(), t.style(role)),
        ])
    };
    let mut lines: Vec<Line<'_>> = Vec::new();
    if two_cols {
        let half = fixed.len().div_ceil(2);
        let col_w = usize::from(inner.width / 2);
        for i in 0..half {
            let mut spans = fixed
                .get(i)
                .map(|f| field_line(f).spans)
                .unwrap_or_default();
            let used: usize = spans.iter().map(|s| s.content.chars().count()).sum();
            spans.push(Span::raw(" ".repeat(col_w.saturating_sub(used))));
            if let Some(f) = fixed.get(i + half) {
                spans.extend(field_line(f).spans);
            }
            lines.push(Line::from(spans));
        }
    } else {
        lines.extend(fixed.iter().map(|f| field_line(f)));
    }
    lines.extend(rest.iter().map(|f| field_line(f)));
    frame.render_widget(Paragraph::new(lines).wrap(Wrap { trim: false }), top);

    let nodes = nodes(history);
    let tree_block = Block::default()
        .borders(Borders::TOP)
        .border_style(t.style(Role::Border))
        .title(Span::styled(
            format!(" history: {} transitions (Enter/←/→ fold) ", history.len()),
            t.style(Role::Header),
        ));
    let items = items(
        t,
        app.time_fmt(),
        &nodes,
        usize::from(inner.width.saturating_sub(40)),
    );
    let mut state = TreeState::default();
    let closed = &app.tree().closed;
    for n in &nodes {
        if !closed.contains(&n.id) && !n.children.is_empty() {
            state.open(vec![n.id.clone()]);
        }
    }
    state.select(app.tree().selected.clone());
    match Tree::new(&items) {
        Ok(tree) => {
            let tree = tree
                .block(tree_block)
                .highlight_style(t.style(Role::Selection))
                .style(t.style(Role::Base));
            frame.render_stateful_widget(tree, tree_area, &mut state);
        }
        Err(e) => frame.render_widget(
            Paragraph::new(format!("history cannot be drawn: {e}")).style(t.style(Role::Error)),
            tree_area,
        ),
    }
}
