//! The handler config file of `leasehold authority --config`: a TOML table per handler
//! name mapping it to a command (`exec`) or an HTTP endpoint (`http`), with its semantic
//! version and its limits. Every mistake is refused before anything starts, in one line
//! naming the file, the line and the key.

use std::collections::BTreeMap;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::Deserialize;
use serde::de::IgnoredAny;
use toml::Spanned;

use super::endpoint::Endpoint;
use super::exec::{ExecHandler, ExecSpec};
use super::http::HttpHandler;
use crate::authority::handlers::Workload;
use crate::clock::{Millis, parse_duration};
use crate::error::{Error, Result};
use crate::foundation::file_input::read_text;
use crate::foundation::toml_file::Located;
use crate::model::HandlerVersion;

/// The largest config file read: a handler is a few lines.
const MAX_CONFIG_BYTES: u64 = 256 * 1024;
/// How long a handler may run when the file does not say.
pub const DEFAULT_TIMEOUT_MS: Millis = 30_000;
/// How long a command has between SIGTERM and SIGKILL when the file does not say.
pub const DEFAULT_KILL_GRACE_MS: Millis = 5_000;

/// What one handler runs.
#[derive(Debug, Clone)]
pub enum Target {
    /// A command: the attempt on stdin, the answer on stdout.
    Exec(ExecSpec),
    /// An HTTP endpoint: the attempt POSTed, the answer in the response body.
    Http(Endpoint),
}

/// One handler of the file, checked.
#[derive(Debug, Clone)]
pub struct ExternalHandler {
    pub name: String,
    pub version: HandlerVersion,
    /// How long one attempt may take before it is stopped as a retryable `TIMEOUT`.
    pub timeout_ms: Millis,
    /// Whether an attempt that ends well but gives no answer (an exec command exiting 0
    /// silently, a 2xx response with an empty body) is a `BAD_ANSWER` (the default) rather
    /// than a success with no output.
    pub require_answer: bool,
    pub target: Target,
}

/// A loaded handler config file.
#[derive(Debug, Clone)]
pub struct HandlerConfig {
    /// The file, as it was named.
    pub path: PathBuf,
    /// Its handlers, sorted by name.
    pub handlers: Vec<ExternalHandler>,
}

/// The file's shape as far as handlers go: the other tables of `leasehold.toml` (the
/// store, the authority's and the dashboard's knobs) are read by `cli::settings`.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    handlers: Option<Spanned<BTreeMap<Spanned<String>, Spanned<RawHandler>>>>,
    #[serde(rename = "store")]
    _store: Option<IgnoredAny>,
    #[serde(rename = "authority")]
    _authority: Option<IgnoredAny>,
    #[serde(rename = "dashboard")]
    _dashboard: Option<IgnoredAny>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawHandler {
    version: Spanned<String>,
    exec: Option<Spanned<Vec<String>>>,
    http: Option<Spanned<String>>,
    timeout: Option<Spanned<String>>,
    kill_grace: Option<Spanned<String>>,
    env: Option<Spanned<BTreeMap<String, String>>>,
    cwd: Option<Spanned<String>>,
    allow_remote: Option<Spanned<bool>>,
    require_answer: Option<Spanned<bool>>,
}

/// A mistake at a place in the file.
struct Mistake {
    span: Range<usize>,
    why: String,
}

fn mistake<T>(spanned: &Spanned<T>, why: impl Into<String>) -> Mistake {
    Mistake {
        span: spanned.span(),
        why: why.into(),
    }
}

impl HandlerConfig {
    /// Reads and checks the file at `path`. Relative program paths (`exec[0]` holding a
    /// `/`) and `cwd` resolve against the file's directory, which is also the commands'
    /// working directory when `cwd` is not given.
    ///
    /// # Errors
    /// `INVALID`, in one line `FILE:LINE: KEY: why`, for anything wrong in it (or `FILE:
    /// why` when it cannot be read at all).
    pub fn load(path: &Path) -> Result<Self> {
        let shown = path.display();
        let text = read_text(path, MAX_CONFIG_BYTES)
            .map_err(|e| Error::Invalid(format!("handler config {shown}: {e}")))?;
        let dir = std::path::absolute(path)
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| PathBuf::from("."));
        let file = Located { path, text: &text };
        let at = |m: Mistake| file.error(m.span, &m.why);
        let raw: RawFile = file.parse()?;
        // A file of knobs alone has no handler table; an empty table is a mistake.
        let Some(table) = raw.handlers else {
            return Ok(Self {
                path: path.to_path_buf(),
                handlers: Vec::new(),
            });
        };
        if table.get_ref().is_empty() {
            return Err(at(mistake(&table, "no handler is configured")));
        }
        let handlers = table
            .into_inner()
            .into_iter()
            .map(|(name, handler)| check(&dir, &name, &handler))
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(at)?;
        Ok(Self {
            path: path.to_path_buf(),
            handlers,
        })
    }

    /// The file's handlers as a registry an authority runs (merge it over a demo
    /// workload with [`Workload::extend`]: a configured name replaces a demo one).
    #[must_use]
    pub fn workload(&self) -> Workload {
        let mut workload = Workload::new(self.path.display().to_string(), 0);
        for h in &self.handlers {
            match &h.target {
                Target::Exec(spec) => workload.register_async(
                    &h.name,
                    h.version.clone(),
                    Arc::new(ExecHandler::new(
                        spec.clone(),
                        &h.version,
                        h.timeout_ms,
                        h.require_answer,
                    )),
                ),
                Target::Http(endpoint) => workload.register_async(
                    &h.name,
                    h.version.clone(),
                    Arc::new(HttpHandler::new(
                        endpoint.clone(),
                        &h.version,
                        h.timeout_ms,
                        h.require_answer,
                    )),
                ),
            }
        }
        workload
    }
}

