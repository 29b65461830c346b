//! A heartbeat's age as people are told it. An authority whose clock runs ahead of the
//! reader's writes heartbeats "in the future"; subtracting naively shows a negative age,
//! which reads as nonsense. The honest statement is the skew itself: how far ahead the
//! heartbeat is stamped.

use crate::clock::{Millis, format_duration};

/// `3.2s` for a heartbeat that old; `+1.5s ahead` for one stamped after `now` (its
/// writer's clock runs ahead by at least that much).
#[must_use]
pub fn heartbeat_age(now: Millis, at: Millis) -> String {
    if at > now {
        format!("+{} ahead", format_duration(at - now))
    } else {
        format_duration(now - at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_are_never_negative() {
        assert_eq!(heartbeat_age(10_000, 7_000), format_duration(3_000));
        assert_eq!(
            heartbeat_age(10_000, 12_500),
            format!("+{} ahead", format_duration(2_500))
        );
        assert!(!heartbeat_age(0, 9_999).contains('-'));
    }
}
