-- Workflows: gates between tasks (a group's callback, a chain's links); and
-- every attempt's error, kept on its task, with the error's type and message on
-- the event of the transition that wrote it. As in PostgreSQL's
-- 0018_flows_and_errors.sql, whose header says how a gate works. The
-- statements that write an attempt's error keep it in errors themselves
-- (queries.sql's errors_kept): SQLite's triggers cannot change the row being
-- written, and a change a trigger makes after it is missing from the
-- statement's RETURNING.
--
-- A new status, 'waiting', for the tasks behind a gate. SQLite cannot change
-- a table's CHECK constraint in place, so the tasks table is made again
-- (https://www.sqlite.org/lang_altertable.html#otheralter): a new table with
-- the new check and columns, every row copied as it is (seq, lease tokens and
-- record versions included), the old one dropped and the new one renamed, then
-- its indexes and triggers made again as they were. It all happens under the
-- migration's write lock, in its transaction: a reader sees the old table or
-- the new one. The copy reads and writes every task once: about a second per
-- 100,000 tasks on a small machine.
--
-- The triggers fire newest first: the gates' trigger is made before the one
-- that logs each transition, so a member's ending is logged before the
-- opening it causes.

CREATE TABLE tenure_gates (
    id         TEXT    PRIMARY KEY,
    mode       TEXT    NOT NULL CHECK (mode IN ('all_ended', 'all_done')),
    shape      TEXT    NOT NULL CHECK (shape IN ('outcomes', 'result', 'results')),
    remaining  INTEGER NOT NULL CHECK (remaining >= 0),
    created_at REAL    NOT NULL,
    opened_at  REAL,
    broken_at  REAL
);
-- Retention finds the gates that opened or broke long ago along this.
CREATE INDEX tenure_gates_settled ON tenure_gates (coalesce(opened_at, broken_at));

ALTER TABLE tenure_events ADD COLUMN error_type TEXT;
ALTER TABLE tenure_events ADD COLUMN error_message TEXT;

CREATE TABLE tenure_tasks_rebuilt (
    seq                INTEGER PRIMARY KEY,
    id                 TEXT    NOT NULL UNIQUE,
    topic              TEXT    NOT NULL,
    sub_topic          TEXT    NOT NULL DEFAULT 'default',
    name               TEXT    NOT NULL,
    status             TEXT    NOT NULL
        CHECK (status IN ('waiting', 'pending', 'running', 'snoozed', 'done', 'failed',
                          'cancelled')),
    data               TEXT    NOT NULL,
    result             TEXT,
    error              TEXT,
    group_id           TEXT,
    description        TEXT,
    priority           INTEGER NOT NULL DEFAULT 0,
    attempts           INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    max_attempts       INTEGER NOT NULL DEFAULT 1 CHECK (max_attempts >= 1),
    tags               TEXT    NOT NULL DEFAULT '[]',
    assignee           TEXT,
    timeout            REAL,
    run_at             REAL,
    created_at         REAL    NOT NULL,
    updated_at         REAL    NOT NULL,
    started_at         REAL,
    finished_at        REAL,
    duration           REAL,
    lease_owner        TEXT,
    lease_expires_at   REAL,
    lease_token        INTEGER,
    lease_seconds      REAL,
    record_ver         INTEGER NOT NULL DEFAULT 1,
    unique_key         TEXT,
    unique_lock        TEXT,
    unique_on_conflict TEXT,
    unique_ttl         REAL,
    unique_retry_in    REAL,
    progress           REAL,
    progress_note      TEXT,
    gate_in            TEXT,
    gate_out           TEXT,
    upstream           TEXT,
    errors             TEXT,
    CHECK ((status = 'running') = (lease_owner IS NOT NULL))
);

INSERT INTO tenure_tasks_rebuilt (
    seq, id, topic, sub_topic, name, status, data, result, error, group_id, description,
    priority, attempts, max_attempts, tags, assignee, timeout, run_at, created_at, updated_at,
    started_at, finished_at, duration, lease_owner, lease_expires_at, lease_token,
    lease_seconds, record_ver, unique_key, unique_lock, unique_on_conflict, unique_ttl,
    unique_retry_in, progress, progress_note
)
SELECT
    seq, id, topic, sub_topic, name, status, data, result, error, group_id, description,
    priority, attempts, max_attempts, tags, assignee, timeout, run_at, created_at, updated_at,
    started_at, finished_at, duration, lease_owner, lease_expires_at, lease_token,
    lease_seconds, record_ver, unique_key, unique_lock, unique_on_conflict, unique_ttl,
    unique_retry_in, progress, progress_note
FROM tenure_tasks;

DROP TABLE tenure_tasks;

-- In legacy mode the rename changes the table's name only, and reads no view or
-- trigger of yours that names tenure_tasks (with the table dropped a moment
-- ago, a non-legacy rename would refuse them); they read the new table as the
-- old one.
PRAGMA legacy_alter_table = ON;
ALTER TABLE tenure_tasks_rebuilt RENAME TO tenure_tasks;
PRAGMA legacy_alter_table = OFF;

-- Reserve: pending rows only, in the order they are taken.
CREATE INDEX tenure_tasks_pending_by_topic ON tenure_tasks (topic, priority DESC, seq)
    WHERE status = 'pending';
CREATE INDEX tenure_tasks_pending ON tenure_tasks (priority DESC, seq) WHERE status = 'pending';
-- The supervisor's list of leased tasks.
CREATE INDEX tenure_tasks_leased ON tenure_tasks (seq) WHERE status IN ('running', 'snoozed');
CREATE INDEX tenure_tasks_by_group ON tenure_tasks (group_id, seq) WHERE group_id IS NOT NULL;
CREATE INDEX tenure_tasks_by_status ON tenure_tasks (status, seq);
CREATE INDEX tenure_tasks_finished ON tenure_tasks (finished_at)
    WHERE status IN ('done', 'failed', 'cancelled');
-- Only the tasks of flows enter these: the rest of the table costs them nothing.
CREATE INDEX tenure_tasks_behind_gate ON tenure_tasks (gate_in) WHERE gate_in IS NOT NULL;
CREATE INDEX tenure_tasks_gate_members ON tenure_tasks (gate_out, seq)
    WHERE gate_out IS NOT NULL;

-- A member that ends counts down its gate (one sent back by a retry counts up
-- again); the gate opens at none remaining, or, in mode all_done, breaks at a
-- member failed or cancelled. Both happen in the transaction of the ending.
CREATE TRIGGER tenure_tasks_gated AFTER UPDATE OF status ON tenure_tasks
WHEN NEW.gate_out IS NOT NULL
 AND (NEW.status IN ('done', 'failed', 'cancelled'))
     IS NOT (OLD.status IN ('done', 'failed', 'cancelled'))
BEGIN
    UPDATE tenure_gates
    SET remaining = max(remaining
                        + CASE WHEN NEW.status IN ('done', 'failed', 'cancelled')
                               THEN -1 ELSE 1 END, 0),
        broken_at = CASE WHEN mode = 'all_done' AND NEW.status IN ('failed', 'cancelled')
                         THEN NEW.updated_at END
    WHERE id = NEW.gate_out AND opened_at IS NULL AND broken_at IS NULL;
    -- Broken: everything waiting behind it, and behind those, is cancelled.
    UPDATE tenure_gates SET broken_at = NEW.updated_at
    WHERE opened_at IS NULL AND broken_at IS NULL AND id IN (
        WITH RECURSIVE downstream (id) AS (
            SELECT id FROM tenure_gates WHERE id = NEW.gate_out AND broken_at IS NOT NULL
            UNION
            SELECT t.gate_out
            FROM tenure_tasks AS t JOIN downstream AS d ON t.gate_in = d.id
            WHERE t.status = 'waiting' AND t.gate_out IS NOT NULL
        )
        SELECT id FROM downstream
    );
    UPDATE tenure_tasks
    SET status = 'cancelled',
        error = json_object(
            'type', 'UpstreamFailed',
            'message', 'task ' || NEW.id || ', upstream of this one, ended ' || NEW.status,
            'traceback', ''),
        finished_at = NEW.updated_at,
        record_ver = record_ver + 1,
        updated_at = NEW.updated_at
    WHERE status = 'waiting' AND gate_in IN (  -- the gates the two statements above broke
        SELECT id FROM tenure_gates
        WHERE coalesce(opened_at, broken_at) = NEW.updated_at AND broken_at IS NOT NULL
    );
    -- None remaining: open it, and give the tasks behind it every member's outcome.
    UPDATE tenure_gates SET opened_at = NEW.updated_at
    WHERE id = NEW.gate_out AND remaining = 0 AND opened_at IS NULL AND broken_at IS NULL;
    UPDATE tenure_tasks
    SET status = 'pending',
        -- The members in their order: an aggregate over a subquery with ORDER BY
        -- reads it in that order (SQLite never flattens such a subquery).
        -- json() keeps each piece JSON, not text, through the subquery.
        upstream = json_object(
            'shape', (SELECT shape FROM tenure_gates WHERE id = NEW.gate_out),
            'outcomes', (
                SELECT json_group_array(json(outcome))
                FROM (SELECT json_object('id', m.id, 'status', m.status,
                                         'result', json(m.result),
                                         'error', json(m.error)) AS outcome
                      FROM tenure_tasks AS m WHERE m.gate_out = NEW.gate_out
                      ORDER BY m.seq))),
        -- Runnable from now (or its own later time): a queue's age counts from here.
        run_at = max(coalesce(run_at, NEW.updated_at), NEW.updated_at),
        record_ver = record_ver + 1,
        updated_at = NEW.updated_at
    WHERE gate_in = NEW.gate_out AND status = 'waiting'
      AND EXISTS (SELECT 1 FROM tenure_gates
                  WHERE id = NEW.gate_out AND opened_at IS NOT NULL);
END;

CREATE TRIGGER tenure_tasks_created AFTER INSERT ON tenure_tasks
BEGIN
    INSERT INTO tenure_events (id, task_id, topic, name, from_status, to_status, attempt,
                               owner, at)
    SELECT next.id,
           NEW.id, NEW.topic, NEW.name, NULL, NEW.status, NEW.attempts, NEW.assignee,
           NEW.updated_at
    FROM tenure_next_event_id AS next;
END;

CREATE TRIGGER tenure_tasks_transitioned AFTER UPDATE OF status ON tenure_tasks
WHEN NEW.status IS NOT OLD.status
BEGIN
    INSERT INTO tenure_events (id, task_id, topic, name, from_status, to_status, attempt,
                               owner, at, error_type, error_message)
    SELECT next.id,
           NEW.id, NEW.topic, NEW.name, OLD.status, NEW.status, NEW.attempts, NEW.assignee,
           NEW.updated_at,
           CASE WHEN NEW.error IS NOT OLD.error THEN json_extract(NEW.error, '$.type') END,
           CASE WHEN NEW.error IS NOT OLD.error THEN json_extract(NEW.error, '$.message') END
    FROM tenure_next_event_id AS next;
END;

-- Ends of a unique task's phase give up its lock (0003_unique_locks.sql).
CREATE TRIGGER tenure_tasks_unique_released AFTER UPDATE OF status ON tenure_tasks
WHEN NEW.unique_key IS NOT NULL AND NEW.status IS NOT OLD.status
BEGIN
    DELETE FROM tenure_unique_locks
    WHERE task_id = NEW.id
      AND (NEW.status IN ('done', 'failed', 'cancelled')
           OR (NEW.status = 'running' AND lock = 'until_executing')
           OR (NEW.status = 'pending' AND lock = 'while_executing'));
END;
