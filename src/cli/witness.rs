//! The `--state-dir` option of the commands that write under this host's rewind witness
//! (`authority`, `store accept-rewind`; see `store/witness.rs`; the other writers use
//! `LEASEHOLD_STATE_DIR` or the default through `Store::with_host_witness`) and of
//! `check`, which judges a store by it as those writers would.

use std::path::{Path, PathBuf};

use clap::Args;

use super::Failure;
use crate::store::Store;
use crate::store::witness::{BeyondHistory, Rewound, Witness, default_dir, host_dir};

/// Where this host keeps what it has seen of each store.
#[derive(Debug, Clone, Default, Args)]
pub struct StateDirArg {
    /// Directory of this host's rewind witnesses, one small file per store (default:
    /// $XDG_STATE_HOME/leasehold/witness, else ~/.local/state/leasehold/witness).
    #[arg(long, env = "LEASEHOLD_STATE_DIR", value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
}

impl StateDirArg {
    /// The directory the one-shot writers use, which have no `--state-dir` of their own
    /// (`witness::host_dir`).
    #[must_use]
    pub fn from_env() -> Self {
        Self {
            state_dir: host_dir(),
        }
    }

    /// The directory given, else the default; `None` when the host has neither.
    #[must_use]
    pub fn dir(&self) -> Option<PathBuf> {
        self.state_dir.clone().or_else(default_dir)
    }

    /// How this host's witness judges `store`, read without writing anything: `None` for
    /// a store the writers here would take, one they never wrote, a memory store, or a
    /// host without a state directory.
    ///
    /// # Errors
    /// An unreadable witness (exit 2), or a store failure.
    pub fn rewound(&self, store: &Store) -> Result<Option<Rewound>, Failure> {
        match self.dir() {
            Some(dir) if store.physical_durability() => Ok(Rewound::find(&dir, store)?),
            _ => Ok(None),
        }
    }

    /// A revision this host's witness saw that the store keeps no history for any more,
    /// when the writers here would take the store (see `store/beyond_history.rs`).
    ///
    /// # Errors
    /// As [`Self::rewound`].
    pub fn beyond_history(&self, store: &Store) -> Result<Option<BeyondHistory>, Failure> {
        match self.dir() {
            Some(dir) if store.physical_durability() => Ok(BeyondHistory::find(&dir, store)?),
            _ => Ok(None),
        }
    }

    /// `store` checked against this host's witness on every write. A memory store lives
    /// and dies with the process: there is nothing to witness.
    ///
    /// # Errors
    /// `STORE_REWOUND` (exit 2) when the store is behind the witness or another store; an
    /// unusable state directory (exit 2).
    pub fn witnessed(&self, store: Store) -> Result<Store, Failure> {
        self.attach(store, Witness::open)
    }

    /// `store` with this host's witness, without judging the store against it (`store
    /// accept-rewind`, which then brings the witness to the store).
    ///
    /// # Errors
    /// An unusable state directory (exit 2).
    pub fn witnessed_unjudged(&self, store: Store) -> Result<Store, Failure> {
        self.attach(store, Witness::load)
    }

    fn attach(
        &self,
        store: Store,
        open: fn(&Path, &Store) -> crate::error::Result<Witness>,
    ) -> Result<Store, Failure> {
        if !store.physical_durability() {
            return Ok(store);
        }
        let dir = self.dir().ok_or_else(|| {
            Failure::usage(
                "no directory for the rewind witness: give --state-dir (or set LEASEHOLD_STATE_DIR, XDG_STATE_HOME or HOME)",
            )
        })?;
        let witness = open(&dir, &store)?;
        Ok(store.with_witness(witness))
    }
}
