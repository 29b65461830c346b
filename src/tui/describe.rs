//! The describe pane (`d`): every field of the selected row's record, JSON pretty-printed
//! with instants annotated, scrollable. The record comes from the snapshot on screen, so
//! the pane opens at once; what the page does not hold (an event's journal entry with its
//! payload, a workflow's history with action arguments and results, a work item's attempt
//! errors) is read by key off
//! the render path, as a [`Fetch`] the event loop runs and answers with
//! [`super::action::Done::Described`].
//!
//! Also here: the clipboard (`y` copies the row's id with an OSC 52 sequence, written
//! through the terminal backend).

use ratatui::layout::Rect;
use serde::Serialize;
use serde_json::{Value, json};

use super::action::ViewId;
use super::snapshot::{Snapshot, ViewData};
use super::text::clean;
use super::views::Row;
use crate::clock::Millis;
use crate::error::Result;
use crate::foundation::timefmt::{TimeFmt, Zone};
use crate::model::Subscription;
use crate::ops::pretty;
use crate::rules::liveness::liveness;
use crate::store::Store;

/// An open describe pane.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Describe {
    /// `work item effect-001`.
    pub title: String,
    /// The record's id (what `y` copies).
    pub id: String,
    /// The row's own facts, as the view words them (field, value).
    pub summary: Vec<(String, String)>,
    /// The record, JSON held in strings already unfolded.
    pub record: Value,
    /// Related records shown after it, each under its name (a workflow's history, a
    /// cursor's work item, an event's journal entry).
    pub related: Vec<(String, Value)>,
    /// What is still being read for it.
    pub pending: Option<Fetch>,
    pub scroll: u16,
    /// When it opened: the pane is a picture of that moment, its relative times (and the
    /// row's facts above the record) measured from it.
    pub at: Millis,
}

/// A read by key that completes a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fetch {
    /// The journal entry (with its payload) of an accepted event.
    Journal(i64),
    /// A workflow instance's history (action arguments, results, failures).
    History(String),
    /// A work item by id (a cursor's delivery item: its claim, attempts, last failure).
    Work(String),
    /// The errors of a work item's attempts, newest first.
    AttemptErrors(String),
}

impl Fetch {
    /// The name the answer is shown under.
    #[must_use]
    pub fn field(&self) -> &'static str {
        match self {
            Self::Journal(_) => "journal",
            Self::History(_) => "history",
            Self::Work(_) => "work item",
            Self::AttemptErrors(_) => "attempt errors (newest first)",
        }
    }
}

/// Reads what `fetch` names, as JSON for the describe pane.
///
/// # Errors
/// A store failure.
pub fn fetch(store: &Store, fetch: &Fetch) -> Result<Value> {
    match fetch {
        Fetch::Journal(seq) => {
            let event = store
                .journal_after(seq.saturating_sub(1), None, 1)?
                .into_iter()
                .find(|e| e.seq == *seq);
            Ok(event.map_or(Value::Null, |e| record(&e)))
        }
        Fetch::History(id) => Ok(record(&store.workflow_history(id)?)),
        Fetch::Work(id) => Ok(store.work(id)?.map_or(Value::Null, |w| record(&w))),
        Fetch::AttemptErrors(id) => Ok(record(&store.attempt_errors(id)?)),
    }
}

fn record<T: Serialize>(value: &T) -> Value {
    pretty::unfold(serde_json::to_value(value).unwrap_or(Value::Null))
}

fn open(title: String, id: &str, record: Value, pending: Option<Fetch>) -> Describe {
    Describe {
        title,
        id: id.to_owned(),
        summary: Vec::new(),
        record,
        related: Vec::new(),
        pending,
        scroll: 0,
        at: 0,
    }
}

/// The describe pane for `row` of the snapshot's view (none: the workflow detail's
/// instance) as of `now`, or `None` when the row is not on the snapshot.
#[must_use]
pub fn locate(snap: &Snapshot, row: Option<&Row>, now: Millis) -> Option<Describe> {
    let mut d = record_of(snap, row.map(|r| r.key.as_str()))?;
    d.at = now;
    d.summary = row.map(|r| r.detail.clone()).unwrap_or_default();
    Some(d)
}

