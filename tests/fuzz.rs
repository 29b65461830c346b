//! Arbitrary input against every parser an operator or a producer can reach, and against
//! opening a store: each must answer with a value or an error, never a panic, and never
//! write into a store it refuses.
//!
//! These run on the stable toolchain as property tests. CI runs a bounded number of cases
//! (`PROPTEST_CASES`, 256 by default); a longer hunt is the same command with a larger
//! number, e.g. `PROPTEST_CASES=200000 cargo test --release --test fuzz`.

#![allow(clippy::unwrap_used)]

use std::path::Path;

use proptest::prelude::*;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use leasehold::canonical::canonical_json;
use leasehold::ops::filter::{Filter, Subject};
use leasehold::store::url::{OpenMode, open};
use leasehold::workflow::def::parse_definition_toml;
use leasehold::workflow::expr::json_eq;
use leasehold::workflow::{
    Catalog, Expr, Scope, eval, parse_definition, semantic_fingerprint, validate,
};

/// Any JSON value, a few levels deep, with the numbers that trouble encoders (huge
/// integers, negative zero, fractions).
fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<u64>().prop_map(Value::from),
        any::<f64>()
            .prop_filter("JSON has no NaN or infinity", |f| f.is_finite())
            .prop_map(Value::from),
        Just(serde_json::json!(-0.0)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::btree_map(".{0,8}", inner, 0..6)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Text that is mostly shaped like a workflow definition, with arbitrary holes: pure noise
/// never gets past the first byte of a parser.
fn definition_like() -> impl Strategy<Value = String> {
    let word = prop_oneof![
        Just("{".to_owned()),
        Just("}".to_owned()),
        Just("[".to_owned()),
        Just("]".to_owned()),
        Just(",".to_owned()),
        Just(":".to_owned()),
        Just("\"id\"".to_owned()),
        Just("\"steps\"".to_owned()),
        Just("\"kind\"".to_owned()),
        Just("\"action\"".to_owned()),
        Just("\"wait-event\"".to_owned()),
        Just("\"inputs\"".to_owned()),
        Just("\"next\"".to_owned()),
        Just("\"when\"".to_owned()),
        Just("\"ref\"".to_owned()),
        "\"[a-z]{1,6}\"",
        "-?[0-9]{1,20}(\\.[0-9]{1,4})?",
        ".{0,4}",
    ];
    prop::collection::vec(word, 0..40).prop_map(|w| w.concat())
}

proptest! {
    #[test]
    fn definition_text_never_panics(text in prop_oneof![definition_like(), ".{0,200}"]) {
        let catalog = Catalog::demo();
        if let Ok(def) = parse_definition(&text) {
            let diagnostics = validate(&def, &catalog);
            let fingerprint = semantic_fingerprint(&def, &catalog);
            // The same text means the same thing every time.
            let again = parse_definition(&text).unwrap();
            prop_assert_eq!(&fingerprint, &semantic_fingerprint(&again, &catalog));
            prop_assert_eq!(diagnostics.len(), validate(&again, &catalog).len());
        }
        let _ = parse_definition_toml(&text);
    }

    #[test]
    fn expressions_evaluate_or_fail_never_panic(raw in json(), inputs in json()) {
        let expr = Expr::from_json(&raw);
        let inputs = match inputs {
            Value::Object(map) => map,
            other => Map::from_iter([("x".to_owned(), other)]),
        };
        let bindings = Map::new();
        let event = Value::Null;
        let scope = Scope { inputs: &inputs, bindings: &bindings, principal: "p", event: Some(&event) };
        let first = eval(&expr, &scope);
        // Deterministic: the same expression over the same scope answers the same.
        let second = eval(&expr, &scope);
        match (&first, &second) {
            (Ok(a), Ok(b)) => prop_assert!(json_eq(a, b)),
            (Err(a), Err(b)) => prop_assert_eq!(a, b),
            _ => prop_assert!(false, "{first:?} then {second:?}"),
        }
        let _ = expr.to_json();
    }

    #[test]
    fn canonical_json_is_a_fixed_point(value in json()) {
        let canonical = canonical_json(&value);
        let reread: Value = serde_json::from_str(&canonical).unwrap();
        prop_assert!(json_eq(&value, &reread), "{value} became {canonical}");
        prop_assert_eq!(canonical_json(&reread), canonical);
    }

    #[test]
    fn canonical_json_of_arbitrary_bytes_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..256)) {
        if let Ok(value) = serde_json::from_slice::<Value>(&bytes) {
            let canonical = canonical_json(&value);
            let reread: Value = serde_json::from_str(&canonical).unwrap();
            prop_assert_eq!(canonical_json(&reread), canonical);
        }
    }

    #[test]
    fn the_filter_grammar_answers_every_text(
        text in prop_oneof![
            ".{0,60}",
            prop::collection::vec(
                prop_oneof![
                    Just("kind:".to_owned()), Just("state:".to_owned()), Just("owner:".to_owned()),
                    Just("compat:".to_owned()), Just("status:".to_owned()), Just("id:".to_owned()),
                    Just(" ".to_owned()), "[a-zA-Z0-9_*:-]{0,8}", ".{0,3}",
                ],
                0..12,
            ).prop_map(|w| w.concat()),
        ],
    ) {
        for subject in [Subject::Work, Subject::Workflows, Subject::Other("leases")] {
            match Filter::parse(subject, &text) {
                // A refusal is one line that says what was wrong.
                Err(e) => prop_assert!(!e.to_string().is_empty() && !e.to_string().contains('\n'), "{e}"),
                // An accepted filter parses the same way twice.
                Ok(f) => prop_assert_eq!(format!("{f:?}"), format!("{:?}", Filter::parse(subject, &text).unwrap())),
            }
        }
    }
}

