#!/usr/bin/env python3
"""What an item's claim and completion cost SQLite, by the shape of the rows they write.

Creates the real SQLite schema (`src/store/sqlite/schema.sql`), enqueues N items, and drains
them the way an authority's polls do: each transaction completes the items the last one
claimed (the work row's UPDATE and a write record) and claims the next batch from the
claim lane (the lane read, the work row's UPDATE and a grant record). It then does the same
with the schema reshaped, so the variants can be compared in the same minutes:

  as-is            the schema as it ships
  split            the state a claim and a completion change in a narrow row of its own,
                   with the claim and state indexes; the item's columns in a row written
                   once (its kind, compat and key indexes); the claim reads the payload
  schema-10        the indexes before schema 11: claims in the claim lanes (`work_lane`)
  schema-9         the indexes before schema 10 as well: the state and owner indexes over
                   every item, and the history's revision indexes (grants and writes)
  no-listing       without the dashboard's listing indexes (state, owner, kind, compat)
  no-history       without the grant and write records
  without-rowid    the work table clustered by its id (`WITHOUT ROWID`): no separate
                   primary-key index to seek before each row
  page-8k          8 KiB pages instead of SQLite's 4 KiB (a new store's choice)
  page-16k         16 KiB pages

The last two are measurements only: the dashboard's filters and `leasehold check` need
what they drop. The statements are the provider's; the harness is Python's sqlite3, whose
per-statement overhead is the same for every variant. Usage:

  python3 benches/sqlite_row_shapes.py [ROUNDS] [ITEMS] [DIR]

Prints one line per run and the median of each variant (items drained per second).
"""

import os
import random
import sqlite3
import statistics
import sys
import time

SCHEMA = os.path.join(os.path.dirname(__file__), "..", "src", "store", "sqlite", "schema.sql")
BATCH = 150
VARIANTS = [
    "as-is",
    "split",
    "schema-10",
    "schema-9",
    "no-listing",
    "no-history",
    "without-rowid",
    "page-8k",
    "page-16k",
]

# The columns a claim and a completion change: the narrow row of the split variant.
STATE_COLUMNS = """state TEXT NOT NULL, owner_id TEXT, token TEXT, generation INTEGER NOT NULL,
    claimed_at INTEGER, lease_expires_at INTEGER, attempt_number INTEGER NOT NULL,
    uncertain_attempts INTEGER NOT NULL, max_attempts INTEGER NOT NULL, last_attempt_at INTEGER,
    next_eligible_at INTEGER NOT NULL, last_failure TEXT, result TEXT, updated_at INTEGER NOT NULL,
    due_at INTEGER, checkpoint TEXT"""

SPLIT = f"""
DROP TABLE work;
CREATE TABLE work (id TEXT PRIMARY KEY, kind TEXT NOT NULL, handler TEXT NOT NULL,
    payload TEXT NOT NULL, logical_effect_id TEXT NOT NULL, idempotency_key TEXT NOT NULL,
    compat TEXT NOT NULL, created_at INTEGER NOT NULL, priority INTEGER NOT NULL DEFAULT 0);
CREATE INDEX work_kind ON work (kind, id);
CREATE INDEX work_compat ON work (compat, id);
CREATE INDEX work_key ON work (idempotency_key, id);
CREATE TABLE claim (id TEXT PRIMARY KEY, compat TEXT NOT NULL, kind TEXT NOT NULL,
    handler TEXT NOT NULL, priority INTEGER NOT NULL, {STATE_COLUMNS});
CREATE INDEX claim_lane ON claim (compat, kind, handler, priority DESC, due_at, id)
    WHERE due_at IS NOT NULL AND state <> 'claimed';
CREATE INDEX claim_lane_waiting ON claim (kind, handler, next_eligible_at)
    WHERE state IN ('pending', 'retry');
CREATE INDEX claim_state ON claim (state, id) WHERE state <> 'claimed';
CREATE INDEX claim_owner ON claim (owner_id, id)
    WHERE owner_id IS NOT NULL AND state <> 'claimed';
CREATE INDEX claim_claimed_by ON claim (owner_id, id) WHERE state = 'claimed';
CREATE INDEX claim_reclaim ON claim (compat, due_at, id)
    WHERE state = 'claimed' OR (state = 'retry' AND lease_expires_at IS NOT NULL);
CREATE INDEX claim_succeeded ON claim (updated_at, id) WHERE state = 'succeeded';
"""

# Schema 10's claim lane: every non-terminal item, claims included.
LANE_10 = (
    "DROP INDEX work_lane; CREATE INDEX work_lane ON work "
    "(compat, kind, handler, priority DESC, due_at, id) WHERE due_at IS NOT NULL; "
)

RESHAPE = {
    "as-is": "",
    "split": SPLIT,
    "schema-10": LANE_10,
    "schema-9": LANE_10 + "DROP INDEX work_state; DROP INDEX work_owner; "
    "CREATE INDEX work_state ON work (state, id); "
    "CREATE INDEX work_owner ON work (owner_id, id); "
    "CREATE INDEX grants_revision ON grants (revision); "
    "CREATE INDEX writes_revision ON writes (revision);",
    "no-listing": "DROP INDEX work_state; DROP INDEX work_owner; "
    "DROP INDEX work_kind; DROP INDEX work_compat;",
    "no-history": "",
}

