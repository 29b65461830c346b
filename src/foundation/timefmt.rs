//! Instants for people: local wall time plus how far away it is (`14:03:07 · in 4.2s`,
//! `3m ago`), never raw epoch milliseconds. The dashboard and `inspect` format every
//! instant through one [`TimeFmt`], built with the "now" to measure from and the zone to
//! show; tests pass a fixed now and [`Zone::Utc`], so their output never depends on the
//! machine they run on.

use chrono::{DateTime, Local, TimeZone, Utc};

use crate::clock::Millis;

/// The zone wall times are shown in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Zone {
    /// Coordinated universal time: deterministic, for tests and snapshots.
    #[default]
    Utc,
    /// The zone of the machine the process runs on, for people.
    Local,
}

/// Formats instants relative to `now` in `zone`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeFmt {
    pub now: Millis,
    pub zone: Zone,
}

/// Epoch milliseconds that plausibly name an instant (2001-09-09 to 2286-11-20): smaller
/// or larger numbers are counts or durations, and are left alone.
const PLAUSIBLE: std::ops::RangeInclusive<i64> = 1_000_000_000_000..=9_999_999_999_999;

impl TimeFmt {
    #[must_use]
    pub const fn new(now: Millis, zone: Zone) -> Self {
        Self { now, zone }
    }

    /// Wall time: `14:03:07` on the same day as now, `2026-11-30 14:03:07` otherwise.
    #[must_use]
    pub fn wall(self, at: Millis) -> String {
        match self.zone {
            Zone::Utc => wall_in(&Utc, self.now, at),
            Zone::Local => wall_in(&Local, self.now, at),
        }
    }

    /// The full instant with its zone, for describe panes: `2026-11-30 14:03:07.123 UTC`.
    #[must_use]
    pub fn full(self, at: Millis) -> String {
        let Some(utc) = DateTime::from_timestamp_millis(at) else {
            return format!("{at} (out of range)");
        };
        match self.zone {
            Zone::Utc => utc.format("%Y-%m-%d %H:%M:%S%.3f UTC").to_string(),
            Zone::Local => utc
                .with_timezone(&Local)
                .format("%Y-%m-%d %H:%M:%S%.3f %:z")
                .to_string(),
        }
    }

    /// How far `at` is from now: `in 4.2s`, `3m ago`, `now`.
    #[must_use]
    pub fn relative(self, at: Millis) -> String {
        let delta = at.saturating_sub(self.now);
        match delta {
            0 => "now".into(),
            d if d > 0 => format!("in {}", span(d)),
            d => format!("{} ago", span(d.saturating_neg())),
        }
    }

    /// Wall time and distance: `14:03:07 · in 4.2s`.
    #[must_use]
    pub fn at(self, at: Millis) -> String {
        format!("{} · {}", self.wall(at), self.relative(at))
    }

    /// An optional instant as [`Self::at`]; `-` when absent.
    #[must_use]
    pub fn opt(self, at: Option<Millis>) -> String {
        at.map_or_else(|| "-".into(), |at| self.at(at))
    }

    /// The annotation for a JSON number under `key`, when it reads as an instant:
    /// `14:03:07, in 4.2s`. Keys decide (`…At`, `…_at`, `due`, `deadline`, `until`,
    /// `expires…`, `…Time`), and the value must be a plausible epoch-ms instant.
    #[must_use]
    pub fn annotate(self, key: &str, value: i64) -> Option<String> {
        (names_instant(key) && PLAUSIBLE.contains(&value))
            .then(|| format!("{}, {}", self.wall(value), self.relative(value)))
    }
}

fn wall_in<Z: TimeZone>(zone: &Z, now: Millis, at: Millis) -> String
where
    Z::Offset: std::fmt::Display,
{
    let (Some(at_utc), Some(now_utc)) = (
        DateTime::from_timestamp_millis(at),
        DateTime::from_timestamp_millis(now),
    ) else {
        return format!("{at} (out of range)");
    };
    let at_local = at_utc.with_timezone(zone);
    if at_local.date_naive() == now_utc.with_timezone(zone).date_naive() {
        at_local.format("%H:%M:%S").to_string()
    } else {
        at_local.format("%Y-%m-%d %H:%M:%S").to_string()
    }
}

/// Whether a field name says it holds an instant.
fn names_instant(key: &str) -> bool {
    let lower = key.to_ascii_lowercase();
    key.ends_with("At")
        || lower.ends_with("_at")
        || lower == "at"
        || lower.ends_with("time")
        || lower.ends_with("due")
        || lower.contains("deadline")
        || lower.contains("until")
        || lower.starts_with("expires")
}

/// A non-negative duration, compact: `850ms`, `4.2s`, `42s`, `3m05s`, `12m`, `2h10m`,
/// `3d4h`.
#[must_use]
pub fn span(ms: Millis) -> String {
    let ms = ms.unsigned_abs();
    let s = ms / 1_000;
    match ms {
        0..1_000 => format!("{ms}ms"),
        1_000..10_000 => format!("{}.{}s", s, (ms % 1_000) / 100),
        10_000..60_000 => format!("{s}s"),
        60_000..600_000 if !s.is_multiple_of(60) => format!("{}m{:02}s", s / 60, s % 60),
        60_000..3_600_000 => format!("{}m", s / 60),
        3_600_000..86_400_000 => format!("{}h{:02}m", s / 3_600, (s % 3_600) / 60),
        _ => format!("{}d{}h", s / 86_400, (s % 86_400) / 3_600),
    }
}

