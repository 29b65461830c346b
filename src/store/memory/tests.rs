//! A failed write transaction leaves the memory store exactly as it was: every row, every
//! claim index (work items' and instances'), every count and the history, however the
//! transaction touched them.

use super::*;
use crate::clock::Millis;
use crate::model::work::NewWork;
use crate::model::work::{WorkFilter, WorkState};
use crate::model::{
    Grant, GrantKind, InstanceStatus, JournalEvent, PageRequest, Takeover, WriteRecord, WriteVerb,
};

const COMPAT: &str = "c";

fn item(id: &str, handler: &str) -> WorkItem {
    WorkItem::new(NewWork::effect(id, handler, "{}"), COMPAT, 100)
}

fn claimed(mut item: WorkItem, expires: Millis) -> WorkItem {
    item.state = WorkState::Claimed;
    item.owner_id = Some("a-1".into());
    item.generation += 1;
    item.lease_expires_at = Some(expires);
    item
}

/// A running instance, runnable from `at` (never, for `None`).
fn instance(id: &str, at: Option<Millis>) -> InstanceRow {
    InstanceRow {
        instance_id: id.into(),
        workflow_id: "wf".into(),
        status: InstanceStatus::Running,
        compat: COMPAT.into(),
        instance_revision: 1,
        next_eligible_at: at,
        waiting_event: None,
        principal: "p".into(),
        start_key: Some(format!("start-{id}")),
        state: "{}".into(),
        created_at: 100,
        updated_at: 100,
    }
}

fn grant(revision: u64, id: &str, took_over: bool) -> Grant {
    Grant {
        revision,
        resource_id: id.into(),
        generation: 1,
        owner_id: "a-1".into(),
        how: GrantKind::Claim,
        owner_compat: Some(COMPAT.into()),
        item_compat: Some(COMPAT.into()),
        at: 150,
        took_over: took_over.then(|| Takeover {
            from_owner: "a-0".into(),
            from_generation: 0,
            lapsed_ms: 5,
        }),
    }
}

fn lease(resource: &str, owner: &str, generation: u64) -> Lease {
    Lease {
        resource_id: resource.into(),
        owner_id: owner.into(),
        token: format!("t{generation}"),
        generation,
        acquired_at: 100,
        expires_at: 2_000,
        released_at: None,
        checkpoint: None,
    }
}

fn event(event_type: &str) -> JournalEvent {
    JournalEvent {
        seq: 0,
        event_type: event_type.into(),
        source: None,
        external_id: None,
        payload: "{}".into(),
        fingerprint: String::new(),
        at: 100,
    }
}

fn write(revision: u64, id: &str, accepted: bool) -> WriteRecord {
    WriteRecord {
        revision,
        resource_id: id.into(),
        generation: 1,
        owner_id: "a-1".into(),
        verb: WriteVerb::Complete,
        accepted,
        refusal: (!accepted).then(|| "WORK_FENCED".into()),
        detail: "{}".into(),
        at: 150,
        holder: None,
    }
}

/// Everything a reader can see of the store, as text.
fn seen(store: &MemoryBackend) -> String {
    let mut out = String::new();
    store
        .read(&mut |tx| {
            let page = PageRequest::first(100);
            out = format!("{:?}", tx.list_work(&WorkFilter::default(), &page)?);
            let lanes = tx.claim_lanes(COMPAT)?;
            for lane in &lanes {
                out += &format!(
                    "{lane:?}: {:?}",
                    tx.lane_claimable(COMPAT, lane, 1_000, 100)?
                );
            }
            out += &format!("{:?}", tx.lapsed_claims(COMPAT, 1_000, 100)?);
            out += &format!("{:?}", tx.list_instances(None, None, &page)?);
            out += &format!("{:?}", tx.runnable_instances(COMPAT, 1_000, 100)?);
            out += &format!("{:?}", tx.instance_by_start_key("start-i2")?);
            out += &format!("{:?}", tx.finished_work(1_000, 100)?);
            out += &format!("{:?}", tx.finished_instances(1_000, 100)?);
            out += &format!("{:?}", tx.waiting_lanes()?);
            out += &format!("{:?}", tx.claimed_counts("a-1", 1_000)?);
            out += &format!("{:?}", tx.counters("")?);
            out += &format!("{:?}", tx.grants(None, 0, 100)?);
            out += &format!("{:?}", tx.writes(None, 0, 100)?);
            out += &format!("{:?}", tx.failovers(0, None, 100)?);
            out += &format!("{:?}", tx.refused_writes(0, None, 100)?);
            out += &format!("{:?}", tx.list_leases(&page)?);
            for owner in ["a-1", "a-2"] {
                out += &format!("{owner}: {:?}", tx.live_lease_count(owner, 1_000)?);
            }
            out += &format!("{:?}", tx.journal_after(0, None, 100)?);
            out += &format!("{:?}", tx.journal_high_water()?);
            out += &format!("{:?}", tx.revision()?);
            Ok(())
        })
        .expect("the memory store reads");
    out
}

