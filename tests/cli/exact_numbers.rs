//! Payload numbers mean what was typed: one a 64-bit value cannot hold is refused (exit 2,
//! nothing stored) instead of rounded — two different events are never one duplicate.

use super::refusals::sha256;
use super::{assert_one_line_failure, code, leasehold, stdout};

#[test]
fn numbers_beyond_64_bits_are_refused_never_rounded_into_a_duplicate() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db").display().to_string();
    assert_eq!(code(&leasehold(&["init", &path])), 0);
    let event = |n: &str| {
        let payload = format!("{{\"amount\": {n}}}");
        leasehold(&[
            "event",
            "--store",
            &path,
            "--type",
            "paid",
            "--source",
            "shop",
            "--id",
            "o-1",
            "--payload",
            &payload,
        ])
    };
    let before = sha256(std::path::Path::new(&path));
    for n in [
        "18446744073709551617",
        "18446744073709551618",
        "0.1000000000000000000001",
    ] {
        let err = assert_one_line_failure(&event(n), 2);
        assert!(err.contains(n), "{err}");
    }
    assert_eq!(
        sha256(std::path::Path::new(&path)),
        before,
        "nothing was stored"
    );
    let start = leasehold(&[
        "workflow",
        "start",
        "--store",
        &path,
        "reminder",
        "--args",
        "{\"n\": 1e400}",
    ]);
    assert_eq!(code(&start), 2, "{start:?}");

    // Exact numbers still dedup as before: the same payload again is a duplicate.
    let first = event("18446744073709551615");
    assert_eq!(code(&first), 0, "{first:?}");
    assert!(stdout(&first).starts_with("accepted"), "{first:?}");
    let again = event("18446744073709551615");
    assert!(stdout(&again).starts_with("duplicate"), "{again:?}");
}