#[expect(clippy::too_many_lines, reason = "one arm per view's record")]
fn record_of(snap: &Snapshot, key: Option<&str>) -> Option<Describe> {
    match &snap.data {
        ViewData::Detail { instance, history } => {
            let i = instance.as_ref()?;
            let mut d = open(
                format!("workflow instance {}", i.instance_id),
                &i.instance_id,
                record(i),
                None,
            );
            d.related.push(("history".into(), record(history)));
            Some(d)
        }
        ViewData::Authorities { page, owned } => {
            let a = page
                .rows
                .iter()
                .find(|a| Some(a.instance_id.as_str()) == key)?;
            let mut r = record(a);
            r["liveness"] = json!(liveness(a, snap.at).as_str());
            r["claimedItems"] = json!(owned.get(&a.instance_id));
            Some(open(
                format!("authority {}", a.instance_id),
                &a.instance_id,
                r,
                None,
            ))
        }
        ViewData::Leases(holds) => {
            if let Some(l) = holds
                .leases
                .iter()
                .find(|l| Some(l.resource_id.as_str()) == key)
            {
                return Some(open(
                    format!("lease {}", l.resource_id),
                    &l.resource_id,
                    record(l),
                    None,
                ));
            }
            let w = holds.claims.iter().find(|w| Some(w.id.as_str()) == key)?;
            Some(open(
                format!("claim of {}", w.id),
                &w.id,
                record(w),
                Some(Fetch::AttemptErrors(w.id.clone())),
            ))
        }
        ViewData::Work(page) => {
            let w = page.rows.iter().find(|w| Some(w.id.as_str()) == key)?;
            Some(open(
                format!("work item {}", w.id),
                &w.id,
                record(w),
                Some(Fetch::AttemptErrors(w.id.clone())),
            ))
        }
        ViewData::Workflows(page) => {
            let i = page
                .rows
                .iter()
                .find(|i| Some(i.instance_id.as_str()) == key)?;
            Some(open(
                format!("workflow instance {}", i.instance_id),
                &i.instance_id,
                record(i),
                Some(Fetch::History(i.instance_id.clone())),
            ))
        }
        ViewData::Cursors(page) => {
            let c = page
                .rows
                .iter()
                .find(|c| Some(c.subscription_id.as_str()) == key)?;
            Some(open(
                format!("cursor {}", c.subscription_id),
                &c.subscription_id,
                record(c),
                Some(Fetch::Work(Subscription::work_id(&c.subscription_id))),
            ))
        }
        ViewData::Events { page, .. } => {
            let e = page
                .rows
                .iter()
                .find(|e| Some(format!("{:020}", e.id).as_str()) == key)?;
            let id = e.external_id.clone().unwrap_or_else(|| e.id.to_string());
            Some(open(
                format!("event {}", e.event_type),
                &id,
                record(e),
                e.seq.map(Fetch::Journal),
            ))
        }
        ViewData::Schedules { page, firings } => {
            let s = page
                .rows
                .iter()
                .find(|s| Some(s.schedule_id.as_str()) == key)?;
            let mut d = open(
                format!("schedule {}", s.schedule_id),
                &s.schedule_id,
                record(s),
                None,
            );
            let firing = firings.get(&s.schedule_id).map_or(Value::Null, record);
            d.related.push(("last firing".into(), firing));
            Some(d)
        }
        ViewData::Replay(data) => {
            let (at, step) = data
                .as_ref()?
                .steps
                .iter()
                .find(|(at, _)| Some(crate::tui::views::replay::key(*at).as_str()) == key)?;
            let title = format!("revision {} of {}", at.revision, step.resource());
            Some(open(title, step.resource(), record(step), None))
        }
        ViewData::Horizon(h) => {
            let b = h
                .buckets
                .iter()
                .find(|b| Some(b.from.to_string().as_str()) == key)?;
            let title = format!("due from {}", b.from);
            Some(open(title, &b.from.to_string(), record(b), None))
        }
        ViewData::Builds(matrix) => {
            let c = matrix
                .cells
                .iter()
                .find(|c| Some(format!("{}|{}", c.kind.as_str(), c.compat).as_str()) == key)?;
            let title = format!(
                "{} {}",
                c.kind.as_str(),
                c.handler.as_deref().unwrap_or("?")
            );
            Some(open(title, &c.compat, record(c), None))
        }
        ViewData::Triage(groups) => {
            let g = groups
                .iter()
                .find(|g| Some(format!("{:?}", g.reason).as_str()) == key)?;
            Some(open(g.title.to_owned(), g.title, record(g), None))
        }
        ViewData::Audit(page) => {
            let a = page
                .rows
                .iter()
                .find(|a| Some(format!("{:020}", a.id).as_str()) == key)?;
            Some(open(
                format!("audit entry {}", a.id),
                &a.id.to_string(),
                record(a),
                None,
            ))
        }
        ViewData::Failovers(list) => {
            let f = list
                .rows
                .iter()
                .find(|f| Some(f.position.key()) == key.map(str::to_owned))?;
            Some(open(
                format!("failover of {}", f.resource),
                &f.resource,
                record(f),
                None,
            ))
        }
        ViewData::Fenced(list) => {
            let w = list
                .rows
                .iter()
                .find(|w| Some(w.position.key()) == key.map(str::to_owned))?;
            Some(open(
                format!("refused {} on {}", w.verb, w.resource),
                &w.resource,
                record(w),
                None,
            ))
        }
        ViewData::Timeline { grants, writes, .. } => {
            let key = key?;
            if let Some(g) = grants
                .iter()
                .find(|g| format!("{:020}g{}", g.revision, g.generation) == key)
            {
                return Some(open(
                    format!("grant of {} (generation {})", g.resource_id, g.generation),
                    &g.resource_id,
                    record(g),
                    None,
                ));
            }
            let w = writes
                .iter()
                .find(|w| format!("{:020}w{}", w.revision, w.generation) == key)?;
            Some(open(
                format!("{} write on {}", w.verb, w.resource_id),
                &w.resource_id,
                record(w),
                None,
            ))
        }
        ViewData::Overview => None,
    }
}