# The provider's UPDATE of a transition (`store/sqlite/tx.rs`): every column a transition
# may change, the owner only when it changes.
SET_ALL = """state = ?, token = ?, generation = ?, claimed_at = ?, lease_expires_at = ?,
    attempt_number = ?, uncertain_attempts = 0, max_attempts = 5, last_attempt_at = ?,
    next_eligible_at = 1, last_failure = NULL, result = ?, updated_at = ?, due_at = ?,
    checkpoint = NULL, priority = 0"""


def create(variant, path):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    db = sqlite3.connect(path, isolation_level=None)
    if variant.startswith("page-"):
        # Only a database without pages yet takes another page size.
        db.execute(f"PRAGMA page_size = {int(variant[5:-1]) * 1024}")
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    with open(SCHEMA, encoding="utf-8") as f:
        schema = f.read()
    if variant == "without-rowid":
        head, table = schema.split("CREATE TABLE IF NOT EXISTS work (", 1)
        columns, rest = table.split("\n);", 1)
        schema = f"{head}CREATE TABLE IF NOT EXISTS work ({columns}\n) WITHOUT ROWID;{rest}"
    db.executescript(schema)
    db.executescript(RESHAPE.get(variant, ""))
    return db


def enqueue(variant, db, n):
    payload = '{"n": 1, "note": "a no-op effect"}'
    db.execute("BEGIN")
    for i in range(n):
        item = f"w-{i:08d}-{random.getrandbits(40):010x}"
        ident = (item, payload, "le-" + item, "k-" + item)
        if variant == "split":
            db.execute(
                "INSERT INTO work VALUES (?, 'effect', 'noop', ?, ?, ?, 'c1', 1, 0)", ident
            )
            db.execute(
                "INSERT INTO claim (id, compat, kind, handler, priority, state, generation,"
                " attempt_number, uncertain_attempts, max_attempts, next_eligible_at,"
                " updated_at, due_at) VALUES (?, 'c1', 'effect', 'noop', 0, 'pending', 0, 0,"
                " 0, 5, 1, 1, 1)",
                (item,),
            )
        else:
            db.execute(
                "INSERT INTO work (id, kind, state, handler, payload, logical_effect_id,"
                " idempotency_key, compat, generation, attempt_number, uncertain_attempts,"
                " max_attempts, next_eligible_at, created_at, updated_at, due_at)"
                " VALUES (?, 'effect', 'pending', 'noop', ?, ?, ?, 'c1', 0, 0, 0, 5, 1, 1, 1, 1)",
                ident,
            )
    db.execute("COMMIT")


def drain(variant, db, n):
    table = "claim" if variant == "split" else "work"
    lane = "claim_lane" if variant == "split" else "work_lane"
    history = variant != "no-history"
    update = f"UPDATE {table} SET {SET_ALL} WHERE id = ?"
    claim = f"UPDATE {table} SET owner_id = ?, {SET_ALL} WHERE id = ?"
    revision, now, claimed = 0, 10, []
    start = time.perf_counter()
    while True:
        revision += 1
        now += 1
        db.execute("BEGIN IMMEDIATE")
        for item in claimed:
            db.execute(update, ("succeeded", None, 1, now, None, 1, now, "ok", now, None, item))
            if history:
                db.execute(
                    "INSERT INTO writes (revision, resource_id, generation, owner_id, verb,"
                    " accepted, detail, at, holder_id, holder_generation)"
                    " VALUES (?, ?, 1, 'a1', 'complete', 1, 'ok', ?, 'a1', 1)",
                    (revision, item, now),
                )
        ids = [
            row[0]
            for row in db.execute(
                f"SELECT id FROM {table} INDEXED BY {lane} WHERE compat = 'c1'"
                " AND kind = 'effect' AND handler = 'noop' AND due_at <= ?"
                " AND state <> 'claimed' ORDER BY priority DESC, due_at, id LIMIT ?",
                (now, BATCH),
            )
        ]
        for item in ids:
            if variant == "split":
                db.execute("SELECT payload FROM work WHERE id = ?", (item,)).fetchone()
            expires = now + 30_000
            db.execute(
                claim, ("a1", "claimed", "t", 1, now, expires, 1, now, None, now, expires, item)
            )
            if history:
                db.execute(
                    "INSERT INTO grants (revision, resource_id, generation, owner_id, how,"
                    " owner_compat, item_compat, at) VALUES (?, ?, 1, 'a1', 'claim', 'c1', 'c1', ?)",
                    (revision, item, now),
                )
        db.execute("COMMIT")
        claimed = ids
        if not ids:
            return n / (time.perf_counter() - start)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 20_000
    directory = sys.argv[3] if len(sys.argv) > 3 else "."
    path = os.path.join(directory, "row-shapes.db")
    rates = {v: [] for v in VARIANTS}
    for r in range(rounds):
        for variant in VARIANTS:
            db = create(variant, path)
            enqueue(variant, db, n)
            rate = drain(variant, db, n)
            db.close()
            rates[variant].append(rate)
            print(f"round {r + 1} {variant:16} {rate:8.0f} /s", flush=True)
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    base = statistics.median(rates["as-is"])
    for variant in VARIANTS:
        m = statistics.median(rates[variant])
        print(f"median {variant:16} {m:8.0f} /s  {m / base:5.2f}x as-is")


if __name__ == "__main__":
    main()
