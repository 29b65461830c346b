//! The answer of a write whose refusal is itself a committed result.
//!
//! A fenced write that is refused still commits the record of the attempt (the checker's
//! and the dashboard's input), so its closure cannot answer the refusal with `Err`: that
//! would roll the record back. It answers [`Logged::Refused`] instead, and an `Err` around
//! the [`Logged`] keeps meaning "roll everything back" (a store failure, a corrupt row).

use crate::error::{Error, Result};

/// What a logged write did: its change, or the refusal that was committed in its place.
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
pub enum Logged<T> {
    /// The change was made.
    Done(T),
    /// The change was refused; what the transaction wrote before the refusal (the record
    /// of the attempt) commits.
    Refused(Error),
}

impl<T> Logged<T> {
    /// The answer the caller sees once the transaction committed.
    ///
    /// # Errors
    /// The refusal.
    pub fn into_result(self) -> Result<T> {
        match self {
            Self::Done(v) => Ok(v),
            Self::Refused(e) => Err(e),
        }
    }
}

/// A rule's verdict as a logged answer: its refusal is the committed result.
impl<T> From<Result<T>> for Logged<T> {
    fn from(verdict: Result<T>) -> Self {
        match verdict {
            Ok(v) => Self::Done(v),
            Err(e) => Self::Refused(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_survives_the_round_trip_through_a_verdict() {
        assert_eq!(Logged::from(Ok::<_, Error>(3)).into_result(), Ok(3));
        let refusal = Error::Invalid("no".into());
        let logged: Logged<u8> = Err(refusal.clone()).into();
        assert_eq!(logged, Logged::Refused(refusal.clone()));
        assert_eq!(logged.into_result(), Err(refusal));
    }
}
