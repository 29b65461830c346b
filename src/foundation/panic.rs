//! What a panic said: its payload's text, when it has one.

use std::any::Any;

/// The message a panic was raised with: `panic!("…")` and `expect("…")` leave a `&str` or
/// a `String` as the payload; `panic_any` may leave anything else, which has no text.
#[must_use]
pub fn message(payload: &(dyn Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| payload.downcast_ref::<String>().map(String::as_str))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_payloads_have_a_message_and_others_none() {
        let caught = |f: fn()| std::panic::catch_unwind(f).expect_err("panics");
        assert_eq!(message(&*caught(|| panic!("plain"))), Some("plain"));
        assert_eq!(
            message(&*caught(|| panic!("formatted {}", 7))),
            Some("formatted 7")
        );
        assert_eq!(message(&*caught(|| std::panic::panic_any(7_u8))), None);
    }
}
