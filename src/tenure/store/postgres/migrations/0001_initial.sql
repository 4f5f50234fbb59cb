-- The task table, its event log, and the triggers that keep them in step.
-- Same version number and the same rules as the SQLite store's 0001_initial.sql:
-- every write sets updated_at and bumps record_ver; the triggers copy each status
-- change into events in the same transaction, so there is no transition without
-- its event and no event without its transition.

-- fillfactor 80 leaves room on each page, so the frequent writes that touch no
-- indexed column (lease extensions) can be HOT updates.
CREATE TABLE tasks (
    seq              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    id               text             NOT NULL,
    topic            text             NOT NULL,
    sub_topic        text             NOT NULL DEFAULT 'default',
    name             text             NOT NULL,
    status           text             NOT NULL,
    data             json             NOT NULL,
    result           json,
    error            json,
    group_id         text,
    description      text,
    priority         bigint           NOT NULL DEFAULT 0,
    attempts         bigint           NOT NULL DEFAULT 0,
    max_attempts     bigint           NOT NULL DEFAULT 1,
    tags             text[]           NOT NULL DEFAULT '{}',
    assignee         text,
    timeout          double precision,
    -- NULL: runnable at once (no delay was asked for).
    run_at           timestamptz,
    created_at       timestamptz      NOT NULL,
    updated_at       timestamptz      NOT NULL,
    started_at       timestamptz,
    finished_at      timestamptz,
    duration         double precision,
    lease_owner      text,
    lease_expires_at timestamptz,
    lease_token      bigint,
    lease_seconds    double precision,
    record_ver       bigint           NOT NULL DEFAULT 1,
    unique_key       text,
    -- The backend recognises a duplicate id by this constraint's name.
    CONSTRAINT tasks_id_key UNIQUE (id),
    CONSTRAINT tasks_status_known
        CHECK (status IN ('pending', 'running', 'snoozed', 'done', 'failed', 'cancelled')),
    CONSTRAINT tasks_attempts_counted CHECK (attempts >= 0),
    CONSTRAINT tasks_max_attempts_positive CHECK (max_attempts >= 1),
    CONSTRAINT tasks_lease_iff_running CHECK ((status = 'running') = (lease_owner IS NOT NULL))
) WITH (fillfactor = 80);

-- Reserve: pending rows only, in the order they are taken. Done rows never enter
-- these indexes, so a table full of history costs reserve nothing.
CREATE INDEX tasks_pending_by_topic ON tasks (topic, priority DESC, seq) WHERE status = 'pending';
CREATE INDEX tasks_pending ON tasks (priority DESC, seq) WHERE status = 'pending';
-- The supervisor's list of leased tasks.
CREATE INDEX tasks_leased ON tasks (seq) WHERE status IN ('running', 'snoozed');
CREATE INDEX tasks_by_group ON tasks (group_id, seq) WHERE group_id IS NOT NULL;
CREATE INDEX tasks_by_status ON tasks (status, seq);

-- Identity values are never reused, even after old events are pruned, so a
-- follower's cursor stays meaningful.
CREATE TABLE events (
    id          bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id     text        NOT NULL,
    topic       text        NOT NULL,
    name        text        NOT NULL,
    from_status text,
    to_status   text        NOT NULL,
    attempt     bigint      NOT NULL,
    owner       text,
    at          timestamptz NOT NULL
);

-- A task that becomes pending wakes the workers listening on "tenure_tasks"; the
-- payload is the topic only (NOTIFY payloads must stay under 8000 bytes, topics
-- are at most 200 characters). NOTIFY is transactional: it is delivered when,
-- and only if, the write commits, and equal payloads of one transaction are
-- folded into one.
CREATE FUNCTION tenure_task_created() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    VALUES (NEW.id, NEW.topic, NEW.name, NULL, NEW.status, NEW.attempts, NEW.assignee,
            NEW.updated_at);
    IF NEW.status = 'pending' THEN
        PERFORM pg_notify('tenure_tasks', NEW.topic);
    END IF;
    RETURN NULL;
END;
$$;

CREATE FUNCTION tenure_task_transitioned() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    VALUES (NEW.id, NEW.topic, NEW.name, OLD.status, NEW.status, NEW.attempts, NEW.assignee,
            NEW.updated_at);
    IF NEW.status = 'pending' THEN
        PERFORM pg_notify('tenure_tasks', NEW.topic);
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_created AFTER INSERT ON tasks
FOR EACH ROW EXECUTE FUNCTION tenure_task_created();

-- The WHEN clause is checked without calling the function, so writes that keep
-- the status (lease extensions) pay nothing for the trigger.
CREATE TRIGGER tasks_transitioned AFTER UPDATE OF status ON tasks
FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION tenure_task_transitioned();
