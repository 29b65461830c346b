-- leasehold PostgreSQL schema, version 4: the SQLite schema's tables, columns and indexes
-- with PostgreSQL types, but for two of SQLite's: it keeps the history's revision indexes
-- (its `seq` comes from a sequence, so ranges of revisions are read through them) and the
-- state and owner indexes over every item. Every statement is idempotent; the provider
-- runs the whole file in
-- one transaction under an advisory lock, so any number of authorities may start at once
-- (`CREATE … IF NOT EXISTS` alone races in PostgreSQL). Instants are epoch milliseconds
-- (BIGINT); enums are their `as_str()` text; nested structs are JSON text. Every text column
-- is `COLLATE "C"`: keys order by bytes, as in SQLite and the memory provider, whatever
-- the database's locale, so keyset pages and prefix ranges agree across providers.
--
-- Change this file and `sqlite/schema.sql` together. They stay two files because what
-- differs is on nearly every line (types, collations, identity columns, booleans, the
-- idempotent insert): a template with substitutions would hide the SQL each database
-- actually runs. The column names and order the code relies on are written once, in
-- `store/sql/encode.rs`. The intake, which only PostgreSQL has, is `intake.sql`, run right
-- after this file.

-- schema_version, revision (advanced once per committed write), journal_seq (high-water).
CREATE TABLE IF NOT EXISTS meta (
    key   TEXT COLLATE "C" PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO meta (key, value) VALUES ('schema_version', 11) ON CONFLICT (key) DO NOTHING;
INSERT INTO meta (key, value) VALUES ('revision', 0) ON CONFLICT (key) DO NOTHING;
INSERT INTO meta (key, value) VALUES ('journal_seq', 0) ON CONFLICT (key) DO NOTHING;

-- Incremental counts; `counters(prefix)` is a range over the primary key.
CREATE TABLE IF NOT EXISTS counters (
    name  TEXT COLLATE "C" PRIMARY KEY,
    value BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS leases (
    resource_id TEXT COLLATE "C" PRIMARY KEY,
    owner_id    TEXT COLLATE "C" NOT NULL,
    token       TEXT COLLATE "C" NOT NULL,
    generation  BIGINT NOT NULL,
    acquired_at BIGINT NOT NULL,
    expires_at  BIGINT NOT NULL,
    released_at BIGINT,
    checkpoint  TEXT COLLATE "C" -- JSON Checkpoint
);
CREATE INDEX IF NOT EXISTS leases_owner ON leases (owner_id, expires_at);

CREATE TABLE IF NOT EXISTS work (
    id                 TEXT COLLATE "C" PRIMARY KEY,
    kind               TEXT COLLATE "C" NOT NULL,
    state              TEXT COLLATE "C" NOT NULL,
    handler            TEXT COLLATE "C" NOT NULL,
    payload            TEXT COLLATE "C" NOT NULL,
    logical_effect_id  TEXT COLLATE "C" NOT NULL,
    idempotency_key    TEXT COLLATE "C" NOT NULL,
    compat             TEXT COLLATE "C" NOT NULL,
    owner_id           TEXT COLLATE "C",
    token              TEXT COLLATE "C",
    generation         BIGINT NOT NULL,
    claimed_at         BIGINT,
    lease_expires_at   BIGINT,
    attempt_number     BIGINT NOT NULL,
    uncertain_attempts BIGINT NOT NULL,
    max_attempts       BIGINT NOT NULL,
    last_attempt_at    BIGINT,
    next_eligible_at   BIGINT NOT NULL,
    last_failure       TEXT COLLATE "C", -- JSON Failure
    result             TEXT COLLATE "C",
    created_at         BIGINT NOT NULL,
    updated_at         BIGINT NOT NULL,
    -- When the item next becomes claimable: next_eligible_at for pending / retry,
    -- lease_expires_at for claimed, NULL for terminal. The claim index.
    due_at             BIGINT,
    checkpoint         TEXT COLLATE "C", -- resume state saved under the claim (added by an upgrade)
    priority           BIGINT NOT NULL DEFAULT 0 -- claim order in its lane, higher first; last, as the upgrade adds it
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
CREATE INDEX IF NOT EXISTS work_state ON work (state, id);
CREATE INDEX IF NOT EXISTS work_kind ON work (kind, id);
CREATE INDEX IF NOT EXISTS work_owner ON work (owner_id, id);
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
    source        TEXT COLLATE "C" NOT NULL,
    external_id   TEXT COLLATE "C" NOT NULL,
    fingerprint   TEXT COLLATE "C" NOT NULL,
    seq           BIGINT NOT NULL,
    first_seen_at BIGINT NOT NULL,
    PRIMARY KEY (source, external_id)
);
-- Dedup records by age: the dedup window trims the oldest first.
CREATE INDEX IF NOT EXISTS dedup_age ON dedup (first_seen_at, source);

-- seq comes from meta.journal_seq: never reused, even after trimming.
CREATE TABLE IF NOT EXISTS journal (
    seq         BIGINT PRIMARY KEY,
    event_type  TEXT COLLATE "C" NOT NULL,
    source      TEXT COLLATE "C",
    external_id TEXT COLLATE "C",
    payload     TEXT COLLATE "C" NOT NULL,
    fingerprint TEXT COLLATE "C" NOT NULL,
    at          BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS journal_type ON journal (event_type, seq);

-- ingestions and audit ids are max + 1, assigned under the write lock (as SQLite's rowid):
-- a copy keeps the ids it imports and later rows still come after them.
CREATE TABLE IF NOT EXISTS ingestions (
    id          BIGINT PRIMARY KEY,
    at          BIGINT NOT NULL,
    event_type  TEXT COLLATE "C" NOT NULL,
    source      TEXT COLLATE "C",
    external_id TEXT COLLATE "C",
    outcome     TEXT COLLATE "C" NOT NULL,
    seq         BIGINT
);

CREATE TABLE IF NOT EXISTS subscriptions (
    subscription_id TEXT COLLATE "C" PRIMARY KEY,
    event_type      TEXT COLLATE "C" NOT NULL,
    sequence        BIGINT NOT NULL,
    generation      BIGINT NOT NULL,
    updated_at      BIGINT NOT NULL,
    updated_by      TEXT COLLATE "C"
);

CREATE TABLE IF NOT EXISTS schedules (
    schedule_id TEXT COLLATE "C" PRIMARY KEY,
    trigger     TEXT COLLATE "C" NOT NULL, -- JSON Trigger
    catch_up    TEXT COLLATE "C" NOT NULL, -- JSON CatchUp
    handler     TEXT COLLATE "C" NOT NULL,
    payload     TEXT COLLATE "C" NOT NULL,
    compat      TEXT COLLATE "C" NOT NULL,
    last_due    BIGINT,
    next_due    BIGINT NOT NULL,
    created_at  BIGINT NOT NULL,
    paused_at   BIGINT -- set while paused: nothing fires
);
CREATE INDEX IF NOT EXISTS schedules_due ON schedules (next_due, schedule_id);
-- The unpaused ones by when they are due: what every poll asks (the earliest, the due), so
-- paused schedules, however many and however overdue, are never walked past.
CREATE INDEX IF NOT EXISTS schedules_due_unpaused ON schedules (next_due, schedule_id)
    WHERE paused_at IS NULL;

-- Handlers an operator paused fleet-wide: every claim reads this (small) table and claims
-- none of their work. The name need not be a handler anyone runs yet.
CREATE TABLE IF NOT EXISTS handler_pauses (
    handler   TEXT COLLATE "C" PRIMARY KEY,
    paused_at BIGINT NOT NULL,
    paused_by TEXT COLLATE "C" NOT NULL,
    reason    TEXT COLLATE "C" NOT NULL
);
-- The fleet's claims of a rate-limited handler in its current fixed window, written by the
-- claiming transaction.
CREATE TABLE IF NOT EXISTS handler_rates (
    handler      TEXT COLLATE "C" PRIMARY KEY,
    window_start BIGINT NOT NULL,
    claims       BIGINT NOT NULL
);

-- `published`: JSON of what the authority publishes about itself (outcomes held in
-- recovery, a bounded list and a count; a write stall), written with its heartbeat.
CREATE TABLE IF NOT EXISTS authorities (
    instance_id  TEXT COLLATE "C" PRIMARY KEY,
    compat       TEXT COLLATE "C" NOT NULL,
    build        TEXT COLLATE "C" NOT NULL,
    config       TEXT COLLATE "C" NOT NULL,
    started_at   BIGINT NOT NULL,
    heartbeat_at BIGINT NOT NULL,
    stopped_at   BIGINT,
    host         TEXT COLLATE "C" NOT NULL,
    pid          BIGINT NOT NULL,
    published    TEXT COLLATE "C" NOT NULL DEFAULT '{}'
);

CREATE TABLE IF NOT EXISTS idempotency (
    key    TEXT COLLATE "C" PRIMARY KEY,
    answer TEXT COLLATE "C" NOT NULL,
    at     BIGINT NOT NULL
);
-- Keyed answers by age, for retention.
CREATE INDEX IF NOT EXISTS idempotency_age ON idempotency (at);

CREATE TABLE IF NOT EXISTS audit (
    id      BIGINT PRIMARY KEY,
    at      BIGINT NOT NULL,
    actor   TEXT COLLATE "C" NOT NULL,
    action  TEXT COLLATE "C" NOT NULL,
    target  TEXT COLLATE "C" NOT NULL,
    outcome TEXT COLLATE "C" NOT NULL
);

-- The checker's history; seq orders rows of one revision by insertion (writers are
-- serialised, so identity values are assigned in commit order).
CREATE TABLE IF NOT EXISTS grants (
    seq          BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    revision     BIGINT NOT NULL,
    resource_id  TEXT COLLATE "C" NOT NULL,
    generation   BIGINT NOT NULL,
    owner_id     TEXT COLLATE "C" NOT NULL,
    how          TEXT COLLATE "C" NOT NULL,
    owner_compat TEXT COLLATE "C",
    item_compat  TEXT COLLATE "C",
    at           BIGINT NOT NULL,
    -- Set only on a failover: the holder it took over (upgrade_1.sql adds these).
    from_owner      TEXT COLLATE "C",
    from_generation BIGINT,
    lapsed_ms       BIGINT
);
CREATE INDEX IF NOT EXISTS grants_revision ON grants (revision);
CREATE INDEX IF NOT EXISTS grants_resource ON grants (resource_id, revision);
CREATE INDEX IF NOT EXISTS grants_failovers ON grants (at, seq) WHERE from_owner IS NOT NULL;

CREATE TABLE IF NOT EXISTS writes (
    seq         BIGINT GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    revision    BIGINT NOT NULL,
    resource_id TEXT COLLATE "C" NOT NULL,
    generation  BIGINT NOT NULL,
    owner_id    TEXT COLLATE "C" NOT NULL,
    verb        TEXT COLLATE "C" NOT NULL,
    accepted    BOOLEAN NOT NULL,
    refusal     TEXT COLLATE "C",
    detail      TEXT COLLATE "C" NOT NULL,
    at          BIGINT NOT NULL,
    -- Who held the resource then; NULL generation: not recorded (an older store's row).
    holder_id         TEXT COLLATE "C",
    holder_generation BIGINT
);
CREATE INDEX IF NOT EXISTS writes_revision ON writes (revision);
CREATE INDEX IF NOT EXISTS writes_resource ON writes (resource_id, revision);
CREATE INDEX IF NOT EXISTS writes_refused ON writes (at, seq) WHERE NOT accepted;

-- The chain over the history (store/chain.rs): one link per committed revision, binding
-- what the commit wrote (its grants and writes, a nonce) to every link before it, with
-- the history's counts up to it. Trimmed with grants and writes.
CREATE TABLE IF NOT EXISTS chain (
    revision    BIGINT PRIMARY KEY,
    link        TEXT COLLATE "C" NOT NULL,
    nonce       TEXT COLLATE "C" NOT NULL,
    generations BIGINT NOT NULL,
    completions BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS definitions (
    workflow_id TEXT COLLATE "C" PRIMARY KEY,
    fingerprint TEXT COLLATE "C" NOT NULL,
    definition  TEXT COLLATE "C" NOT NULL,
    deployed_at BIGINT NOT NULL
);

CREATE TABLE IF NOT EXISTS instances (
    instance_id       TEXT COLLATE "C" PRIMARY KEY,
    workflow_id       TEXT COLLATE "C" NOT NULL,
    status            TEXT COLLATE "C" NOT NULL,
    compat            TEXT COLLATE "C" NOT NULL,
    instance_revision BIGINT NOT NULL,
    next_eligible_at  BIGINT,
    waiting_event     TEXT COLLATE "C",
    principal         TEXT COLLATE "C" NOT NULL,
    start_key         TEXT COLLATE "C",
    state             TEXT COLLATE "C" NOT NULL,
    created_at        BIGINT NOT NULL,
    updated_at        BIGINT NOT NULL
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
    instance_id       TEXT COLLATE "C" NOT NULL,
    position          BIGINT NOT NULL,
    instance_revision BIGINT NOT NULL,
    kind              TEXT COLLATE "C" NOT NULL,
    at                BIGINT NOT NULL,
    step_id           TEXT COLLATE "C",
    activation_id     TEXT COLLATE "C",
    detail            TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (instance_id, position)
);

CREATE TABLE IF NOT EXISTS action_outcomes (
    invocation_id TEXT COLLATE "C" PRIMARY KEY,
    attempt       BIGINT NOT NULL,
    outcome       TEXT COLLATE "C" NOT NULL,
    detail        TEXT COLLATE "C" NOT NULL,
    at            BIGINT NOT NULL
);

-- The errors of a work item's attempts, newest kept (`ATTEMPT_ERRORS_KEPT` per item): one
-- row per failed or lapsed attempt, keyed by its claim generation, written in the
-- transaction that records the failure and removed with the item.
CREATE TABLE IF NOT EXISTS attempt_errors (
    work_id    TEXT COLLATE "C" NOT NULL,
    generation BIGINT NOT NULL,
    attempt    BIGINT NOT NULL,
    owner_id   TEXT COLLATE "C" NOT NULL,
    at         BIGINT NOT NULL,
    class      TEXT COLLATE "C" NOT NULL,
    code       TEXT COLLATE "C" NOT NULL,
    message    TEXT COLLATE "C" NOT NULL,
    PRIMARY KEY (work_id, generation)
);
