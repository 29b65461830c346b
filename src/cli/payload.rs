//! The `--payload JSON` of a producer command: the text itself, `-` to read it from
//! standard input, or `@FILE` to read a file. Either way it is bounded
//! ([`MAX_PAYLOAD_BYTES`], read no further than one byte past the bound) and must be JSON;
//! a refusal is one line (exit 2) and happens before any store is opened.

use std::borrow::Cow;
use std::io::Read;

use serde_json::Value;

use super::Failure;
use crate::foundation::file_input::{MAX_PAYLOAD_BYTES, ReadFailure, read_text, read_text_from};

/// The payload `arg` names: `-` reads `stdin`, `@FILE` the file, anything else is the JSON
/// itself (a JSON text never starts with `@`).
///
/// # Errors
/// Exit 2: unreadable or non-UTF-8 input, more than [`MAX_PAYLOAD_BYTES`], not JSON, a
/// number that would be rounded (see `exact_json.rs`).
pub fn read_payload(arg: &str, stdin: impl Read) -> Result<Value, Failure> {
    let text = if arg == "-" {
        Cow::Owned(read_text_from(stdin, MAX_PAYLOAD_BYTES).map_err(|e| {
            Failure::usage(format!("cannot read --payload from standard input: {e}"))
        })?)
    } else if let Some(path) = arg.strip_prefix('@') {
        Cow::Owned(
            read_text(std::path::Path::new(path), MAX_PAYLOAD_BYTES)
                .map_err(|e| Failure::usage(format!("cannot read --payload from {path}: {e}")))?,
        )
    } else if arg.len() as u64 > MAX_PAYLOAD_BYTES {
        let too_large = ReadFailure::TooLarge {
            limit: MAX_PAYLOAD_BYTES,
        };
        return Err(Failure::usage(format!("--payload is {too_large}")));
    } else {
        Cow::Borrowed(arg)
    };
    super::exact_json::parse_exact("--payload", &text)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::cli::EXIT_USAGE;

    fn refused(arg: &str, stdin: &[u8]) -> String {
        let failure = read_payload(arg, stdin).unwrap_err();
        assert_eq!(failure.exit, EXIT_USAGE);
        failure.message
    }

    #[test]
    fn a_file_after_an_at_sign() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("big.json");
        std::fs::write(&file, r#"{"rows": [1, 2, 3]}"#).unwrap();
        let arg = format!("@{}", file.display());
        assert_eq!(
            read_payload(&arg, &b"never read"[..]).unwrap(),
            serde_json::json!({"rows": [1, 2, 3]})
        );
        assert!(refused("@/nonexistent/payload.json", b"").contains("cannot read --payload"));
    }

    #[test]
    fn inline_or_standard_input_and_always_json() {
        let untouched: &[u8] = b"never read";
        assert_eq!(
            read_payload(r#"{"a": [1, 2]}"#, untouched).unwrap(),
            serde_json::json!({"a": [1, 2]})
        );
        assert_eq!(
            read_payload("-", &b" \"from stdin\"\n"[..]).unwrap(),
            serde_json::json!("from stdin")
        );
        assert_eq!(
            read_payload("-5", untouched).unwrap(),
            serde_json::json!(-5)
        );
        assert!(refused("{", b"").starts_with("--payload is not valid JSON: "));
        assert!(refused("-", b"").starts_with("--payload is not valid JSON: "));
        assert_eq!(
            refused("-", &[0xff, 0xfe]),
            "cannot read --payload from standard input: not UTF-8 text"
        );
    }

    #[test]
    fn a_payload_over_the_bound_is_refused_however_it_comes() {
        let limit = usize::try_from(MAX_PAYLOAD_BYTES).unwrap();
        let big = format!("\"{}\"", "x".repeat(limit));
        assert!(refused(&big, b"").starts_with("--payload is larger than 1 MiB"));
        let message = refused("-", big.as_bytes());
        assert!(
            message.starts_with("cannot read --payload from standard input: larger than 1 MiB"),
            "{message}"
        );
        let fits = format!("\"{}\"", "x".repeat(limit - 2));
        assert!(read_payload(&fits, &b""[..]).is_ok());
    }
}
