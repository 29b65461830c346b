//! `--handler-version V`: the version of the handler(s) a one-shot producer's work is for,
//! which decides which authorities may claim it (its compatibility key, see
//! [`crate::model::compat`]). Without the flag a producer uses the version the running
//! authorities register for that handler, and without any running authority that has it,
//! the built-in handlers' version ([`HandlerVersion::DEMO`]). Running authorities that
//! disagree on the compatibility part leave the choice to the operator: one line asking for
//! `--handler-version`, exit 2, nothing written.

use std::collections::BTreeMap;

use clap::Args;

use super::Failure;
use crate::model::HandlerVersion;
use crate::model::handler_key;
use crate::ops::live::LiveBuilds;
use crate::store::Store;

/// The `--handler-version` flag of a producer.
#[derive(Debug, Clone, Default, Args)]
pub struct HandlerVersionArg {
    /// The semantic version of the handler(s) the work is for (default: the version the
    /// running authorities register, else 1.0.0). A different major version is other code:
    /// only authorities running a compatible version claim the work.
    #[arg(long = "handler-version", value_name = "V")]
    pub handler_version: Option<String>,
}

impl HandlerVersionArg {
    /// The version each of `handlers` is taken at.
    ///
    /// # Errors
    /// Exit 2: a `--handler-version` that is not a semantic version, running authorities
    /// that disagree on a handler's compatibility part, a store failure.
    pub fn versions<'a>(
        &self,
        store: &Store,
        handlers: impl IntoIterator<Item = &'a str>,
    ) -> Result<BTreeMap<String, HandlerVersion>, Failure> {
        let handlers: Vec<&str> = handlers.into_iter().collect();
        if let Some(given) = &self.handler_version {
            let version = HandlerVersion::parse(given)?;
            return Ok(handlers
                .into_iter()
                .map(|h| (h.to_owned(), version.clone()))
                .collect());
        }
        let live = LiveBuilds::load(store, store.now())?;
        handlers
            .into_iter()
            .map(|handler| {
                let registered = live.versions(handler);
                let Some(first) = registered.first() else {
                    return Ok((handler.to_owned(), HandlerVersion::demo()));
                };
                if registered
                    .iter()
                    .any(|v| v.compatibility_part() != first.compatibility_part())
                {
                    let all: Vec<String> = registered.iter().map(ToString::to_string).collect();
                    return Err(Failure::usage(format!(
                        "running authorities run handler {handler} at incompatible versions ({}): choose one with --handler-version",
                        all.join(", ")
                    )));
                }
                Ok((handler.to_owned(), first.clone()))
            })
            .collect()
    }

    /// The key work for `handler` is stamped with.
    ///
    /// # Errors
    /// As [`Self::versions`].
    pub fn key(&self, store: &Store, handler: &str) -> Result<String, Failure> {
        let versions = self.versions(store, [handler])?;
        Ok(versions
            .get(handler)
            .map(|v| handler_key(handler, v))
            .unwrap_or_default())
    }

    /// The builds a cancel is judged by: the one build running every handler at the
    /// given version, else the fleet's ([`crate::ops::cancel::Builds`]).
    ///
    /// # Errors
    /// As [`Self::versions`].
    pub fn cancel_builds(&self, store: &Store) -> Result<crate::ops::cancel::Builds, Failure> {
        use crate::ops::cancel::Builds;
        Ok(match &self.handler_version {
            Some(given) => Builds::at_version(store, &HandlerVersion::parse(given)?)?,
            None => Builds::fleet(store)?,
        })
    }
}