fn check(
    dir: &Path,
    name: &Spanned<String>,
    raw: &Spanned<RawHandler>,
) -> std::result::Result<ExternalHandler, Mistake> {
    crate::ids::check_id("handler name", name.get_ref()).map_err(|e| mistake(name, bare(e)))?;
    let h = raw.get_ref();
    let version =
        HandlerVersion::parse(h.version.get_ref()).map_err(|e| mistake(&h.version, bare(e)))?;
    let timeout_ms = duration(h.timeout.as_ref(), DEFAULT_TIMEOUT_MS)?;
    let target = match (&h.exec, &h.http) {
        (Some(exec), None) => {
            if let Some(remote) = &h.allow_remote {
                return Err(mistake(remote, "only an http handler takes allow_remote"));
            }
            Target::Exec(exec_spec(dir, exec, h)?)
        }
        (None, Some(url)) => {
            for (key, span) in [
                ("kill_grace", h.kill_grace.as_ref().map(Spanned::span)),
                ("env", h.env.as_ref().map(Spanned::span)),
                ("cwd", h.cwd.as_ref().map(Spanned::span)),
            ] {
                if let Some(span) = span {
                    return Err(Mistake {
                        span,
                        why: format!("only an exec handler takes {key}"),
                    });
                }
            }
            let allow_remote = h.allow_remote.as_ref().is_some_and(|a| *a.get_ref());
            Target::Http(
                Endpoint::parse(url.get_ref(), allow_remote).map_err(|why| mistake(url, why))?,
            )
        }
        (Some(_), Some(http)) => {
            return Err(mistake(
                http,
                "a handler takes exactly one of exec and http, not both",
            ));
        }
        (None, None) => {
            return Err(mistake(
                name,
                "a handler needs exactly one of exec (a command) or http (a URL)",
            ));
        }
    };
    Ok(ExternalHandler {
        name: name.get_ref().clone(),
        version,
        timeout_ms,
        require_answer: h.require_answer.as_ref().is_none_or(|r| *r.get_ref()),
        target,
    })
}

fn exec_spec(
    dir: &Path,
    exec: &Spanned<Vec<String>>,
    h: &RawHandler,
) -> std::result::Result<ExecSpec, Mistake> {
    let argv = exec.get_ref();
    let Some(program) = argv.first().filter(|p| !p.is_empty()) else {
        return Err(mistake(
            exec,
            "exec needs a program: [\"python3\", \"handler.py\"]",
        ));
    };
    let program = resolve_program(dir, program).map_err(|why| mistake(exec, why))?;
    let cwd = match &h.cwd {
        Some(cwd) => {
            let resolved = dir.join(cwd.get_ref());
            if !resolved.is_dir() {
                return Err(mistake(
                    cwd,
                    format!("{} is not a directory", resolved.display()),
                ));
            }
            resolved
        }
        None => dir.to_path_buf(),
    };
    Ok(ExecSpec {
        program,
        args: argv[1..].to_vec(),
        env: h
            .env
            .as_ref()
            .map(|e| e.get_ref().clone())
            .unwrap_or_default(),
        cwd,
        kill_grace_ms: duration(h.kill_grace.as_ref(), DEFAULT_KILL_GRACE_MS)?,
    })
}

/// A program named with a `/` is a path (relative ones from the config file's directory);
/// a bare name is looked up on `PATH`. Either must exist now, not at the first attempt.
fn resolve_program(dir: &Path, program: &str) -> std::result::Result<PathBuf, String> {
    if program.contains('/') {
        let path = dir.join(program);
        return if path.is_file() {
            Ok(path)
        } else {
            Err(format!("the program {} does not exist", path.display()))
        };
    }
    let found = std::env::var_os("PATH")
        .is_some_and(|paths| std::env::split_paths(&paths).any(|p| p.join(program).is_file()));
    if found {
        Ok(PathBuf::from(program))
    } else {
        Err(format!("the program {program:?} is not on PATH"))
    }
}

fn duration(
    value: Option<&Spanned<String>>,
    default: Millis,
) -> std::result::Result<Millis, Mistake> {
    let Some(value) = value else {
        return Ok(default);
    };
    match parse_duration(value.get_ref()) {
        Some(ms) if ms > 0 => Ok(ms),
        _ => Err(mistake(
            value,
            format!(
                "{:?} is not a positive duration (30s, 5m, 1500ms)",
                value.get_ref()
            ),
        )),
    }
}

/// An error's message without its `INVALID: ` prefix (the line says where instead).
fn bare(e: Error) -> String {
    match e {
        Error::Invalid(why) => why,
        other => other.to_string(),
    }
}