/// Reads an instant an operator types: `2026-12-01T03:10:00Z` (RFC 3339, any offset),
/// `2026-12-01 03:10[:05]` or `03:10[:05]` (a wall time in `zone`, today's date for a
/// bare time), `15m` / `90s` / `2h` (that long before `now`), `now`, or epoch milliseconds.
///
/// # Errors
/// `INVALID`, naming the forms accepted.
pub fn parse_instant(text: &str, now: Millis, zone: Zone) -> crate::error::Result<Millis> {
    let text = text.trim();
    let invalid = || {
        crate::error::Error::Invalid(format!(
            "cannot read the instant {text:?}: use 2026-12-01T03:10:00Z, 03:10, \
             2026-12-01 03:10, 15m (ago) or now"
        ))
    };
    if text == "now" {
        return Ok(now);
    }
    if let Ok(at) = DateTime::parse_from_rfc3339(text) {
        return Ok(at.timestamp_millis());
    }
    if let Ok(ms) = text.parse::<Millis>()
        && PLAUSIBLE.contains(&ms)
    {
        return Ok(ms);
    }
    if text.chars().last().is_some_and(|c| c.is_ascii_alphabetic())
        && let Some(ago) = crate::clock::parse_duration(text)
    {
        return Ok(now.saturating_sub(ago));
    }
    let today = DateTime::from_timestamp_millis(now).ok_or_else(invalid)?;
    let wall = ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"]
        .iter()
        .find_map(|f| chrono::NaiveDateTime::parse_from_str(text, f).ok())
        .or_else(|| {
            ["%H:%M:%S", "%H:%M"]
                .iter()
                .find_map(|f| chrono::NaiveTime::parse_from_str(text, f).ok())
                .map(|time| match zone {
                    Zone::Utc => today.date_naive().and_time(time),
                    Zone::Local => today.with_timezone(&Local).date_naive().and_time(time),
                })
        })
        .ok_or_else(invalid)?;
    let at = match zone {
        Zone::Utc => Some(Utc.from_utc_datetime(&wall).timestamp_millis()),
        Zone::Local => Local
            .from_local_datetime(&wall)
            .earliest()
            .map(|t| t.timestamp_millis()),
    };
    at.ok_or_else(invalid)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-30T14:03:02.800Z.
    const NOW: Millis = 1_796_047_382_800;

    fn utc() -> TimeFmt {
        TimeFmt::new(NOW, Zone::Utc)
    }

    #[test]
    fn instants_read_in_every_form_an_operator_types() {
        let read = |t: &str| parse_instant(t, NOW, Zone::Utc);
        let ok = |t: &str| read(t).expect(t);
        let rfc = 1_796_047_200_000; // 2026-11-30T14:00:00Z
        assert_eq!(ok("2026-11-30T14:00:00Z"), rfc);
        assert_eq!(ok("2026-11-30T15:00:00+01:00"), rfc);
        assert_eq!(ok("2026-11-30 14:00"), rfc);
        assert_eq!(ok("2026-11-30 14:00:05"), rfc + 5_000);
        assert_eq!(ok("14:00"), rfc);
        assert_eq!(ok(" 14:00:00 "), rfc);
        assert_eq!(ok("15m"), NOW - 15 * 60_000);
        assert_eq!(ok("now"), NOW);
        assert_eq!(ok(&rfc.to_string()), rfc);
        for bad in [
            "",
            "yesterday",
            "25:00",
            "14h00",
            "12",
            "2026-13-01 00:00",
            "-5m",
        ] {
            let e = read(bad).expect_err(bad);
            assert_eq!(e.code(), "INVALID", "{bad}");
            assert!(e.to_string().contains("03:10"), "{e}");
        }
    }

    #[test]
    fn wall_time_and_distance() {
        assert_eq!(utc().at(NOW + 4_200), "14:03:07 · in 4.2s");
        assert_eq!(utc().at(NOW - 180_000), "14:00:02 · 3m ago");
        assert_eq!(utc().relative(NOW), "now");
        assert_eq!(utc().wall(NOW + 86_400_000), "2026-12-01 14:03:02");
        assert_eq!(utc().full(NOW), "2026-11-30 14:03:02.800 UTC");
        assert_eq!(utc().opt(None), "-");
    }

    #[test]
    fn spans_are_compact() {
        assert_eq!(span(850), "850ms");
        assert_eq!(span(4_250), "4.2s");
        assert_eq!(span(42_900), "42s");
        assert_eq!(span(185_000), "3m05s");
        assert_eq!(span(180_000), "3m");
        assert_eq!(span(720_000), "12m");
        assert_eq!(span(7_800_000), "2h10m");
        assert_eq!(span(273_600_000), "3d4h");
    }

    #[test]
    fn annotates_only_instants_under_time_keys() {
        assert_eq!(
            utc().annotate("timeoutAt", NOW + 4_200).as_deref(),
            Some("14:03:07, in 4.2s")
        );
        assert_eq!(
            utc().annotate("created_at", NOW - 3_000).as_deref(),
            Some("14:02:59, 3.0s ago")
        );
        assert!(utc().annotate("attempts", NOW).is_none(), "not a time key");
        assert!(utc().annotate("timeoutAt", 30_000).is_none(), "a duration");
    }

    #[test]
    fn local_zone_still_formats() {
        let local = TimeFmt::new(NOW, Zone::Local);
        assert!(local.at(NOW + 4_200).ends_with(" · in 4.2s"));
        assert!(local.full(NOW).starts_with("2026-1"));
    }

    #[test]
    fn out_of_range_instants_do_not_panic() {
        assert!(utc().wall(i64::MAX).contains("out of range"));
        assert_eq!(utc().relative(i64::MIN), format!("{} ago", span(i64::MAX)));
    }
}
