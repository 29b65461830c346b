//! Cron expressions in a time zone: the five standard fields (minute, hour, day of month,
//! month, day of week) read by `croner`, evaluated in an IANA zone read from the system's
//! zoneinfo by `jiff`. A wall-clock time a spring-forward gap skips fires at the first
//! instant after the gap (02:30 → 03:00); one a fall-back overlap repeats fires once, at
//! its first occurrence.

use croner::Cron;
use croner::parser::{CronParser, Seconds};
use jiff::tz::TimeZone;
use jiff::{Timestamp, Zoned};

/// A parsed expression and its zone, ready to find instants (epoch milliseconds).
#[derive(Debug, Clone)]
pub struct ZonedCron {
    cron: Cron,
    zone: TimeZone,
}

impl ZonedCron {
    /// Reads `expr` (five fields) in zone `tz` (an IANA name such as `Europe/Paris`).
    ///
    /// # Errors
    /// One line naming what is wrong: a malformed expression or an unknown zone.
    pub fn parse(expr: &str, tz: &str) -> Result<Self, String> {
        let cron = CronParser::builder()
            .seconds(Seconds::Disallowed)
            .build()
            .parse(expr)
            .map_err(|e| format!("cannot read cron {expr:?}: {}", one_line(&e.to_string())))?;
        let zone = TimeZone::get(tz).map_err(|_| format!("unknown time zone {tz:?}"))?;
        Ok(Self { cron, zone })
    }

    /// The first instant the expression names strictly after `ms`; `None` when there is
    /// none (an expression that never matches, or past the calendar's end).
    #[must_use]
    pub fn next_after(&self, ms: i64) -> Option<i64> {
        let at = self.zoned(ms)?;
        let next = self.cron.find_next_occurrence(&at, false).ok()?;
        Some(next.timestamp().as_millisecond())
    }

    /// The last instant the expression names at or before `ms`.
    #[must_use]
    pub fn at_or_before(&self, ms: i64) -> Option<i64> {
        let at = self.zoned(ms)?;
        let previous = self.cron.find_previous_occurrence(&at, true).ok()?;
        Some(previous.timestamp().as_millisecond())
    }

    fn zoned(&self, ms: i64) -> Option<Zoned> {
        Some(
            Timestamp::from_millisecond(ms)
                .ok()?
                .to_zoned(self.zone.clone()),
        )
    }
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Epoch milliseconds of a wall-clock time in `tz`, resolved to its earlier instant.
    fn at(civil: &str, tz: &str) -> i64 {
        let dt: jiff::civil::DateTime = civil.parse().expect("civil");
        dt.to_zoned(TimeZone::get(tz).expect("zone"))
            .expect("zoned")
            .timestamp()
            .as_millisecond()
    }

    fn utc(text: &str) -> i64 {
        text.parse::<Timestamp>().expect("instant").as_millisecond()
    }

    #[test]
    fn weekdays_at_nine_in_paris() {
        let c = ZonedCron::parse("0 9 * * MON-FRI", "Europe/Paris").expect("valid");
        // Friday 2026-03-06 10:00 Paris: next is Monday 09:00 (08:00 UTC in winter).
        let friday = at("2026-03-06T10:00", "Europe/Paris");
        assert_eq!(c.next_after(friday), Some(utc("2026-03-09T08:00:00Z")));
        assert_eq!(c.at_or_before(friday), Some(utc("2026-03-06T08:00:00Z")));
    }

    #[test]
    fn a_time_the_spring_forward_gap_skips_fires_once_just_after_it() {
        // Paris skips 02:00-03:00 on 2026-03-29: 02:30 fires at 03:00 CEST (01:00 UTC).
        let c = ZonedCron::parse("30 2 * * *", "Europe/Paris").expect("valid");
        let eve = utc("2026-03-28T12:00:00Z");
        let day = c.next_after(eve).expect("a firing");
        assert_eq!(day, utc("2026-03-29T01:00:00Z"));
        assert_eq!(
            c.next_after(day),
            Some(utc("2026-03-30T00:30:00Z")),
            "then 02:30 CEST again"
        );
    }

    #[test]
    fn a_time_the_fall_back_overlap_repeats_fires_once() {
        // Paris repeats 02:00-03:00 on 2026-10-25; New York repeats 01:00-02:00 on
        // 2026-11-01. 01:30 there fires at its first occurrence only (EDT, 05:30 UTC).
        let c = ZonedCron::parse("30 1 * * *", "America/New_York").expect("valid");
        let eve = utc("2026-10-31T12:00:00Z");
        let first = c.next_after(eve).expect("a firing");
        assert_eq!(first, utc("2026-11-01T05:30:00Z"));
        assert_eq!(
            c.next_after(first),
            Some(utc("2026-11-02T06:30:00Z")),
            "not again an hour later (06:30 UTC on the 1st), but the next day"
        );
    }

    #[test]
    fn bad_input_is_one_line() {
        for (expr, tz, says) in [
            ("61 * * * *", "UTC", "cannot read cron"),
            ("0 9 * *", "UTC", "cannot read cron"),
            ("* * * * * *", "UTC", "cannot read cron"),
            ("0 9 * * *", "Mars/Olympus", "unknown time zone"),
        ] {
            let e = ZonedCron::parse(expr, tz).expect_err(expr);
            assert!(e.contains(says) && !e.contains('\n'), "{e}");
        }
    }
}
