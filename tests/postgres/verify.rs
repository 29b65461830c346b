//! `leasehold store verify` on PostgreSQL: it says what it checked, and that the pages are
//! the server's; a store missing a table is refused in one line.

use leasehold::store::url::{self, OpenMode};

use super::support::leasehold;
use super::support::postgres::database;

#[test]
fn store_verify_says_what_it_checks_and_refuses_a_store_missing_a_table() {
    let db = database();
    drop(url::open(db.url(), OpenMode::ReadWrite).unwrap());
    let o = leasehold(&["store", "verify", db.url()]);
    let out = String::from_utf8(o.stdout).unwrap();
    assert_eq!(o.status.code(), Some(0), "{out}");
    assert_eq!(out.lines().count(), 1, "{out}");
    assert!(
        out.starts_with("ok: postgres://")
            && out
                .contains("nothing to verify beyond the schema version and its tables on postgres"),
        "{out}"
    );

    let mut admin = postgres::Client::connect(db.url(), postgres::NoTls).unwrap();
    admin.batch_execute("DROP TABLE grants").unwrap();
    let o = leasehold(&["store", "verify", db.url()]);
    let err = String::from_utf8(o.stderr).unwrap();
    assert_eq!(o.status.code(), Some(2), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("grants table is missing"), "{err}");
}
