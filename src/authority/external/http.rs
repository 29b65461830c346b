//! `http` handlers: each attempt POSTed as JSON to the handler's endpoint, with its
//! idempotency key in an `Idempotency-Key` header, the answer JSON in the response body.
//! Without an answer the status decides: 2xx with an empty body is a retryable `BAD_ANSWER`
//! (success with no output for a handler whose file sets `require_answer = false`); 408, 429 and
//! 5xx are retryable `HTTP_<status>` (a `Retry-After` in seconds is honoured as the
//! retry's least delay); any other status is a terminal `HTTP_<status>`. Nobody listening
//! is a retryable `CONNECTION_REFUSED`, a timeout a retryable `TIMEOUT` (counted uncertain:
//! the server may yet act on the request); a lost lease drops the connection.

use std::sync::Arc;
use std::time::Duration;

use hyper::body::Bytes;

use super::endpoint::Endpoint;
use super::http_client::{Client, HttpError, Response};
use super::wire::{self, Answer};
use crate::authority::handlers::{Attempt, Handler, HandlerFuture, HandlerOutcome, cut_message};
use crate::clock::Millis;
use crate::model::HandlerVersion;

/// An async [`Handler`] POSTing each attempt to one endpoint.
#[derive(Debug, Clone)]
pub struct HttpHandler(Arc<Inner>);

#[derive(Debug)]
struct Inner {
    client: Client,
    version: String,
    timeout_ms: Millis,
    require_answer: bool,
}

impl HttpHandler {
    /// `require_answer`: whether a 2xx response with an empty body failed (`BAD_ANSWER`)
    /// rather than succeeded with no output: a proxy or framework answering 200 or 204 for
    /// a handler that never ran is not mistaken for done.
    #[must_use]
    pub fn new(
        endpoint: Endpoint,
        version: &HandlerVersion,
        timeout_ms: Millis,
        require_answer: bool,
    ) -> Self {
        Self(Arc::new(Inner {
            client: Client::new(endpoint),
            version: version.to_string(),
            timeout_ms,
            require_answer,
        }))
    }
}

impl Handler for HttpHandler {
    fn handle(&self, attempt: Attempt) -> HandlerFuture {
        let inner = self.0.clone();
        Box::pin(async move { inner.run(attempt).await })
    }
}

impl Inner {
    async fn run(&self, attempt: Attempt) -> HandlerOutcome {
        let body = wire::request(&attempt, &self.version).to_string();
        let headers = [
            ("Content-Type", "application/json"),
            ("Idempotency-Key", attempt.idempotency_key.as_str()),
            (
                "User-Agent",
                concat!("leasehold/", env!("CARGO_PKG_VERSION")),
            ),
        ];
        let timeout = Duration::from_millis(self.timeout_ms.max(0).unsigned_abs());
        let post = tokio::time::timeout(timeout, self.client.post(&headers, Bytes::from(body)));
        tokio::select! {
            answered = post => match answered {
                Ok(Ok(response)) => by_response(&response, self.require_answer),
                Ok(Err(HttpError::Refused(e))) => HandlerOutcome::retryable(
                    "CONNECTION_REFUSED",
                    format!("{}: {e}", self.client.endpoint().authority()),
                ),
                Ok(Err(HttpError::Connect(e))) => HandlerOutcome::retryable(
                    "CONNECTION_FAILED",
                    format!("{}: {e}", self.client.endpoint().authority()),
                ),
                Ok(Err(HttpError::Lost(why))) => HandlerOutcome::retryable("CONNECTION_LOST", cut_message(&why)),
                Err(_) => HandlerOutcome::retryable(
                    crate::rules::work::TIMEOUT_CODE,
                    format!("no response within {} ms", self.timeout_ms),
                ),
            },
            // Dropping the request drops its connection: the server sees it close.
            () = attempt.lease_lost() => HandlerOutcome::Uncertain,
        }
    }
}