/// Claims one item, completes another, deletes a third, adds a fourth, records history
/// and counts: every kind of change a claim or a completion makes.
fn busy(tx: &mut dyn Tx) -> Result<()> {
    let revision = tx.commit_revision()?;
    let pending = tx.work("w1")?.expect("w1 is there");
    tx.update_work(&Arc::new(claimed(pending, 900)))?;
    let mut done = tx.work("w2")?.expect("w2 is there");
    done.state = WorkState::Succeeded;
    done.lease_expires_at = None;
    tx.update_work(&Arc::new(done))?;
    tx.delete_work("w3")?;
    tx.insert_work(&item("w4", "other"))?;
    // An instance parked (claimed), one deleted, one started.
    tx.update_instance(&instance("i1", None))?;
    tx.delete_instance("i2")?;
    tx.update_instance(&InstanceRow {
        status: InstanceStatus::Completed,
        ..instance("i4", None)
    })?;
    tx.insert_instance(&instance("i3", Some(50)))?;
    tx.add_grant(grant(revision, "w1", true))?;
    tx.add_write(write(revision, "w2", true))?;
    tx.add_write(write(revision, "w9", false))?;
    tx.adjust_counter("claims", 1)?;
    // A read of the counts inside the transaction applies the summed changes.
    tx.counters("")?;
    tx.adjust_counter("claims", 1)?;
    tx.adjust_counter("writes|refused", 1)?;
    // A lease handed to another owner, one taken anew, and an event journalled.
    tx.put_lease(&lease("r1", "a-2", 2))?;
    tx.put_lease(&lease("r2", "a-1", 1))?;
    tx.append_journal(&event("paid"))?;
    Ok(())
}

fn store() -> MemoryBackend {
    let store = MemoryBackend::new();
    store
        .write(&mut |tx| {
            let revision = tx.commit_revision()?;
            tx.insert_work(&item("w1", "send"))?;
            tx.insert_work(&claimed(item("w2", "send"), 500))?;
            tx.insert_work(&item("w3", "bill"))?;
            tx.add_grant(grant(revision, "w2", false))?;
            tx.insert_instance(&instance("i1", Some(200)))?;
            tx.insert_instance(&instance("i2", Some(300)))?;
            tx.insert_instance(&instance("i4", Some(400)))?;
            tx.put_lease(&lease("r1", "a-1", 1))?;
            tx.append_journal(&event("ordered"))?;
            tx.adjust_counter("claims", 1)
        })
        .expect("the store is set up");
    store
}

#[test]
fn a_failed_write_leaves_every_row_index_count_and_record_as_it_was() {
    let store = store();
    let before = seen(&store);
    let failed = store.write(&mut |tx| {
        busy(tx)?;
        Err(Error::Invalid("the transaction gives up".into()))
    });
    assert!(failed.is_err());
    assert_eq!(seen(&store), before);
}

#[test]
fn the_same_write_committed_changes_what_a_reader_sees() {
    // The other side of the rollback test: the changes it undoes are all visible.
    let store = store();
    let before = seen(&store);
    store.write(&mut busy).expect("the write commits");
    let after = seen(&store);
    assert_ne!(after, before);
    for fact in [
        "w4",
        "WORK_FENCED",
        "a-0",
        "Succeeded",
        "\"i3\"",
        "\"r2\"",
        "a-2: 1",
        "\"paid\"",
    ] {
        assert!(
            after.contains(fact),
            "{fact} is seen after the write: {after}"
        );
    }
    assert!(!after.contains("\"w3\""), "w3 was deleted: {after}");
    assert!(!after.contains("\"i2\""), "i2 was deleted: {after}");
}
