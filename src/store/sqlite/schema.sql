-- leasehold SQLite schema, version 4. Every statement is idempotent so that any number of
-- processes may run it at once (each inside BEGIN IMMEDIATE). Instants are epoch
-- milliseconds; enums are their `as_str()` text; nested structs are JSON text.
--
-- `postgres/schema.sql` mirrors this file table for table, column for column and index for
-- index, with two exceptions where SQLite moves fewer index entries for every item it
-- drains: the history has no revision index (ranges are read by position, see
-- `Statements::position_after`), and the state and owner listing indexes leave claimed
-- items to `work_claimed_by`. Change both together otherwise (the conformance suite runs
-- on both). They stay two files
-- because what differs is on nearly every line (types, collations, `WITHOUT ROWID`, identity
-- columns, how booleans read in partial indexes, the idempotent insert): a template with
-- substitutions would hide the SQL each database actually runs. The column names and order
-- the code relies on are written once, in `store/sql/encode.rs`.

-- schema_version, revision (advanced once per committed write), journal_seq (high-water).
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;
INSERT OR IGNORE INTO meta (key, value) VALUES ('schema_version', 12);
INSERT OR IGNORE INTO meta (key, value) VALUES ('revision', 0);
INSERT OR IGNORE INTO meta (key, value) VALUES ('journal_seq', 0);
-- The store's identity (random, fixed at creation) and epoch (see store/epoch.rs).
INSERT OR IGNORE INTO meta (key, value) VALUES ('store_id', random());
INSERT OR IGNORE INTO meta (key, value) VALUES ('store_epoch', 0);

