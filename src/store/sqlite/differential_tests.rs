//! A differential check: every read of a populated SQLite store answers exactly what the
//! memory reference answers for the same writes, page by page and in both directions.

use std::fmt::Debug;
use std::sync::Arc;

use super::tests::{event, item, read, temp, write};
use super::*;
use crate::model::event::DedupRecord;
use crate::model::schedule::Trigger;
use crate::model::work::WorkFilter;
use crate::model::workflow::ActionOutcome;
use crate::model::{
    AuditEntry, CatchUp, Checkpoint, DedupOutcome, Failure, FailureClass, Grant, HistoryRecord,
    Holder, Ingestion, InstanceRow, Lease, PageRequest, Schedule, Takeover, WorkItem, WorkKind,
    WorkState, WriteRecord,
};
use crate::store::memory::MemoryBackend;

fn work_fixture(i: usize) -> WorkItem {
    let compat = ["c1", "c2", "c3"][i % 3];
    let mut w = item(&format!("w{:03}", (i * 37) % 101), compat, 1_000);
    w.kind = WorkKind::ALL[(i / 3) % 3];
    w.handler = format!("h{}", i % 4);
    w.priority = (i % 7) as i32 / 3 - 1;
    w.next_eligible_at = 1_000 + ((i * 13) % 7) as i64 * 100;
    match i % 5 {
        0 => {}
        1 => {
            w.state = WorkState::Claimed;
            w.owner_id = Some(format!("o{}", i % 4));
            w.token = Some("t".into());
            w.generation = 2;
            w.lease_expires_at = Some(1_000 + ((i * 7) % 9) as i64 * 100);
        }
        2 => {
            w.state = WorkState::Retry;
            w.owner_id = Some(format!("o{}", i % 4));
            w.last_failure = Some(Failure {
                class: FailureClass::Retryable,
                code: "E".into(),
                message: "m".into(),
            });
        }
        3 => {
            w.state = WorkState::Succeeded;
            w.owner_id = Some(format!("o{}", i % 4));
            w.result = Some("{\"ok\":true}".into());
        }
        _ => {
            w.state = WorkState::Failed;
            w.last_failure = Some(Failure {
                class: FailureClass::Terminal,
                code: "T".into(),
                message: "x".into(),
            });
        }
    }
    w
}

fn instance(i: usize) -> InstanceRow {
    InstanceRow {
        instance_id: format!("i{:02}", (i * 7) % 23),
        workflow_id: "wf".into(),
        status: crate::model::InstanceStatus::ALL[i % 3],
        compat: ["c1", "c2"][i % 2].into(),
        instance_revision: i as u64,
        next_eligible_at: (i % 3 != 2).then_some(((i * 5) % 4) as i64 * 10),
        waiting_event: (i % 3 == 1).then(|| ["e1", "e2"][i % 2].to_owned()),
        principal: "p".into(),
        start_key: i.is_multiple_of(4).then(|| format!("k{i}")),
        state: "{}".into(),
        created_at: 1,
        updated_at: 2,
    }
}