/// The outcome a response gives: its answer body, or else its status. A 2xx body must be
/// an answer (or empty, when `require_answer` is off); any other status with a body that
/// is not one (an error page, a framework's JSON error) falls back on the status.
fn by_response(response: &Response, require_answer: bool) -> HandlerOutcome {
    let text = String::from_utf8_lossy(&response.body);
    let parsed = wire::parse_answer(&text);
    if let Ok(Some(Answer::Outcome(outcome))) = parsed {
        return outcome;
    }
    let status = response.status;
    let message = match text.lines().map(str::trim).find(|l| !l.is_empty()) {
        Some(line) => cut_message(line),
        None => format!("{status} {}", response.reason).trim().to_owned(),
    };
    if (200..300).contains(&status) {
        return match parsed {
            Ok(None) if text.trim().is_empty() && !require_answer => {
                HandlerOutcome::Succeeded(None)
            }
            Ok(None) if text.trim().is_empty() => wire::bad_answer(&format!(
                "a {status} response with an empty body is not an answer; require_answer = false in the handler's table accepts that as success"
            )),
            Ok(Some(Answer::Checkpoint(_))) => {
                wire::bad_answer("a checkpoint is not an answer; an http handler answers once")
            }
            Err(why) => wire::bad_answer(&why),
            _ => wire::bad_answer(&format!(
                "a {status} response whose body is not an answer: {message}"
            )),
        };
    }
    let code = format!("HTTP_{status}");
    match status {
        408 | 429 | 500..=599 => match response
            .header("retry-after")
            .and_then(|s| s.trim().parse::<Millis>().ok())
        {
            Some(seconds) => {
                HandlerOutcome::retry_after(&code, message, seconds.saturating_mul(1_000))
            }
            None => HandlerOutcome::retryable(&code, message),
        },
        _ => HandlerOutcome::terminal(&code, message),
    }
}

#[cfg(test)]
mod tests {
    use hyper::header::{HeaderName, HeaderValue};

    use super::*;
    use crate::model::FailureClass;

    fn response(status: u16, headers: &[(&'static str, &str)], body: &str) -> Response {
        Response {
            status,
            reason: "Reason".into(),
            headers: headers
                .iter()
                .map(|(n, v)| {
                    let value = HeaderValue::from_str(v).expect("a header value");
                    (HeaderName::from_static(n), value)
                })
                .collect(),
            body: Bytes::copy_from_slice(body.as_bytes()),
        }
    }

    fn summary(outcome: &HandlerOutcome) -> (String, String, Millis) {
        (
            outcome.label().to_owned(),
            outcome
                .failure()
                .map(|f| f.code.clone())
                .unwrap_or_default(),
            outcome.retry_floor_ms(),
        )
    }

    #[test]
    fn statuses_decide_when_the_body_is_no_answer() {
        let cases = [
            (response(204, &[], ""), ("retryable", "BAD_ANSWER", 0)),
            (response(200, &[], "  "), ("retryable", "BAD_ANSWER", 0)),
            (response(200, &[], "<html>"), ("retryable", "BAD_ANSWER", 0)),
            (
                response(429, &[("retry-after", "3")], "slow down"),
                ("retryable", "HTTP_429", 3_000),
            ),
            (response(503, &[], ""), ("retryable", "HTTP_503", 0)),
            (response(408, &[], ""), ("retryable", "HTTP_408", 0)),
            (
                response(404, &[], "no such route"),
                ("terminal", "HTTP_404", 0),
            ),
            (
                response(500, &[], r#"{"fail": {"code": "CARD_DECLINED"}}"#),
                ("terminal", "CARD_DECLINED", 0),
            ),
        ];
        for (response, (label, code, floor)) in cases {
            assert_eq!(
                summary(&by_response(&response, true)),
                (label.into(), code.into(), floor),
                "{response:?}"
            );
        }
        // Without require_answer an empty 2xx is a success with no output; nothing else
        // changes.
        for (status, body, label) in [
            (204, "", "succeeded"),
            (200, "  ", "succeeded"),
            (200, "<html>", "retryable"),
            (503, "", "retryable"),
        ] {
            let outcome = by_response(&response(status, &[], body), false);
            assert_eq!(outcome.label(), label, "{status} {body:?}");
        }
        let declined = by_response(&response(404, &[], "no such route"), true);
        assert_eq!(
            declined.failure().map(|f| (f.class, f.message.as_str())),
            Some((FailureClass::Terminal, "no such route"))
        );
    }
}
