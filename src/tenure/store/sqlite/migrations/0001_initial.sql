-- The task table, its event log, and the triggers that keep them in step.
-- Times are Unix epoch seconds (REAL); run_at is NULL for a task that may run at
-- once, so only delayed tasks are ever judged by a clock. Every write sets updated_at and bumps
-- record_ver; the triggers copy each status change into events in the same
-- transaction, so there is no transition without its event and no event without
-- its transition.

CREATE TABLE tasks (
    seq              INTEGER PRIMARY KEY,
    id               TEXT    NOT NULL UNIQUE,
    topic            TEXT    NOT NULL,
    sub_topic        TEXT    NOT NULL DEFAULT 'default',
    name             TEXT    NOT NULL,
    status           TEXT    NOT NULL
        CHECK (status IN ('pending', 'running', 'snoozed', 'done', 'failed', 'cancelled')),
    data             TEXT    NOT NULL,
    result           TEXT,
    error            TEXT,
    group_id         TEXT,
    description      TEXT,
    priority         INTEGER NOT NULL DEFAULT 0,
    attempts         INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts     INTEGER NOT NULL DEFAULT 1 CHECK (max_attempts >= 1),
    tags             TEXT    NOT NULL DEFAULT '[]',
    assignee         TEXT,
    timeout          REAL,
    run_at           REAL,
    created_at       REAL    NOT NULL,
    updated_at       REAL    NOT NULL,
    started_at       REAL,
    finished_at      REAL,
    duration         REAL,
    lease_owner      TEXT,
    lease_expires_at REAL,
    lease_token      INTEGER,
    lease_seconds    REAL,
    record_ver       INTEGER NOT NULL DEFAULT 1,
    unique_key       TEXT,
    CHECK ((status = 'running') = (lease_owner IS NOT NULL))
);

-- Reserve: pending rows only, in the order they are taken.
CREATE INDEX tasks_pending_by_topic ON tasks (topic, priority DESC, seq) WHERE status = 'pending';
CREATE INDEX tasks_pending ON tasks (priority DESC, seq) WHERE status = 'pending';
-- The supervisor's list of leased tasks.
CREATE INDEX tasks_leased ON tasks (seq) WHERE status IN ('running', 'snoozed');
CREATE INDEX tasks_by_group ON tasks (group_id, seq) WHERE group_id IS NOT NULL;
CREATE INDEX tasks_by_status ON tasks (status, seq);

-- AUTOINCREMENT: event ids are never reused, even after old events are pruned,
-- so a follower's cursor stays meaningful.
CREATE TABLE events (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id     TEXT    NOT NULL,
    topic       TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    from_status TEXT,
    to_status   TEXT    NOT NULL,
    attempt     INTEGER NOT NULL,
    owner       TEXT,
    at          REAL    NOT NULL
);

CREATE TRIGGER tasks_created AFTER INSERT ON tasks
BEGIN
    INSERT INTO events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    VALUES (NEW.id, NEW.topic, NEW.name, NULL, NEW.status, NEW.attempts, NEW.assignee,
            NEW.updated_at);
END;

CREATE TRIGGER tasks_transitioned AFTER UPDATE OF status ON tasks
WHEN NEW.status IS NOT OLD.status
BEGIN
    INSERT INTO events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    VALUES (NEW.id, NEW.topic, NEW.name, OLD.status, NEW.status, NEW.attempts, NEW.assignee,
            NEW.updated_at);
END;