#[expect(
    clippy::too_many_lines,
    reason = "the reference data set and its reads, one per line"
)]
fn populate(tx: &mut dyn Tx) -> Result<()> {
    tx.commit_revision()?;
    for i in 0..60 {
        let w = work_fixture(i);
        if !tx.insert_work(&w)? {
            tx.update_work(&Arc::new(w))?;
        }
    }
    // An update that moves an item out of and back into the claim index.
    let mut w = tx.work("w000")?.expect("w000");
    w.state = WorkState::Succeeded;
    tx.update_work(&Arc::new(w.clone()))?;
    w.state = WorkState::Pending;
    w.next_eligible_at = 50;
    tx.update_work(&Arc::new(w))?;
    for (name, d) in [
        ("work|a", 1),
        ("work|b", 2),
        ("work|a", 5),
        ("workx", 1),
        ("wf|x", -1),
        ("claims", 3),
        ("zero|net", 2),
        ("zero|net", -2),
        ("zero|nil", 0),
    ] {
        tx.adjust_counter(name, d)?;
    }
    for i in 0..12u64 {
        tx.put_lease(&Lease {
            resource_id: format!("r{:02}", (i * 5) % 13),
            owner_id: format!("o{}", i % 3),
            token: "t".into(),
            generation: i + 1,
            acquired_at: 0,
            expires_at: (i as i64) * 10,
            released_at: (i % 4 == 0).then_some(1),
            checkpoint: (i % 2 == 0).then(|| Checkpoint {
                generation: i,
                data: "d".into(),
                saved_at: 3,
            }),
        })?;
    }
    for i in 0..9 {
        let seq = tx.append_journal(&event(["a", "b"][i % 2], i as i64))?;
        tx.add_ingestion(&Ingestion {
            id: 0,
            at: i as i64,
            event_type: "a".into(),
            source: None,
            external_id: Some(format!("x{i}")),
            outcome: DedupOutcome::Accepted,
            seq: Some(seq),
        })?;
        tx.add_audit(&AuditEntry {
            id: 0,
            at: 1,
            actor: "me".into(),
            action: "a".into(),
            target: "t".into(),
            outcome: "ok".into(),
        })?;
    }
    for (source, external_id) in [("s", "x"), ("s", "a"), ("r", "z"), ("t", "")] {
        tx.put_dedup(&DedupRecord {
            source: source.into(),
            external_id: external_id.into(),
            fingerprint: "f".into(),
            seq: 1,
            first_seen_at: 2,
        })?;
    }
    for i in 0..8u64 {
        for r in ["ra", "rb"] {
            tx.add_grant(Grant {
                revision: i / 2,
                resource_id: r.into(),
                generation: i,
                owner_id: "o".into(),
                how: crate::model::GrantKind::Claim,
                owner_compat: Some("c".into()),
                item_compat: None,
                at: i as i64,
                took_over: (i % 3 == 0).then(|| Takeover {
                    from_owner: "p".into(),
                    from_generation: i,
                    lapsed_ms: 5 - i as i64,
                }),
            })?;
            tx.add_write(WriteRecord {
                revision: i / 2,
                resource_id: r.into(),
                generation: i,
                owner_id: "o".into(),
                verb: crate::model::WriteVerb::Complete,
                accepted: i % 2 == 0,
                refusal: (i % 2 == 1).then(|| "WORK_FENCED".into()),
                detail: "{}".into(),
                at: i as i64,
                holder: (i % 4 != 3).then(|| Holder {
                    owner_id: (i % 4 != 1).then(|| "h".into()),
                    generation: i + 1,
                }),
            })?;
        }
    }
    tx.trim_history(1, 1)?;
    for i in 0..6 {
        tx.put_schedule(&Schedule {
            schedule_id: format!("s{i}"),
            trigger: if i % 2 == 0 {
                Trigger::Interval { every_ms: 10 }
            } else {
                Trigger::Delay { after_ms: 5 }
            },
            catch_up: [CatchUp::Latest, CatchUp::All, CatchUp::Last(3)][i % 3],
            handler: "h".into(),
            payload: "{}".into(),
            compat: "c1".into(),
            last_due: (i % 2 == 0).then_some(1),
            next_due: ((i * 3) % 4) as i64,
            created_at: 0,
            paused_at: (i == 4).then_some(2),
        })?;
    }
    for i in 0..23 {
        let row = instance(i);
        if tx.instance(&row.instance_id)?.is_none() {
            tx.insert_instance(&row)?;
        } else {
            tx.update_instance(&row)?;
        }
    }
    for p in [2u64, 1, 3] {
        tx.add_history(&HistoryRecord {
            instance_id: "i00".into(),
            position: p,
            instance_revision: p,
            kind: "k".into(),
            at: 0,
            step_id: None,
            activation_id: Some("a".into()),
            detail: "{}".into(),
        })?;
    }
    for id in ["i/a", "i/b", "h/a"] {
        tx.put_action_outcome(&ActionOutcome {
            invocation_id: id.into(),
            attempt: 2,
            outcome: "succeeded".into(),
            detail: "1".into(),
            at: 3,
        })?;
    }
    for (key, at) in [("k", 1), ("j", 2), ("l", 3)] {
        tx.put_idempotent_answer(key, "answer", at)?;
    }
    Ok(())
}

fn pages() -> Vec<PageRequest> {
    let mut out = vec![
        PageRequest::first(5),
        PageRequest::last(5),
        PageRequest::first(0),
        PageRequest::first(1000),
    ];
    for key in [
        "w010",
        "w050",
        "w0",
        "z",
        "",
        "r05",
        "i10",
        "s2",
        "3",
        "00000000000000000004",
        "x",
    ] {
        out.push(PageRequest::after(key, 4));
        out.push(PageRequest::before(key, 4));
    }
    out
}

