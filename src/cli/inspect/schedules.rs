//! `inspect schedules`: each schedule's trigger (a cron trigger with its zone), catch-up policy, handler and next due
//! instant (`paused` while an operator has paused it), and whether a live build can run
//! its firings.

use std::io::Write;

use serde::Serialize;

use super::render::ViewRow;
use super::{Ctx, Failure};
use crate::cli::output::{opt_when, short, when, yes_no};
use crate::clock::Millis;
use crate::foundation::text_cell::{cell, cell_max};
use crate::model::Page;
use crate::model::schedule::Trigger;
use crate::ops::live_builds::LiveBuilds;

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ScheduleRow {
    schedule_id: String,
    trigger: String,
    every_ms: Option<Millis>,
    after_ms: Option<Millis>,
    cron: Option<String>,
    tz: Option<String>,
    catch_up: String,
    handler: String,
    compat: String,
    compatible: bool,
    last_due: Option<Millis>,
    next_due: Millis,
    due: bool,
    paused: bool,
    paused_at: Option<Millis>,
    created_at: Millis,
}

impl ViewRow for ScheduleRow {
    const COLUMNS: &'static [&'static str] = &[
        "SCHEDULE",
        "TRIGGER",
        "CATCH-UP",
        "HANDLER",
        "NEXT-DUE",
        "LAST-DUE",
        "COMPAT",
        "COMPATIBLE",
    ];

    fn cells(&self, now: Millis) -> Vec<String> {
        let s = self;
        vec![
            cell(&s.schedule_id),
            s.trigger.clone(),
            s.catch_up.clone(),
            cell_max(&s.handler, 24),
            if s.paused {
                "paused".into()
            } else {
                when(s.next_due, now)
            },
            opt_when(s.last_due, now),
            short(&s.compat),
            yes_no(s.compatible),
        ]
    }
}

pub(super) fn print(ctx: &Ctx<'_>, out: &mut dyn Write) -> Result<Option<String>, Failure> {
    let live = LiveBuilds::load(ctx.store, ctx.now)?;
    let Page { rows, next } = ctx.store.list_schedules(&ctx.page)?;
    let rows: Vec<ScheduleRow> = rows
        .into_iter()
        .map(|s| {
            let (every_ms, after_ms, cron, tz) = match &s.trigger {
                Trigger::Interval { every_ms } => (Some(*every_ms), None, None, None),
                Trigger::Delay { after_ms } => (None, Some(*after_ms), None, None),
                Trigger::Cron { expr, tz } => (None, None, Some(expr.clone()), Some(tz.clone())),
            };
            ScheduleRow {
                trigger: s.trigger.label(),
                every_ms,
                after_ms,
                cron,
                tz,
                catch_up: s.catch_up.label(),
                compatible: live.compatible(&s.compat),
                due: s.paused_at.is_none() && s.next_due <= ctx.now,
                paused: s.paused_at.is_some(),
                paused_at: s.paused_at,
                schedule_id: s.schedule_id,
                handler: s.handler,
                compat: s.compat,
                last_due: s.last_due,
                next_due: s.next_due,
                created_at: s.created_at,
            }
        })
        .collect();
    ctx.emit(out, &rows, next)
}
