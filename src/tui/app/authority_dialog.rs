//! Release and forget of the selected authority, from the authorities view: the key opens
//! a confirmation (with an optional reason), and the change and its audit entries go
//! through [`crate::store::Store::release_authority`] and
//! [`crate::store::Store::forget_authority`], exactly as `leasehold authority release|forget
//! ID` do. Whether the authority may be released (gone or stopped, never live or silent)
//! is judged by the store inside its transaction; a refusal comes back on the status line.

use super::{Act, App, ViewId};

/// What an operator does to an authority that is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthorityVerb {
    /// Hand its claims back under new generations (its late writes are fenced).
    Release,
    /// Remove its registration (once it holds nothing).
    Forget,
}

impl AuthorityVerb {
    /// The command-line verb, for the status line.
    #[must_use]
    pub fn word(self) -> &'static str {
        match self {
            Self::Release => "release",
            Self::Forget => "forget",
        }
    }
}

impl App {
    pub(super) fn ask_authority(&mut self, verb: AuthorityVerb) {
        self.ask_on_row(
            Act::Authority(verb),
            ViewId::Authorities,
            "select an authority (:authorities)",
        );
    }
}