fn sha256(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

/// A small real store's bytes, made once: the starting point for damaged copies.
fn real_store_bytes() -> &'static [u8] {
    static BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    BYTES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("real.db");
        let store = open(&format!("sqlite:{}", path.display()), OpenMode::ReadWrite).unwrap();
        for i in 0..20 {
            let spec = leasehold::model::work::NewWork::effect(format!("e-{i}"), "noop", "{}");
            store.enqueue(spec, "compat").unwrap();
        }
        drop(store);
        std::fs::read(&path).unwrap()
    })
}

/// Opens `bytes` as a store file read-only, then for writing (never creating): each is a
/// store or a one-line error; the read-only open never changes the file, and a refused
/// writer leaves it as it was.
fn open_bytes(bytes: &[u8]) -> Result<(), TestCaseError> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.db");
    std::fs::write(&path, bytes).unwrap();
    let url = format!("sqlite:{}", path.display());
    let before = sha256(&path);
    match open(&url, OpenMode::ReadOnly) {
        Ok(store) => {
            let _ = store.overview();
        }
        Err(e) => prop_assert!(!e.to_string().contains('\n'), "{e}"),
    }
    prop_assert_eq!(&sha256(&path), &before, "a read-only open changed the file");
    if let Err(e) = open(&url, OpenMode::Existing) {
        prop_assert!(!e.to_string().contains('\n'), "{e}");
        prop_assert_eq!(&sha256(&path), &before, "a refused writer changed the file");
    }
    Ok(())
}

proptest! {
    // Each case writes and opens a file: a quarter of the cases of the pure parsers.
    #![proptest_config(ProptestConfig { cases: ProptestConfig::default().cases / 4, ..ProptestConfig::default() })]

    #[test]
    fn opening_arbitrary_bytes_as_a_store_never_panics(bytes in prop::collection::vec(any::<u8>(), 0..4096)) {
        open_bytes(&bytes)?;
    }

    #[test]
    fn opening_a_damaged_store_never_panics(
        flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..16),
        cut in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let mut bytes = real_store_bytes().to_vec();
        for (at, value) in flips {
            let i = at.index(bytes.len());
            bytes[i] = value;
        }
        if let Some(cut) = cut {
            bytes.truncate(cut.index(bytes.len()));
        }
        open_bytes(&bytes)?;
    }
}