-- Incremental counts; `counters(prefix)` is a range over the primary key.
CREATE TABLE IF NOT EXISTS counters (
    name  TEXT PRIMARY KEY,
    value INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE IF NOT EXISTS leases (
    resource_id TEXT PRIMARY KEY,
    owner_id    TEXT NOT NULL,
    token       TEXT NOT NULL,
    generation  INTEGER NOT NULL,
    acquired_at INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    released_at INTEGER,
    checkpoint  TEXT -- JSON Checkpoint
);
CREATE INDEX IF NOT EXISTS leases_owner ON leases (owner_id, expires_at);

CREATE TABLE IF NOT EXISTS work (
    id                 TEXT PRIMARY KEY,
    kind               TEXT NOT NULL,
    state              TEXT NOT NULL,
    handler            TEXT NOT NULL,
    payload            TEXT NOT NULL,
    logical_effect_id  TEXT NOT NULL,
    idempotency_key    TEXT NOT NULL,
    compat             TEXT NOT NULL,
    owner_id           TEXT,
    token              TEXT,
    generation         INTEGER NOT NULL,
    claimed_at         INTEGER,
    lease_expires_at   INTEGER,
    attempt_number     INTEGER NOT NULL,
    uncertain_attempts INTEGER NOT NULL,
    max_attempts       INTEGER NOT NULL,
    last_attempt_at    INTEGER,
    next_eligible_at   INTEGER NOT NULL,
    last_failure       TEXT, -- JSON Failure
    result             TEXT,
    created_at         INTEGER NOT NULL,
    updated_at         INTEGER NOT NULL,
    -- When the item next becomes claimable: next_eligible_at for pending / retry,
    -- lease_expires_at for claimed, NULL for terminal. The claim index.
    due_at             INTEGER,
    checkpoint         TEXT, -- resume state saved under the claim (added by an upgrade)
    priority           INTEGER NOT NULL DEFAULT 0 -- claim order in its lane, higher first; last, as the upgrade adds it
);
-- Claim lanes: one per (kind, handler) of each compat digest, each in claim order. A claim
-- batch finds the lanes by a skip-scan (one seek per lane) and takes its share of each, so
-- no lane's backlog, however deep, delays another's due work. Claims are not in a lane:
-- a lapsed one is found by `work_reclaim` and served first, so a claim, its renewals and
-- its completion move no entry here but the one the claim removes.
CREATE INDEX IF NOT EXISTS work_lane ON work (compat, kind, handler, priority DESC, due_at, id)
    WHERE due_at IS NOT NULL AND state <> 'claimed';
-- Waiting items per (kind, handler), oldest first: how late each lane runs, one seek each.
CREATE INDEX IF NOT EXISTS work_lane_waiting ON work (kind, handler, next_eligible_at)
    WHERE state IN ('pending', 'retry');
-- The work list by state and by owner. Claimed items are left to `work_claimed_by`, and
-- unowned ones out of the owner's index: a claim then moves one entry of these instead of
-- four (a completion still moves two; list_work.rs reads both indexes).
CREATE INDEX IF NOT EXISTS work_state ON work (state, id) WHERE state <> 'claimed';
CREATE INDEX IF NOT EXISTS work_kind ON work (kind, id);
CREATE INDEX IF NOT EXISTS work_owner ON work (owner_id, id)
    WHERE owner_id IS NOT NULL AND state <> 'claimed';
-- What each authority holds right now: small, whatever the table's size.
CREATE INDEX IF NOT EXISTS work_claimed_by ON work (owner_id, id) WHERE state = 'claimed';
-- Reclaims by when they fall due: claims by when their lease lapses, and retries a lapse
-- left backing off (they keep the lapsed expiry). Served before the backlog.
DROP INDEX IF EXISTS work_lapsed;
CREATE INDEX IF NOT EXISTS work_reclaim ON work (compat, due_at, id)
    WHERE state = 'claimed' OR (state = 'retry' AND lease_expires_at IS NOT NULL);
CREATE INDEX IF NOT EXISTS work_compat ON work (compat, id);
-- Items by idempotency key: an enqueue seeks its key here, so a key is held by one item.
-- Not UNIQUE: a store written by an older build may hold a key twice and must still open
-- (`leasehold check` reports it); the key order lets the checker find such pairs in pages.
CREATE INDEX IF NOT EXISTS work_key ON work (idempotency_key, id);
-- Succeeded items by age: what retention trims, oldest first (store/retention.rs). Failed
-- items wait for a person (requeue, discard) and are not trimmed.
CREATE INDEX IF NOT EXISTS work_succeeded ON work (updated_at, id)
    WHERE state = 'succeeded';

CREATE TABLE IF NOT EXISTS dedup (
    source        TEXT NOT NULL,
    external_id   TEXT NOT NULL,
    fingerprint   TEXT NOT NULL,
    seq           INTEGER NOT NULL,
    first_seen_at INTEGER NOT NULL,
    PRIMARY KEY (source, external_id)
) WITHOUT ROWID;
-- Dedup records by age: the dedup window trims the oldest first.
CREATE INDEX IF NOT EXISTS dedup_age ON dedup (first_seen_at, source);

-- seq comes from meta.journal_seq: never reused, even after trimming.
CREATE TABLE IF NOT EXISTS journal (
    seq         INTEGER PRIMARY KEY,
    event_type  TEXT NOT NULL,
    source      TEXT,
    external_id TEXT,
    payload     TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    at          INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_type ON journal (event_type, seq);

CREATE TABLE IF NOT EXISTS ingestions (
    id          INTEGER PRIMARY KEY,
    at          INTEGER NOT NULL,
    event_type  TEXT NOT NULL,
    source      TEXT,
    external_id TEXT,
    outcome     TEXT NOT NULL,
    seq         INTEGER
);

CREATE TABLE IF NOT EXISTS subscriptions (
    subscription_id TEXT PRIMARY KEY,
    event_type      TEXT NOT NULL,
    sequence        INTEGER NOT NULL,
    generation      INTEGER NOT NULL,
    updated_at      INTEGER NOT NULL,
    updated_by      TEXT
);

CREATE TABLE IF NOT EXISTS schedules (
    schedule_id TEXT PRIMARY KEY,
    trigger     TEXT NOT NULL, -- JSON Trigger
    catch_up    TEXT NOT NULL, -- JSON CatchUp
    handler     TEXT NOT NULL,
    payload     TEXT NOT NULL,
    compat      TEXT NOT NULL,
    last_due    INTEGER,
    next_due    INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    paused_at   INTEGER -- set while paused: nothing fires
);
CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_due, schedule_id);
-- The unpaused ones by when they are due: what every poll asks (the earliest, the due), so
-- paused schedules, however many and however overdue, are never walked past.
CREATE INDEX IF NOT EXISTS schedules_due_unpaused ON schedules (next_due, schedule_id)
    WHERE paused_at IS NULL;

-- Handlers an operator paused fleet-wide: every claim reads this (small) table and claims
-- none of their work. The name need not be a handler anyone runs yet.
CREATE TABLE IF NOT EXISTS handler_pauses (
    handler   TEXT PRIMARY KEY,
    paused_at INTEGER NOT NULL,
    paused_by TEXT NOT NULL,
    reason    TEXT NOT NULL
) WITHOUT ROWID;
-- The fleet's claims of a rate-limited handler in its current fixed window, written by the
-- claiming transaction.
CREATE TABLE IF NOT EXISTS handler_rates (
    handler      TEXT PRIMARY KEY,
    window_start INTEGER NOT NULL,
    claims       INTEGER NOT NULL
) WITHOUT ROWID;

-- `published`: JSON of what the authority publishes about itself (outcomes held in
-- recovery, a bounded list and a count; a write stall), written with its heartbeat.
CREATE TABLE IF NOT EXISTS authorities (
    instance_id  TEXT PRIMARY KEY,
    compat       TEXT NOT NULL,
    build        TEXT NOT NULL,
    config       TEXT NOT NULL,
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL,
    stopped_at   INTEGER,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    published    TEXT NOT NULL DEFAULT '{}'
);

CREATE TABLE IF NOT EXISTS idempotency (
    key    TEXT PRIMARY KEY,
    answer TEXT NOT NULL,
    at     INTEGER NOT NULL
);
-- Keyed answers by age, for retention.
CREATE INDEX IF NOT EXISTS idempotency_age ON idempotency (at);

CREATE TABLE IF NOT EXISTS audit (
    id      INTEGER PRIMARY KEY,
    at      INTEGER NOT NULL,
    actor   TEXT NOT NULL,
    action  TEXT NOT NULL,
    target  TEXT NOT NULL,
    outcome TEXT NOT NULL
);

-- The checker's history; rowid orders rows of one revision by insertion, and rises with
-- the revision (each writer inserts its rows under the write lock), so a range of
-- revisions is a range of rowids, found by a binary search: no index on `revision`.
CREATE TABLE IF NOT EXISTS grants (
    seq          INTEGER PRIMARY KEY,
    revision     INTEGER NOT NULL,
    resource_id  TEXT NOT NULL,
    generation   INTEGER NOT NULL,
    owner_id     TEXT NOT NULL,
    how          TEXT NOT NULL,
    owner_compat TEXT,
    item_compat  TEXT,
    at           INTEGER NOT NULL,
    -- Set only on a failover: the holder it took over (see upgrade_1.sql for older stores).
    from_owner      TEXT,
    from_generation INTEGER,
    lapsed_ms       INTEGER
);
CREATE INDEX IF NOT EXISTS grants_resource ON grants (resource_id, revision);
CREATE INDEX IF NOT EXISTS grants_failovers ON grants (at, seq) WHERE from_owner IS NOT NULL;

CREATE TABLE IF NOT EXISTS writes (
    seq         INTEGER PRIMARY KEY,
    revision    INTEGER NOT NULL,
    resource_id TEXT NOT NULL,
    generation  INTEGER NOT NULL,
    owner_id    TEXT NOT NULL,
    verb        TEXT NOT NULL,
    accepted    INTEGER NOT NULL,
    refusal     TEXT,
    detail      TEXT NOT NULL,
    at          INTEGER NOT NULL,
    -- Who held the resource then; NULL generation: not recorded (an older store's row).
    holder_id         TEXT,
    holder_generation INTEGER
);
CREATE INDEX IF NOT EXISTS writes_resource ON writes (resource_id, revision);
CREATE INDEX IF NOT EXISTS writes_refused ON writes (at, seq) WHERE accepted = 0;

-- The chain over the history (store/chain.rs): one link per committed revision, binding
-- what the commit wrote (its grants and writes, a nonce) to every link before it, with
-- the history's counts up to it. Trimmed with grants and writes.
CREATE TABLE IF NOT EXISTS chain (
    revision    INTEGER PRIMARY KEY,
    link        TEXT NOT NULL,
    nonce       TEXT NOT NULL,
    generations INTEGER NOT NULL,
    completions INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS definitions (
    workflow_id TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    definition  TEXT NOT NULL,
    deployed_at INTEGER NOT NULL
);

CREATE TABLE IF NOT EXISTS instances (
    instance_id       TEXT PRIMARY KEY,
    workflow_id       TEXT NOT NULL,
    status            TEXT NOT NULL,
    compat            TEXT NOT NULL,
    instance_revision INTEGER NOT NULL,
    next_eligible_at  INTEGER,
    waiting_event     TEXT,
    principal         TEXT NOT NULL,
    start_key         TEXT,
    state             TEXT NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS instances_runnable ON instances (compat, next_eligible_at, instance_id)
    WHERE next_eligible_at IS NOT NULL;
CREATE INDEX IF NOT EXISTS instances_waiting ON instances (waiting_event, instance_id)
    WHERE waiting_event IS NOT NULL;
CREATE INDEX IF NOT EXISTS instances_status ON instances (status, instance_id);
CREATE UNIQUE INDEX IF NOT EXISTS instances_start_key ON instances (start_key);
-- Finished instances by age: what retention trims, oldest first.
CREATE INDEX IF NOT EXISTS instances_finished ON instances (updated_at, instance_id)
    WHERE status IN ('completed', 'failed', 'cancelled');

CREATE TABLE IF NOT EXISTS history (
    instance_id       TEXT NOT NULL,
    position          INTEGER NOT NULL,
    instance_revision INTEGER NOT NULL,
    kind              TEXT NOT NULL,
    at                INTEGER NOT NULL,
    step_id           TEXT,
    activation_id     TEXT,
    detail            TEXT NOT NULL,
    PRIMARY KEY (instance_id, position)
);

CREATE TABLE IF NOT EXISTS action_outcomes (
    invocation_id TEXT PRIMARY KEY,
    attempt       INTEGER NOT NULL,
    outcome       TEXT NOT NULL,
    detail        TEXT NOT NULL,
    at            INTEGER NOT NULL
);

-- The errors of a work item's attempts, newest kept (`ATTEMPT_ERRORS_KEPT` per item): one
-- row per failed or lapsed attempt, keyed by its claim generation, written in the
-- transaction that records the failure and removed with the item.
CREATE TABLE IF NOT EXISTS attempt_errors (
    work_id    TEXT NOT NULL,
    generation INTEGER NOT NULL,
    attempt    INTEGER NOT NULL,
    owner_id   TEXT NOT NULL,
    at         INTEGER NOT NULL,
    class      TEXT NOT NULL,
    code       TEXT NOT NULL,
    message    TEXT NOT NULL,
    PRIMARY KEY (work_id, generation)
) WITHOUT ROWID;
