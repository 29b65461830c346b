//! The command line built without the `postgres` feature, as `.ci/run` builds it
//! (`cargo test --no-default-features --features cli --test without_postgres`): a
//! PostgreSQL URL is refused in one line that names the missing feature, on every command
//! that opens a store, and the password in it is never echoed. A build with the feature
//! compiles this suite empty. It includes only the failure contract of the support layer,
//! so that this second build of the binary compiles one small test crate.
#![cfg(not(feature = "postgres"))]
#![allow(clippy::unwrap_used)]

#[path = "support/failure.rs"]
mod failure;

#[test]
fn postgres_urls_name_the_missing_feature() {
    let url = "postgres://operator:s3cr3t@127.0.0.1:1/leasehold";
    let state = tempfile::tempdir().unwrap();
    for args in [
        vec!["inspect", "--store", url, "overview"],
        vec!["history", "--store", url, "wf-1"],
        vec!["check", "--store", url],
        vec!["attach", "--read-only", url],
        vec!["authority", "--store", url, "--workload", "default"],
    ] {
        let o = failure::run_in(state.path(), &args);
        let err = failure::assert_one_line_failure(&o, 2);
        assert!(err.contains("`postgres` feature"), "{args:?}: {err}");
        assert!(!err.contains("s3cr3t"), "{args:?}: {err}");
    }
}
