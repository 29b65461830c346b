//! Time, injected. Every rule takes `now` from a [`Clock`] so tests and deterministic demos
//! control it; nothing in the library reads the system time directly.

use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

/// Milliseconds since the Unix epoch: the one unit of time in the whole crate.
pub type Millis = i64;

/// A source of the current instant.
pub trait Clock: Send + Sync {
    /// The current instant in epoch milliseconds.
    fn now(&self) -> Millis;
}

/// The wall clock, for production.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Millis {
        chrono::Utc::now().timestamp_millis()
    }
}

/// A clock that only moves when told to: tests and the virtual-time cluster use it.
/// Clones share the same instant.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock standing at `start`.
    #[must_use]
    pub fn new(start: Millis) -> Self {
        Self(Arc::new(AtomicI64::new(start)))
    }

    /// Moves the clock forward (or back, with a negative delta).
    pub fn advance(&self, delta: Millis) {
        self.0.fetch_add(delta, Ordering::SeqCst);
    }

    /// Sets the clock to `at`.
    pub fn set(&self, at: Millis) {
        self.0.store(at, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Millis {
        self.0.load(Ordering::SeqCst)
    }
}

/// Another clock read with a fixed offset: how the cluster injects skew between authorities.
#[derive(Clone)]
pub struct SkewedClock {
    inner: Arc<dyn Clock>,
    offset: Arc<AtomicI64>,
}

impl SkewedClock {
    /// Wraps `inner` with an initial offset of `offset` ms.
    #[must_use]
    pub fn new(inner: Arc<dyn Clock>, offset: Millis) -> Self {
        Self {
            inner,
            offset: Arc::new(AtomicI64::new(offset)),
        }
    }

    /// Changes the offset; clones see the change.
    pub fn set_offset(&self, offset: Millis) {
        self.offset.store(offset, Ordering::SeqCst);
    }

    /// The current offset.
    #[must_use]
    pub fn offset(&self) -> Millis {
        self.offset.load(Ordering::SeqCst)
    }
}

impl Clock for SkewedClock {
    fn now(&self) -> Millis {
        self.inner.now() + self.offset()
    }
}

/// Formats an instant for people: `2026-11-30T10:07:51.123Z`.
#[must_use]
pub fn format_instant(at: Millis) -> String {
    chrono::DateTime::from_timestamp_millis(at).map_or_else(
        || at.to_string(),
        |t| t.format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string(),
    )
}

/// Formats a duration for people: `850ms`, `12.4s`, `3m05s`, `2h10m`.
#[must_use]
pub fn format_duration(ms: Millis) -> String {
    let sign = if ms < 0 { "-" } else { "" };
    let ms = ms.unsigned_abs();
    if ms < 1_000 {
        format!("{sign}{ms}ms")
    } else if ms < 60_000 {
        format!("{sign}{}.{}s", ms / 1_000, (ms % 1_000) / 100)
    } else if ms < 3_600_000 {
        format!("{sign}{}m{:02}s", ms / 60_000, (ms % 60_000) / 1_000)
    } else {
        format!("{sign}{}h{:02}m", ms / 3_600_000, (ms % 3_600_000) / 60_000)
    }
}

/// The longest duration any option takes: a century (`36525d`). A longer one is a slip of
/// the keyboard, not a plan, and a delay that long would sit at the end of time.
pub const LONGEST: Millis = 36_525 * 86_400_000;

/// The last instant an absolute time option takes: the end of the year 9999 (UTC).
pub const LATEST: Millis = 253_402_300_799_999;

/// Reads `30s`, `5m`, `1500ms`, `2h`, `7d` or plain seconds, up to [`LONGEST`]; `None` for
/// anything else.
#[must_use]
pub fn parse_duration(text: &str) -> Option<Millis> {
    let text = text.trim();
    let (number, unit) = text
        .find(|c: char| !c.is_ascii_digit())
        .map_or((text, "s"), |i| text.split_at(i));
    let n: Millis = number.parse().ok()?;
    let factor = match unit {
        "ms" => 1,
        "s" => 1_000,
        "m" => 60_000,
        "h" => 3_600_000,
        "d" => 86_400_000,
        _ => return None,
    };
    n.checked_mul(factor).filter(|ms| *ms <= LONGEST)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_duration_past_a_century_is_not_read() {
        assert_eq!(parse_duration("36525d"), Some(LONGEST));
        for text in ["36526d", "99999999999999d", "9223372036854775807ms", "x"] {
            assert_eq!(parse_duration(text), None, "{text}");
        }
    }

    #[test]
    fn manual_clock_moves_only_when_told() {
        let clock = ManualClock::new(1_000);
        let shared = clock.clone();
        clock.advance(500);
        assert_eq!(shared.now(), 1_500);
        shared.set(10);
        assert_eq!(clock.now(), 10);
    }

    #[test]
    fn skewed_clock_adds_its_offset() {
        let base = ManualClock::new(1_000);
        let skewed = SkewedClock::new(Arc::new(base.clone()), -200);
        assert_eq!(skewed.now(), 800);
        skewed.set_offset(300);
        base.advance(1);
        assert_eq!(skewed.now(), 1_301);
    }

    #[test]
    fn durations_read_naturally() {
        assert_eq!(format_duration(850), "850ms");
        assert_eq!(format_duration(12_400), "12.4s");
        assert_eq!(format_duration(185_000), "3m05s");
        assert_eq!(format_duration(-2_000), "-2.0s");
    }
}