/// Whether `d` has anything to describe in `view` (everything but the overview).
#[must_use]
pub fn describes(view: ViewId) -> bool {
    view != ViewId::Overview
}

/// The pane's rectangle in a frame of `area`.
#[must_use]
pub fn pane(area: Rect) -> Rect {
    let w = area.width.saturating_sub(4).max(area.width.min(20));
    let h = area.height.saturating_sub(2).max(area.height.min(3));
    super::views::dialog::centered(area, w, h)
}

/// Text rows and columns inside the pane (below the borders, above the key line).
#[must_use]
pub fn viewport(area: Rect) -> (u16, u16) {
    let p = pane(area);
    (p.width.saturating_sub(2), p.height.saturating_sub(3))
}

/// The pane's text, wrapped to `width` columns, instants in `zone` relative to when the
/// pane opened: the id line, the row's facts, then the record and its related records.
#[must_use]
pub fn body(d: &Describe, zone: Zone, width: u16) -> Vec<String> {
    let fmt = TimeFmt::new(d.at, zone);
    let width = usize::from(width.max(8));
    let mut lines = vec![format!("id: {}", d.id)];
    let pad = d
        .summary
        .iter()
        .map(|(k, _)| k.chars().count())
        .max()
        .unwrap_or(0);
    lines.extend(d.summary.iter().map(|(k, v)| format!("{k:>pad$}  {v}")));
    lines.push(String::new());
    if let Some(f) = &d.pending {
        lines.push(format!("reading {}…", f.field()));
    }
    lines.extend(pretty::lines(&d.record, fmt));
    for (name, value) in &d.related {
        lines.push(String::new());
        lines.push(format!("{name}:"));
        lines.extend(pretty::lines(value, fmt));
    }
    lines
        .iter()
        .flat_map(|l| wrap(&clean(l, 64 * 1024), width))
        .collect()
}

/// Cuts `line` into pieces of at most `width` characters, continuation pieces indented
/// by one `↳ ` so a wrapped value reads as one.
fn wrap(line: &str, width: usize) -> Vec<String> {
    let chars: Vec<char> = line.chars().collect();
    if chars.len() <= width {
        return vec![line.to_owned()];
    }
    let mut out = vec![chars[..width].iter().collect()];
    let rest = width.saturating_sub(2).max(1);
    for piece in chars[width..].chunks(rest) {
        out.push(format!("↳ {}", piece.iter().collect::<String>()));
    }
    out
}

/// The highest useful scroll offset of `d` in a frame of `area`.
#[must_use]
pub fn max_scroll(d: &Describe, zone: Zone, area: Rect) -> u16 {
    let (w, h) = viewport(area);
    let n = body(d, zone, w).len();
    u16::try_from(n.saturating_sub(usize::from(h))).unwrap_or(u16::MAX)
}

/// The OSC 52 sequence that asks the terminal to put `text` on the system clipboard.
#[must_use]
pub fn osc52(text: &str) -> String {
    format!("\u{1b}]52;c;{}\u{7}", base64(text.as_bytes()))
}

/// Standard base64 with padding (RFC 4648), enough for a clipboard payload.
fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[((n >> shift) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_the_rfc_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(plain.as_bytes()), encoded);
        }
    }

    #[test]
    fn osc52_wraps_the_id() {
        assert_eq!(osc52("wf-1"), "\u{1b}]52;c;d2YtMQ==\u{7}");
    }

    /// A work item's checkpoint is on its record as the store holds it, JSON unfolded.
    #[test]
    fn a_work_items_checkpoint_is_described() {
        use std::sync::Arc;

        use crate::clock::ManualClock;
        use crate::ids::SeededIds;
        use crate::model::work::NewWork;
        use crate::store::memory::MemoryBackend;

        let store = Store::new(
            Arc::new(MemoryBackend::new()),
            Arc::new(ManualClock::new(1_000)),
            Arc::new(SeededIds::new(1)),
        );
        store
            .enqueue(NewWork::effect("fx", "h", "{}"), "k")
            .expect("enqueue");
        let fetch_fx = || fetch(&store, &Fetch::Work("fx".into())).expect("fetch");
        assert_eq!(fetch_fx()["checkpoint"], Value::Null);
        let claimed = store.claim("fx", "a", "k", 1_000).expect("claim");
        store
            .save_work_checkpoint("fx", "a", claimed.generation, r#"{"page":3}"#)
            .expect("save");
        let stored = store.work("fx").expect("read").expect("item").checkpoint;
        let stored: Value = serde_json::from_str(&stored.expect("saved")).expect("JSON");
        assert_eq!(fetch_fx()["checkpoint"], stored);
        assert_eq!(stored, json!({"page": 3}));
    }

    #[test]
    fn wraps_long_lines() {
        assert_eq!(wrap("abcdefghij", 4), ["abcd", "↳ ef", "↳ gh", "↳ ij"]);
        assert_eq!(wrap("abc", 4), ["abc"]);
    }
}