fn same<T: PartialEq + Debug>(
    mem: &dyn Backend,
    sql: &dyn Backend,
    what: &str,
    mut q: impl FnMut(&mut dyn Tx) -> Result<T>,
) -> T {
    let a = read(mem, &mut q).expect("memory read");
    let b = read(sql, &mut q).expect("sqlite read");
    assert_eq!(a, b, "{what}");
    a
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "the reference data set and its reads, one per line"
)]
fn every_read_matches_the_memory_reference() {
    let (_dir, path) = temp();
    let sql = open(&path, OpenMode::ReadWrite).expect("open");
    let mem = MemoryBackend::new();
    write(&mem, populate).expect("memory populate");
    write(&sql, populate).expect("sqlite populate");
    let (mem, sql): (&dyn Backend, &dyn Backend) = (&mem, &sql);

    same(mem, sql, "revision", |tx| tx.revision());
    for prefix in ["", "work|", "work", "wf|", "claims", "zz"] {
        same(mem, sql, &format!("counters {prefix}"), |tx| {
            tx.counters(prefix)
        });
    }
    for now in [0, 1_000, 1_250, 1_600, 5_000] {
        for compat in ["c1", "c2", "c3", "none"] {
            let lanes = same(mem, sql, &format!("lanes {compat}"), |tx| {
                tx.claim_lanes(compat)
            });
            for lane in &lanes {
                for n in [0, 3, 100] {
                    same(
                        mem,
                        sql,
                        &format!("claimable {compat} {lane:?} {now} {n}"),
                        |tx| tx.lane_claimable(compat, lane, now, n),
                    );
                }
            }
        }
        same(mem, sql, &format!("live leases {now}"), |tx| {
            (0..3)
                .map(|o| tx.live_lease_count(&format!("o{o}"), now / 100))
                .collect::<Result<Vec<_>>>()
        });
        same(mem, sql, &format!("claim counts {now}"), |tx| {
            (0..5)
                .map(|o| tx.claimed_counts(&format!("o{o}"), now))
                .collect::<Result<Vec<_>>>()
        });
        same(mem, sql, &format!("due schedules {now}"), |tx| {
            tx.due_schedules(now / 1_000, 3)
        });
    }
    same(mem, sql, "oldest waiting", |tx| tx.oldest_waiting_work());
    same(mem, sql, "waiting lanes", |tx| tx.waiting_lanes());
    let filters = vec![
        WorkFilter::default(),
        WorkFilter {
            states: vec![WorkState::Pending],
            ..WorkFilter::default()
        },
        WorkFilter {
            states: vec![WorkState::Retry, WorkState::Claimed, WorkState::Retry],
            ..WorkFilter::default()
        },
        WorkFilter {
            kind: Some(WorkKind::Schedule),
            ..WorkFilter::default()
        },
        WorkFilter {
            owner: Some("o1".into()),
            ..WorkFilter::default()
        },
        WorkFilter {
            owner: Some("o2".into()),
            states: vec![WorkState::Retry, WorkState::Succeeded],
            ..WorkFilter::default()
        },
        // Claimed items are in neither the state nor the owner index: the claimed-by one.
        WorkFilter {
            states: vec![WorkState::Claimed],
            ..WorkFilter::default()
        },
        WorkFilter {
            owner: Some("o1".into()),
            states: vec![WorkState::Claimed],
            ..WorkFilter::default()
        },
        WorkFilter {
            owner: Some("o1".into()),
            states: vec![WorkState::Claimed, WorkState::Retry],
            kind: Some(WorkKind::Effect),
            ..WorkFilter::default()
        },
        WorkFilter {
            compats: vec!["c2".into(), "c3".into()],
            ..WorkFilter::default()
        },
        WorkFilter {
            compats: vec!["c1".into()],
            kind: Some(WorkKind::Effect),
            ..WorkFilter::default()
        },
        WorkFilter {
            states: vec![WorkState::Pending, WorkState::Failed],
            kind: Some(WorkKind::Cursor),
            compats: vec!["c1".into(), "c2".into()],
            ..WorkFilter::default()
        },
        // Id prefixes: alone, under each leading index, empty and past every key.
        WorkFilter {
            id_prefix: Some("w00".into()),
            ..WorkFilter::default()
        },
        WorkFilter {
            id_prefix: Some("w01".into()),
            states: vec![WorkState::Pending, WorkState::Retry],
            ..WorkFilter::default()
        },
        WorkFilter {
            id_prefix: Some("w0".into()),
            owner: Some("o1".into()),
            ..WorkFilter::default()
        },
        WorkFilter {
            id_prefix: Some("w02".into()),
            compats: vec!["c1".into()],
            ..WorkFilter::default()
        },
        WorkFilter {
            id_prefix: Some(String::new()),
            ..WorkFilter::default()
        },
        WorkFilter {
            id_prefix: Some("\u{10ffff}".into()),
            ..WorkFilter::default()
        },
    ];
    for (i, filter) in filters.iter().enumerate() {
        for page in pages() {
            same(mem, sql, &format!("list_work #{i} {page:?}"), |tx| {
                tx.list_work(filter, &page)
            });
        }
    }
    for page in pages() {
        same(mem, sql, &format!("leases {page:?}"), |tx| {
            tx.list_leases(&page)
        });
        same(mem, sql, &format!("ingestions {page:?}"), |tx| {
            tx.list_ingestions(&page)
        });
        same(mem, sql, &format!("audit {page:?}"), |tx| {
            tx.list_audit(&page)
        });
        same(mem, sql, &format!("schedules {page:?}"), |tx| {
            tx.list_schedules(&page)
        });
        same(mem, sql, &format!("instances {page:?}"), |tx| {
            tx.list_instances(None, None, &page)
        });
        for status in ["running", "completed", "none"] {
            same(mem, sql, &format!("instances {status} {page:?}"), |tx| {
                tx.list_instances(Some(status), None, &page)
            });
            for prefix in ["i0", "i1", "i22", "j"] {
                same(
                    mem,
                    sql,
                    &format!("instances {status} {prefix} {page:?}"),
                    |tx| tx.list_instances(Some(status), Some(prefix), &page),
                );
                same(mem, sql, &format!("instances {prefix} {page:?}"), |tx| {
                    tx.list_instances(None, Some(prefix), &page)
                });
            }
        }
    }
    for after in [None, Some("i05"), Some("i22")] {
        for n in [0, 2, 50] {
            for e in ["e1", "e2", "e3"] {
                same(mem, sql, &format!("waiting {e} {after:?} {n}"), |tx| {
                    tx.instances_waiting_for(e, after, n)
                });
            }
        }
    }
    for now in [-1, 0, 10, 20, 100] {
        for compat in ["c1", "c2"] {
            same(mem, sql, &format!("runnable {compat} {now}"), |tx| {
                tx.runnable_instances(compat, now, 4)
            });
        }
    }
    // Incident lists: positions number rows per provider, so only the rows are compared.
    for since in [-1, 0, 1, 4, 7, 8] {
        for n in [0, 1, 2, 100] {
            same(mem, sql, &format!("failovers {since} {n}"), |tx| {
                let rows = tx.failovers(since, None, n)?;
                Ok((
                    rows.into_iter().map(|r| r.1).collect::<Vec<_>>(),
                    tx.count_failovers(since)?,
                ))
            });
            same(mem, sql, &format!("refused {since} {n}"), |tx| {
                let rows = tx.refused_writes(since, None, n)?;
                Ok((
                    rows.into_iter().map(|r| r.1).collect::<Vec<_>>(),
                    tx.count_refused_writes(since)?,
                ))
            });
        }
    }
    for after in [0, 1, 2, 3, u64::MAX - 1, u64::MAX] {
        for resource in [None, Some("ra"), Some("rz")] {
            for n in [0, 1, 3, 5, 100] {
                same(
                    mem,
                    sql,
                    &format!("grants {resource:?} {after} {n}"),
                    |tx| tx.grants(resource, after, n),
                );
                same(
                    mem,
                    sql,
                    &format!("writes {resource:?} {after} {n}"),
                    |tx| tx.writes(resource, after, n),
                );
            }
        }
        for through in [0, 1, 2, 3, 4, u64::MAX] {
            for n in [0, 1, 2, 100] {
                same(
                    mem,
                    sql,
                    &format!("grants {after} through {through} {n}"),
                    |tx| tx.grants_through(after, through, n),
                );
            }
        }
    }
    same(mem, sql, "history high revision", |tx| {
        tx.history_high_revision()
    });
    for after in [0, 3, 9] {
        for t in [None, Some("a"), Some("b")] {
            same(mem, sql, &format!("journal {after} {t:?}"), |tx| {
                tx.journal_after(after, t, 3)
            });
        }
    }
    same(mem, sql, "journal high water", |tx| tx.journal_high_water());
    for after in [None, Some(("s", "a")), Some(("r", "")), Some(("t", ""))] {
        for n in [0, 1, 2, 10] {
            same(mem, sql, &format!("dedup {after:?} {n}"), |tx| {
                tx.list_dedup(after, n)
            });
        }
    }
    for after in [None, Some(""), Some("i/a"), Some("k"), Some("z")] {
        for n in [1, 2, 10] {
            same(mem, sql, &format!("answers {after:?} {n}"), |tx| {
                tx.list_idempotent_answers(after, n)
            });
            same(mem, sql, &format!("outcomes {after:?} {n}"), |tx| {
                tx.list_action_outcomes(after, n)
            });
        }
    }
    same(mem, sql, "point reads", |tx| {
        Ok((
            tx.work("w000")?,
            tx.lease("r00")?,
            tx.dedup("s", "x")?,
            tx.dedup("s", "y")?,
            tx.schedule("s1")?,
            tx.instance("i07")?,
            tx.instance_by_start_key("k4")?,
            tx.history("i00")?,
            tx.action_outcome("i/a")?,
            tx.idempotent_answer("k")?,
            tx.idempotent_answer("nope")?,
        ))
    });
}
