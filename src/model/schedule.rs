//! Schedules: interval or delay triggers whose firings are derived-id work items.

use serde::{Deserialize, Serialize};

use crate::clock::Millis;
use crate::foundation::cron::ZonedCron;

/// How many missed boundaries an outage enqueues when the schedule is next observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CatchUp {
    /// Only the most recent missed boundary (the default).
    Latest,
    /// Every missed boundary.
    All,
    /// At most N of the most recent missed boundaries.
    Last(u32),
}

impl CatchUp {
    /// `latest`, `all` or a number.
    #[must_use]
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "latest" => Some(Self::Latest),
            "all" => Some(Self::All),
            n => n.parse().ok().filter(|n| *n > 0).map(Self::Last),
        }
    }

    #[must_use]
    pub fn label(self) -> String {
        match self {
            Self::Latest => "latest".into(),
            Self::All => "all".into(),
            Self::Last(n) => n.to_string(),
        }
    }
}

/// The trigger shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "type")]
pub enum Trigger {
    /// Fires at every epoch-aligned multiple of `everyMs`.
    Interval { every_ms: Millis },
    /// Fires once at the constant instant `afterMs`.
    Delay { after_ms: Millis },
    /// Fires at every instant a five-field cron expression names in the IANA time zone
    /// `tz` (`foundation/cron.rs` says what a DST gap or overlap does).
    Cron { expr: String, tz: String },
}

impl Trigger {
    /// A cron trigger, checked: the expression must read and the zone must be known.
    ///
    /// # Errors
    /// `INVALID`, one line naming what is wrong.
    pub fn cron(expr: &str, tz: &str) -> crate::Result<Self> {
        let trigger = Self::Cron {
            expr: expr.trim().to_owned(),
            tz: tz.to_owned(),
        };
        trigger.check()?;
        Ok(trigger)
    }

    /// Refuses a cron trigger whose expression does not read or whose zone is unknown;
    /// interval and delay triggers always pass.
    ///
    /// # Errors
    /// `INVALID`, one line naming what is wrong.
    pub fn check(&self) -> crate::Result<()> {
        match self {
            Self::Cron { expr, tz } => ZonedCron::parse(expr, tz)
                .map(drop)
                .map_err(crate::Error::Invalid),
            Self::Interval { .. } | Self::Delay { .. } => Ok(()),
        }
    }

    /// `every 5s`, `once at <instant>` or `cron 0 9 * * MON-FRI Europe/Paris`: how
    /// operators are shown a trigger.
    #[must_use]
    pub fn label(&self) -> String {
        match self {
            Self::Interval { every_ms } => format!("every {}", interval_label(*every_ms)),
            Self::Delay { after_ms } => {
                format!("once at {}", crate::clock::format_instant(*after_ms))
            }
            Self::Cron { expr, tz } => format!("cron {expr} {tz}"),
        }
    }
}

/// `5s`, `1m`, `2h`, or the exact duration when it is not a whole unit.
fn interval_label(ms: Millis) -> String {
    match ms {
        ms if ms > 0 && ms % 3_600_000 == 0 => format!("{}h", ms / 3_600_000),
        ms if ms > 0 && ms % 60_000 == 0 => format!("{}m", ms / 60_000),
        ms if ms > 0 && ms % 1_000 == 0 => format!("{}s", ms / 1_000),
        ms => crate::clock::format_duration(ms),
    }
}

/// A durable schedule definition plus its firing high-water mark.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Schedule {
    pub schedule_id: String,
    pub trigger: Trigger,
    pub catch_up: CatchUp,
    pub handler: String,
    pub payload: String,
    pub compat: String,
    /// The latest due instant for which a firing has been enqueued (or considered).
    pub last_due: Option<Millis>,
    /// The next boundary strictly after `last_due`; index for "which schedules are due".
    pub next_due: Millis,
    pub created_at: Millis,
    /// When an operator paused it; a paused schedule fires nothing, and its `next_due`
    /// stays where it was, so on resume the boundaries missed meanwhile go through the
    /// catch-up policy like an outage's.
    #[serde(default)]
    pub paused_at: Option<Millis>,
}

/// The firing work id for one due instant: derived, never minted.
#[must_use]
pub fn firing_id(schedule_id: &str, due: Millis) -> String {
    format!("{schedule_id}@{due}")
}
