//! A [`Report`] for people (`leasehold check`) and for machines (`--json`).

use std::fmt::Write as _;

use serde_json::json;

use super::Report;
use crate::store::RETENTION;

/// Control characters escaped, so an odd id can never break a line or a terminal.
fn clean(text: &str) -> String {
    if text.chars().any(char::is_control) {
        text.chars()
            .map(|c| {
                if c.is_control() {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect()
    } else {
        text.to_owned()
    }
}

/// One line per finding of damage, violation and gap — `code [ids] sentence` — (a lowered
/// revision: only that) then a summary: what was
/// read, the revisions the history read covers and was checked for gaps, the store epoch after an accepted rewind, how many
/// items are incompatible, whether old history may be trimmed, and the verdict line
/// (`OK: …` or `N violations: …`).
#[must_use]
#[expect(
    clippy::too_many_lines,
    reason = "the report's sections in the order they print"
)]
pub fn render_text(report: &Report) -> String {
    let mut out = String::new();
    for v in report
        .damage
        .iter()
        .chain(&report.violations)
        .chain(&report.gaps)
    {
        let ids: Vec<String> = v.ids.iter().map(|id| clean(id)).collect();
        let _ = writeln!(
            out,
            "{} [{}] {}",
            v.invariant,
            ids.join(", "),
            clean(&v.sentence)
        );
    }
    if let Some(why) = report.unread_history() {
        let _ = writeln!(out, "DAMAGED: nothing else was checked: {why}");
        return out;
    }
    let c = &report.checked;
    let _ = writeln!(
        out,
        "checked through revision {}: {} grants, {} writes, {} items, {} journal events, {} workflow instances ({} history entries)",
        report.through_revision,
        c.grants,
        c.writes,
        c.items,
        c.journal_events,
        c.instances,
        c.history_entries
    );
    if let Some(oldest) = report.oldest_revision {
        let _ = writeln!(
            out,
            "the history read covers revisions {oldest} to {}",
            report.through_revision
        );
    }
    let history_gaps = report.history_gaps();
    let cut_off = report.gaps.len() - history_gaps - report.unjudged();
    let _ = writeln!(
        out,
        "history from revision {} to {}: {}",
        report.history_from,
        report.through_revision,
        if history_gaps == 0 {
            "nothing missing".to_owned()
        } else {
            format!("{history_gaps} gap(s), so the verdict covers only what is recorded")
        }
    );
    if cut_off > 0 {
        let _ = writeln!(
            out,
            "{cut_off} attempt(s) started with no end in the execution logs (cut off)"
        );
    }
    if report.store_epoch > 0 {
        let _ = writeln!(
            out,
            "store epoch {}: a rewind was accepted; history lost in it is not here, and every generation minted since is above every earlier one",
            report.store_epoch
        );
    }
    if report.incompatible_items > 0 {
        let n = report.incompatible_items;
        let (s, verb) = if n == 1 { ("", "waits") } else { ("s", "wait") };
        let _ = writeln!(
            out,
            "{n} incompatible item{s} {verb} for a live authority of their build (no invariant broken; `inspect triage` lists them as stranded until one runs)"
        );
    }
    if report.no_handler_items > 0 {
        let n = report.no_handler_items;
        let (s, verb, its, them) = if n == 1 {
            ("", "waits", "its", "it")
        } else {
            ("s", "wait", "their", "them")
        };
        let _ = writeln!(
            out,
            "{n} item{s} with no handler {verb}: no live authority runs {its} handler (no invariant broken; `inspect triage` lists {them} under no handler)"
        );
    }
    for (n, noun) in [
        (report.backlogged_items, "item"),
        (report.backlogged_instances, "workflow instance"),
    ] {
        if n > 0 {
            let (s, verb) = if n == 1 { ("", "has") } else { ("s", "have") };
            let _ = writeln!(
                out,
                "{n} {noun}{s} {verb} waited past the bound while the live authorities that may run them kept claiming: a backlog (not stranded)"
            );
        }
    }
    for (n, what) in [
        (
            report.intake.waiting,
            "not yet moved into work (the next claim moves them)",
        ),
        (
            report.intake.refused,
            "refused when moved, kept with the reason in intake_refused",
        ),
    ] {
        if n > 0 {
            let s = if n == 1 { "" } else { "s" };
            let _ = writeln!(out, "{n} intake request{s} {what}");
        }
    }
    if report.history_may_be_trimmed {
        let _ = writeln!(
            out,
            "history is kept for {} revisions: only violations from revision {} on are visible",
            RETENTION.history_revisions, report.history_from
        );
    }
    if report.violations.is_empty() && history_gaps > 0 {
        let _ = writeln!(
            out,
            "{history_gaps} history gap(s): no violation in what is recorded, but records are missing"
        );
    } else if report.violations.is_empty() && !report.damage.is_empty() {
        out.push_str("DAMAGED: no invariant violated in what the store holds, but the store is not what this host wrote (above)\n");
    } else if report.violations.is_empty() && report.unjudged() > 0 {
        let _ = writeln!(
            out,
            "WARNING: no invariant violated in what the store holds, but {} finding(s) above could not be judged from it",
            report.unjudged()
        );
    } else if report.violations.is_empty() {
        out.push_str("OK: no invariant violated\n");
    } else {
        let mut by_code: Vec<(&str, usize)> = Vec::new();
        for v in &report.violations {
            match by_code.iter_mut().find(|(code, _)| *code == v.invariant) {
                Some((_, n)) => *n += 1,
                None => by_code.push((v.invariant, 1)),
            }
        }
        let parts: Vec<String> = by_code
            .iter()
            .map(|(code, n)| format!("{n} {code}"))
            .collect();
        let n = report.violations.len();
        let _ = writeln!(
            out,
            "{n} violation{}: {}",
            if n == 1 { "" } else { "s" },
            parts.join(", ")
        );
    }
    out
}

/// One JSON object per line (camelCase): each finding of damage, violation and gap
/// (`{"invariant","ids","sentence"}`), then one summary object
/// (`{"summary":{"violations","checked","incompatibleItems","noHandlerItems",
/// "throughRevision",…}}`).
#[must_use]
pub fn render_json_lines(report: &Report) -> String {
    let mut out = String::new();
    for v in report
        .damage
        .iter()
        .chain(&report.violations)
        .chain(&report.gaps)
    {
        out.push_str(&json!(v).to_string());
        out.push('\n');
    }
    let summary = json!({ "summary": {
        "damage": report.damage.len(),
        "violations": report.violations.len(),
        "historyGaps": report.history_gaps(),
        "attemptsWithoutEnd": report.gaps.len() - report.history_gaps() - report.unjudged(),
        "unjudged": report.unjudged(),
        "historyFrom": report.history_from,
        "checked": report.checked,
        "incompatibleItems": report.incompatible_items,
        "noHandlerItems": report.no_handler_items,
        "backloggedItems": report.backlogged_items,
        "backloggedInstances": report.backlogged_instances,
        "throughRevision": report.through_revision,
        "oldestRevision": report.oldest_revision,
        "historyMayBeTrimmed": report.history_may_be_trimmed,
        "storeEpoch": report.store_epoch,
        "intake": report.intake,
    }});
    out.push_str(&summary.to_string());
    out.push('\n');
    out
}
