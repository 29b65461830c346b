//! The JSON an external handler reads and answers, the same for `exec` and `http`
//! (docs/HANDLERS.md is its reference): the attempt as one camelCase object, and one
//! answer object — `{"ok": …}`, `{"retry": {…}}`, `{"fail": {…}}` — or, from a command
//! only, `{"checkpoint": "…"}` lines before it.

use serde::Deserialize;
use serde_json::{Value, json};

use crate::authority::handlers::{AttemptContext, HandlerOutcome, check_code, cut_message};
use crate::clock::Millis;

/// The request body: the attempt as JSON, with the handler's configured `version`.
#[must_use]
pub fn request(attempt: &AttemptContext, version: &str) -> Value {
    let events: Vec<Value> = attempt
        .events
        .iter()
        .map(|e| {
            json!({
                "seq": e.seq,
                "eventType": e.event_type,
                "source": e.source,
                "externalId": e.external_id,
                "payload": serde_json::from_str::<Value>(&e.payload).unwrap_or(Value::Null),
                "at": e.at,
            })
        })
        .collect();
    json!({
        "workId": attempt.work_id,
        "kind": attempt.kind,
        "handler": attempt.handler,
        "version": version,
        "payload": attempt.payload,
        "logicalEffectId": attempt.logical_effect_id,
        "idempotencyKey": attempt.idempotency_key,
        "attempt": attempt.attempt,
        "ownerId": attempt.owner_id,
        "generation": attempt.generation,
        "checkpoint": attempt.checkpoint,
        "events": events,
    })
}

/// One answer line or body.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// The attempt's outcome.
    Outcome(HandlerOutcome),
    /// A checkpoint to save under the attempt's fence before the outcome comes.
    Checkpoint(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RetryBody {
    code: String,
    #[serde(default)]
    message: String,
    #[serde(default, rename = "delayMs")]
    delay_ms: u64,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FailBody {
    code: String,
    #[serde(default)]
    message: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "lowercase")]
enum Wire {
    Ok(Value),
    Retry(RetryBody),
    Fail(FailBody),
    Checkpoint(String),
}

/// Reads one answer. `Ok(None)` when `text` is not a JSON object at all (a log line a
/// command printed); `Err` naming the mistake when it is an object but not an answer.
///
/// # Errors
/// A JSON object that is not exactly one of the answer forms, or a bad failure code.
pub fn parse_answer(text: &str) -> Result<Option<Answer>, String> {
    let text = text.trim();
    if !text.starts_with('{') {
        return Ok(None);
    }
    let Ok(object) = serde_json::from_str::<serde_json::Map<String, Value>>(text) else {
        return Ok(None);
    };
    let wire: Wire = serde_json::from_value(Value::Object(object)).map_err(|e| {
        format!("not an answer ({e}); expected {{\"ok\": …}}, {{\"retry\": {{\"code\": …}}}} or {{\"fail\": {{\"code\": …}}}}")
    })?;
    Ok(Some(match wire {
        Wire::Ok(output) => Answer::Outcome(HandlerOutcome::Succeeded(
            Some(output).filter(|v| !v.is_null()),
        )),
        Wire::Retry(r) => {
            check_code(&r.code)?;
            // Held to a day by the outcome, as every handler's ask is.
            let delay = Millis::try_from(r.delay_ms).unwrap_or(Millis::MAX);
            Answer::Outcome(HandlerOutcome::retry_after(
                &r.code,
                cut_message(&r.message),
                delay,
            ))
        }
        Wire::Fail(f) => {
            check_code(&f.code)?;
            Answer::Outcome(HandlerOutcome::terminal(&f.code, cut_message(&f.message)))
        }
        Wire::Checkpoint(data) => Answer::Checkpoint(data),
    }))
}

/// A handler that broke the protocol: retryable, so a fixed handler gets the item again,
/// and visible under its own code.
pub(super) fn bad_answer(why: &str) -> HandlerOutcome {
    HandlerOutcome::retryable("BAD_ANSWER", cut_message(why))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::authority::handlers::{AttemptKind, Pace};
    use crate::model::FailureClass;

    #[test]
    fn the_request_carries_the_whole_attempt_in_camel_case() {
        let attempt = AttemptContext::new(
            "e1",
            AttemptKind::Effect,
            "send-email",
            json!({"to": "a@b"}),
            "logical",
            "key-1",
            2,
            "auth-a",
            7,
            0,
            Pace::Real,
        )
        .with_checkpoint(Some("{\"page\":3}".into()));
        let request = request(&attempt, "1.2.0");
        assert_eq!(
            request,
            json!({
                "workId": "e1", "kind": "effect", "handler": "send-email", "version": "1.2.0",
                "payload": {"to": "a@b"}, "logicalEffectId": "logical", "idempotencyKey": "key-1",
                "attempt": 2, "ownerId": "auth-a", "generation": 7, "checkpoint": "{\"page\":3}",
                "events": [],
            })
        );
    }

    #[test]
    fn answers_read_as_outcomes() {
        let outcome = |text: &str| match parse_answer(text) {
            Ok(Some(Answer::Outcome(o))) => o,
            other => panic!("{text}: {other:?}"),
        };
        assert_eq!(outcome(r#"{"ok": null}"#), HandlerOutcome::Succeeded(None));
        assert_eq!(
            outcome(r#" {"ok": {"id": 4}} "#),
            HandlerOutcome::Succeeded(Some(json!({"id": 4})))
        );
        assert_eq!(
            outcome(r#"{"retry": {"code": "RATE_LIMITED", "message": "slow", "delayMs": 1500}}"#),
            HandlerOutcome::retry_after("RATE_LIMITED", "slow", 1_500)
        );
        assert_eq!(
            outcome(r#"{"retry": {"code": "E", "delayMs": 99999999999999}}"#).retry_floor_ms(),
            crate::authority::handlers::MAX_RETRY_AFTER_MS
        );
        let fail = outcome(r#"{"fail": {"code": "BAD_ADDRESS", "message": "no such user"}}"#);
        assert_eq!(
            fail.failure().map(|f| (f.class, f.code.as_str())),
            Some((FailureClass::Terminal, "BAD_ADDRESS"))
        );
        assert_eq!(
            parse_answer(r#"{"checkpoint": "page-3"}"#),
            Ok(Some(Answer::Checkpoint("page-3".into())))
        );
    }

    #[test]
    fn log_lines_are_not_answers_and_bad_objects_are_named() {
        assert_eq!(parse_answer("sending mail to a@b"), Ok(None));
        assert_eq!(parse_answer("{not json"), Ok(None));
        for bad in [
            r#"{"ok": 1, "fail": {"code": "E"}}"#,
            r#"{"done": true}"#,
            r#"{"retry": {"message": "no code"}}"#,
            r#"{"fail": {"code": "has space"}}"#,
            r#"{"retry": {"code": "E", "delayMs": -5}}"#,
        ] {
            let why = parse_answer(bad).expect_err(bad);
            assert!(!why.contains('\n'), "{why}");
        }
    }
}
