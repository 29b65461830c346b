//! Handlers written in any language, for the `leasehold authority` binary: a config file
//! ([`HandlerConfig`]) maps handler names and versions to a command ([`ExecHandler`]: the
//! attempt as JSON on stdin, the answer on stdout) or an HTTP endpoint ([`HttpHandler`]:
//! the same JSON POSTed, the answer in the response body). Both are ordinary async
//! [`crate::authority::Handler`]s, so the runtime renews, fences and retries them like any
//! other. The wire format ([`wire`]) is documented in docs/HANDLERS.md.

mod config;
mod endpoint;
mod exec;
mod http;
mod http_client;
pub mod wire;

pub use config::{
    DEFAULT_KILL_GRACE_MS, DEFAULT_TIMEOUT_MS, ExternalHandler, HandlerConfig, Target,
};
pub use endpoint::Endpoint;
pub use exec::{ExecHandler, ExecSpec, MAX_ANSWER_BYTES};
pub use http::HttpHandler;
pub use http_client::MAX_BODY_BYTES;
