//! A SQLite store trimmed past the revision a host's witness saw is judged at the
//! milestone the witness kept and by its counts, not taken unjudged.

use leasehold::store::url::{OpenMode, open};
use leasehold::store::witness::{BeyondHistory, Witness};

use crate::support::trimmed::{self, on_sqlite};

#[test]
fn a_fork_before_the_trim_is_refused_at_the_milestone_the_host_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (here, elsewhere) = (dir.path().join("here"), dir.path().join("elsewhere"));
    let why = on_sqlite(dir.path(), |raw| {
        trimmed::a_fork_at_the_milestone(raw, &here, &elsewhere)
    });
    assert!(why.contains("at milestone revision 65536"), "{why}");
}

#[test]
fn a_fork_is_refused_at_a_milestone_another_host_crossed() {
    let dir = tempfile::tempdir().unwrap();
    let (here, elsewhere) = (dir.path().join("here"), dir.path().join("elsewhere"));
    let why = on_sqlite(dir.path(), |raw| {
        trimmed::a_fork_at_a_milestone_another_host_crossed(raw, &here, &elsewhere)
    });
    assert!(why.contains("at milestone revision 65536"), "{why}");
}

#[test]
fn a_copy_with_fewer_completions_trimmed_past_what_the_host_saw_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (here, elsewhere) = (dir.path().join("here"), dir.path().join("elsewhere"));
    on_sqlite(dir.path(), |raw| {
        let why = trimmed::fewer_completions_than_seen(raw, &here, &elsewhere);
        assert!(why.contains("commits were lost"), "{why}");
        let store = open(raw.url, OpenMode::Existing).unwrap();
        let witness = Witness::load(&here, &store).unwrap();
        let cost = store.with_witness(witness).rewind_cost().unwrap();
        let lost = cost.lost.unwrap();
        assert!(lost.at_least);
        assert_eq!((lost.counts.generations, lost.counts.completions), (3, 3));
    });
}

#[test]
fn the_same_history_trimmed_past_what_the_host_saw_is_taken_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let (here, elsewhere) = (dir.path().join("here"), dir.path().join("elsewhere"));
    on_sqlite(dir.path(), |raw| {
        let (saw, kept) = trimmed::trimmed_past_the_same_history(raw, &here, &elsewhere);
        let reader = open(raw.url, OpenMode::ReadOnly).unwrap();
        let beyond = BeyondHistory::find(&here, &reader).unwrap().unwrap();
        assert_eq!(
            (beyond.witnessed, beyond.oldest, beyond.milestone),
            (saw, kept, Some(65_536))
        );
        drop(reader);
        // Taken, and the witness moves past the trimmed revision: named once.
        let writer = trimmed::host(&here, raw.url).unwrap();
        trimmed::run_effects(&writer, 20, 1);
        let reader = open(raw.url, OpenMode::ReadOnly).unwrap();
        assert!(BeyondHistory::find(&here, &reader).unwrap().is_none());
    });
}

/// A writer whose two records (its host's, and the one beside the store) both saw a
/// revision that retention later trimmed judges the trim with each of them, and says so
/// once: the other writers here are of a build that keeps no record beside the store, so
/// that record stayed where this writer left it.
#[test]
fn a_trim_past_both_records_of_a_writer_is_named_once() {
    let dir = tempfile::tempdir().unwrap();
    let (here, elsewhere) = (dir.path().join("here"), dir.path().join("elsewhere"));
    let said = Said::default();
    let sink = said.clone();
    let logs = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_writer(move || sink.clone())
        .finish();
    on_sqlite(dir.path(), |raw| {
        trimmed::below_a_milestone(raw);
        trimmed::run_effects(&trimmed::host(&here, raw.url).unwrap(), 0, 2);
        let beside = format!("{}.leasehold-witness", raw.url);
        let left = std::fs::read(&beside).unwrap();
        let saw = open(raw.url, OpenMode::ReadOnly)
            .unwrap()
            .revision()
            .unwrap();
        trimmed::run_effects(&trimmed::host(&elsewhere, raw.url).unwrap(), 10, 2);
        std::fs::write(&beside, left).unwrap();
        trimmed::trim(raw, saw + 2);
        tracing::subscriber::with_default(logs, || {
            let writer = trimmed::host(&here, raw.url).unwrap();
            trimmed::run_effects(&writer, 20, 1);
        });
    });
    let text = said.text();
    assert_eq!(
        text.matches("witness-beyond-history").count(),
        1,
        "said once:\n{text}"
    );
}

/// Log lines, kept in memory.
#[derive(Clone, Default)]
struct Said(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Said {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Said {
    fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}
