//! `--handler-version V`: the version of the handler(s) a one-shot producer's work is for,
//! which decides which authorities may claim it (its compatibility key, see
//! [`crate::model::compat`]). Without the flag a producer uses the version the running
//! authorities register for that handler. With none running (a deploy window, an outage),
//! it uses the version the authority heard from last registered, stopped or gone, so work
//! enqueued while the fleet is down is claimed when it comes back; and only a handler no
//! authority ever registered takes the default version ([`HandlerVersion::DEMO`]). The
//! last two are said on standard error, with the version stamped. Running authorities that
//! disagree on the compatibility part leave the choice to the operator: one line asking for
//! `--handler-version`, exit 2, nothing written.

use std::collections::BTreeMap;

use clap::Args;

use super::Failure;
use crate::foundation::text_cell::escape;
use crate::foundation::toml_file::nearest;
use crate::model::handler_key;
use crate::model::{Authority, HandlerVersion};
use crate::ops::live_builds::LiveBuilds;
use crate::store::Store;

/// The `--handler-version` flag of a producer.
#[derive(Debug, Clone, Default, Args)]
pub struct HandlerVersionArg {
    /// The semantic version of the handler(s) the work is for (default: the version the
    /// running authorities register, else the one registered last, else 1.0.0). A
    /// different major version is other code: only authorities running a compatible
    /// version claim the work.
    #[arg(long = "handler-version", value_name = "V")]
    pub handler_version: Option<String>,
}

/// The versions a producer's work is stamped with, and what it should be told about any
/// chosen without a running authority to go by.
#[derive(Debug, Clone, Default)]
pub struct Stamp {
    pub versions: BTreeMap<String, HandlerVersion>,
    /// One line each, for standard error.
    pub notes: Vec<String>,
}

impl Stamp {
    /// Says the notes on standard error: the answer on standard output stays as it is.
    pub fn tell(&self) {
        tell(&self.notes);
    }
}

/// Says `notes` on standard error, one line each.
pub fn tell(notes: &[String]) {
    for note in notes {
        eprintln!("note: {note}");
    }
}

impl HandlerVersionArg {
    /// The version each of `handlers` is taken at.
    ///
    /// # Errors
    /// As [`Self::stamp`].
    pub fn versions<'a>(
        &self,
        store: &Store,
        handlers: impl IntoIterator<Item = &'a str>,
    ) -> Result<BTreeMap<String, HandlerVersion>, Failure> {
        Ok(self.stamp(store, handlers)?.versions)
    }

    /// The version each of `handlers` is taken at, with a note for each one no running
    /// authority vouched for.
    ///
    /// # Errors
    /// Exit 2: a `--handler-version` that is not a semantic version, running authorities
    /// that disagree on a handler's compatibility part, a store failure.
    pub fn stamp<'a>(
        &self,
        store: &Store,
        handlers: impl IntoIterator<Item = &'a str>,
    ) -> Result<Stamp, Failure> {
        let handlers: Vec<&str> = handlers.into_iter().collect();
        if let Some(given) = &self.handler_version {
            let version = HandlerVersion::parse(given)?;
            return Ok(Stamp {
                versions: handlers
                    .into_iter()
                    .map(|h| (h.to_owned(), version.clone()))
                    .collect(),
                notes: Vec::new(),
            });
        }
        let live = LiveBuilds::load(store, store.now())?;
        let mut stamp = Stamp::default();
        for handler in handlers {
            let registered = live.versions(handler);
            let version = match registered.first() {
                Some(first) => {
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
                    first.clone()
                }
                None => {
                    let (version, note) = without_running(live.registrations(), handler);
                    stamp.notes.push(note);
                    version
                }
            };
            stamp.versions.insert(handler.to_owned(), version);
        }
        Ok(stamp)
    }

    /// The key work for `handler` is stamped with, and the stamp's notes, for the caller
    /// to tell once it wrote (a refused or repeated write stamped nothing).
    ///
    /// # Errors
    /// As [`Self::stamp`].
    pub fn key(&self, store: &Store, handler: &str) -> Result<(String, Stamp), Failure> {
        let stamp = self.stamp(store, [handler])?;
        let key = stamp
            .versions
            .get(handler)
            .map(|v| handler_key(handler, v))
            .unwrap_or_default();
        Ok((key, stamp))
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
            None => Builds::fleet(&LiveBuilds::load(store, store.now())?),
        })
    }
}

/// The version of `handler` when no running authority runs it: the one the registration
/// heard from last declared (stopped or gone: the fleet that comes back is likeliest the
/// one that left), else the default. With the note that says which, and where no
/// authority ever ran `handler`, the registered name it may have meant.
fn without_running(registrations: &[Authority], handler: &str) -> (HandlerVersion, String) {
    let last = registrations
        .iter()
        .filter_map(|a| Some((a, a.handler_versions().remove(handler)?)))
        .max_by_key(|(a, _)| a.heartbeat_at);
    if let Some((authority, version)) = last {
        let note = format!(
            "no running authority runs handler {}: stamped {version}, the version {} registered last (--handler-version to choose)",
            escape(handler),
            escape(&authority.instance_id)
        );
        return (version, note);
    }
    let known: Vec<String> = registrations
        .iter()
        .flat_map(|a| a.handler_versions().into_keys())
        .collect();
    let hint = nearest(handler, known.iter().map(String::as_str))
        .map(|near| format!(" (did you mean {}?)", escape(near)))
        .unwrap_or_default();
    let version = HandlerVersion::demo();
    let note = format!(
        "no authority has registered handler {}{hint}: stamped the default version {version} (--handler-version to choose)",
        escape(handler)
    );
    (version, note)
}
