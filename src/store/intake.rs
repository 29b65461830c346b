//! Moving the intake into work (docs/ARCHITECTURE.md#intake). Applications write enqueue
//! requests inside their own transactions with a plain `INSERT`, taking none of the store's
//! locks, so holding the write lock never spans an application's transaction; every claim
//! and every enqueue first moves the committed requests into work items, in its own write
//! transaction, under the ordinary enqueue rules. A request the rules refuse (another
//! effect holds its key or id) or that is not valid is kept, with the reason, for a person.

use super::Tx;
use super::work::{offer_in, stamp};
use crate::clock::Millis;
use crate::error::Result;
use crate::model::work::{NewWork, WorkKind};
use crate::model::{HandlerVersion, IntakeRow};

/// Requests moved by one transaction at most: a burst is moved over a few claims rather
/// than making one of them long.
pub(crate) const INTAKE_BATCH: usize = 1_000;

/// Moves the oldest committed intake requests into work items inside the caller's write
/// transaction: each becomes an item as [`super::Store::enqueue`] would make it (a repeat
/// by id or key adds nothing), or is refused with its reason. Nothing happens on a store
/// without an intake, or with nothing waiting.
///
/// # Errors
/// A store failure (then the requests stay in the intake: the transaction rolls back).
pub(crate) fn move_intake(tx: &mut dyn Tx, now: Millis) -> Result<()> {
    let rows = tx.take_intake(INTAKE_BATCH)?;
    if rows.is_empty() {
        return Ok(());
    }
    let mut stamped = Vec::with_capacity(rows.len());
    let mut offered = Vec::with_capacity(rows.len());
    for row in rows {
        match request(&row) {
            Ok(request) => {
                stamped.push(request);
                offered.push(row);
            }
            Err(reason) => tx.refuse_intake(&row, &reason, now)?,
        }
    }
    for (row, answer) in offered.iter().zip(offer_in(tx, now, &stamped)?) {
        if let Err(refused) = answer {
            tx.refuse_intake(row, &refused.to_string(), now)?;
        }
    }
    Ok(())
}

/// The effect a request asks for, stamped with its key; or why it is not one.
fn request(row: &IntakeRow) -> std::result::Result<(NewWork, String), String> {
    let number = |what: &str, v: i64| format!("{what} {v} is out of range");
    let spec = NewWork {
        id: row.id.clone(),
        kind: WorkKind::Effect,
        handler: row.handler.clone(),
        payload: row.payload.clone(),
        logical_effect_id: row.logical_effect_id.clone(),
        idempotency_key: row.idempotency_key.clone(),
        max_attempts: u32::try_from(row.max_attempts)
            .ok()
            .filter(|n| *n >= 1)
            .ok_or_else(|| number("max attempts", row.max_attempts))?,
        not_before: row.not_before,
        priority: i32::try_from(row.priority).map_err(|_| number("priority", row.priority))?,
    };
    let stamped = match (&row.handler_version, &row.compat) {
        (Some(version), None) => {
            let version = HandlerVersion::parse(version).map_err(|e| e.to_string())?;
            stamp(spec, &&version)
        }
        (None, Some(compat)) => {
            crate::ids::check_id("compat key", compat).map_err(|e| e.to_string())?;
            stamp(spec, &compat)
        }
        _ => return Err("names both or neither of a handler version and a compat key".into()),
    };
    stamped.map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::handler_key;

    fn row() -> IntakeRow {
        IntakeRow {
            seq: 1,
            id: "charge-1".into(),
            handler: "charge-card".into(),
            handler_version: Some("1.2.0".into()),
            compat: None,
            payload: "{}".into(),
            logical_effect_id: None,
            idempotency_key: Some("order-1".into()),
            max_attempts: 3,
            not_before: None,
            priority: 2,
        }
    }

    #[test]
    fn a_request_is_stamped_with_its_handler_versions_key() {
        let (spec, compat) = request(&row()).expect("a valid request");
        let version = HandlerVersion::parse("1.9.0").expect("a version");
        assert_eq!(compat, handler_key("charge-card", &version));
        assert_eq!((spec.max_attempts, spec.priority), (3, 2));
        let keyed = IntakeRow {
            handler_version: None,
            compat: Some("k".into()),
            ..row()
        };
        assert_eq!(request(&keyed).expect("a valid request").1, "k");
    }

    #[test]
    fn a_request_that_is_not_valid_says_why() {
        for (bad, why) in [
            (
                IntakeRow {
                    max_attempts: 0,
                    ..row()
                },
                "max attempts 0",
            ),
            (
                IntakeRow {
                    priority: i64::MAX,
                    ..row()
                },
                "priority",
            ),
            (
                IntakeRow {
                    handler_version: Some("one".into()),
                    ..row()
                },
                "one",
            ),
            (
                IntakeRow {
                    compat: Some("k".into()),
                    ..row()
                },
                "both or neither",
            ),
            (
                IntakeRow {
                    id: String::new(),
                    ..row()
                },
                "work id",
            ),
        ] {
            let refused = request(&bad).expect_err("refused");
            assert!(refused.contains(why), "{refused}");
            assert!(!refused.contains('\n'), "{refused}");
        }
    }
}
