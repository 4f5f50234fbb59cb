-- Unique tasks: each task's rule, and the locks they hold. Same version number
-- and the same rules as the SQLite store's 0003_unique_locks.sql.
--
-- A lock is taken in the transaction that creates its task (until_executing,
-- until_executed: the store's insert_unique_locks) or that starts it
-- (while_executing, and the re-check of until_executed: the trigger below, so
-- a reservation stays one statement). The same trigger gives a lock up in the
-- transaction of the transition that ends its phase, so a task and its lock
-- never disagree after a crash. expires_at is the safety net of a lock left
-- behind anyway: an expired lock is free to take.

ALTER TABLE tasks
    ADD COLUMN unique_lock        text,
    ADD COLUMN unique_on_conflict text,
    ADD COLUMN unique_ttl         double precision,
    ADD COLUMN unique_retry_in    double precision;

CREATE TABLE unique_locks (
    key        text        PRIMARY KEY,
    task_id    text        NOT NULL,
    lock       text        NOT NULL
        CHECK (lock IN ('until_executing', 'while_executing', 'until_executed')),
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL
);
CREATE INDEX unique_locks_by_task ON unique_locks (task_id);
CREATE INDEX unique_locks_by_expiry ON unique_locks (expires_at);

-- At a start (pending -> running) the task takes its lock, or is refused by its
-- rule: reject cancels it; reschedule puts it back to pending later without
-- spending the attempt; raise fails the attempt (retried later while attempts
-- remain). Ends of a phase give the holder's own lock up: the start ends
-- until_executing, going back to pending ends while_executing (taken again at
-- the next start), an end state ends all.
CREATE FUNCTION tenure_unique_transition() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    at     timestamptz := NEW.updated_at;
    holder text;
BEGIN
    IF NEW.status IN ('done', 'failed', 'cancelled') THEN
        DELETE FROM unique_locks WHERE task_id = NEW.id;
    ELSIF NEW.status = 'pending' THEN
        DELETE FROM unique_locks WHERE task_id = NEW.id AND lock = 'while_executing';
    ELSIF NEW.status = 'running' THEN
        DELETE FROM unique_locks WHERE task_id = NEW.id AND lock = 'until_executing';
        IF NEW.unique_lock IN ('while_executing', 'until_executed') THEN
            INSERT INTO unique_locks AS held (key, task_id, lock, expires_at, created_at)
            VALUES (NEW.unique_key, NEW.id, NEW.unique_lock,
                    at + make_interval(secs => NEW.unique_ttl), at)
            ON CONFLICT (key) DO UPDATE SET
                task_id = EXCLUDED.task_id,
                lock = EXCLUDED.lock,
                expires_at = CASE WHEN held.task_id = EXCLUDED.task_id AND held.expires_at > at
                                  THEN held.expires_at ELSE EXCLUDED.expires_at END,
                created_at = CASE WHEN held.task_id = EXCLUDED.task_id
                                  THEN held.created_at ELSE EXCLUDED.created_at END
            WHERE held.expires_at <= at OR held.task_id = EXCLUDED.task_id;
            IF NOT FOUND THEN
                SELECT task_id INTO holder FROM unique_locks WHERE key = NEW.unique_key;
                NEW := tenure_unique_refused(NEW, holder);
            END IF;
        END IF;
    END IF;
    RETURN NEW;
END;
$$;

-- The task as its rule leaves it when its lock is held by ``holder``.
CREATE FUNCTION tenure_unique_refused(t tasks, holder text) RETURNS tasks
LANGUAGE plpgsql AS $$
DECLARE
    at        timestamptz := t.updated_at;
    retry_at  timestamptz := CASE WHEN t.unique_retry_in > 0
                                  THEN at + make_interval(secs => t.unique_retry_in) END;
    attempts_left boolean := t.attempts < t.max_attempts;
BEGIN
    IF t.unique_on_conflict = 'reject' THEN
        t.status := 'cancelled';
        t.finished_at := at;
    ELSIF t.unique_on_conflict = 'reschedule' THEN
        t.status := 'pending';
        t.attempts := t.attempts - 1;
        t.run_at := retry_at;
    ELSIF attempts_left THEN
        t.status := 'pending';
        t.priority := t.priority - 1;
        t.run_at := retry_at;
    ELSE
        t.status := 'failed';
        t.finished_at := at;
    END IF;
    IF t.unique_on_conflict <> 'reschedule' THEN
        t.error := json_build_object(
            'type', 'UniqueConflict',
            'message', 'its unique lock is held by '
                       || COALESCE('task ' || holder, 'another task'),
            'traceback', '');
    END IF;
    t.lease_owner := NULL;
    t.lease_expires_at := NULL;
    t.lease_token := NULL;
    t.lease_seconds := NULL;
    -- Two writes in one: the start, then the refusal (as the SQLite store
    -- records them); the event trigger logs both transitions.
    t.record_ver := t.record_ver + 1;
    RETURN t;
END;
$$;

-- The WHEN clause is checked without calling the function: tasks without a
-- unique rule, and writes that keep the status, pay nothing.
CREATE TRIGGER tasks_unique BEFORE UPDATE OF status ON tasks
FOR EACH ROW WHEN (NEW.unique_key IS NOT NULL AND OLD.status IS DISTINCT FROM NEW.status)
EXECUTE FUNCTION tenure_unique_transition();

-- A start refused by a unique lock is two transitions in one statement
-- (pending -> running -> its rule's outcome, record_ver up by two): both are
-- logged, as every store logs them, also when the outcome is pending again
-- (a reschedule), which the trigger's WHEN clause must therefore let through.
CREATE OR REPLACE FUNCTION tenure_task_transitioned() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    from_status text := OLD.status;
BEGIN
    IF OLD.status = 'pending' AND NEW.status <> 'running'
       AND NEW.record_ver = OLD.record_ver + 2 THEN
        INSERT INTO events (task_id, topic, name, from_status, to_status, attempt, owner, at)
        VALUES (NEW.id, NEW.topic, NEW.name, 'pending', 'running', OLD.attempts + 1,
                NEW.assignee, NEW.updated_at);
        from_status := 'running';
    END IF;
    INSERT INTO events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    VALUES (NEW.id, NEW.topic, NEW.name, from_status, NEW.status, NEW.attempts, NEW.assignee,
            NEW.updated_at);
    IF NEW.status = 'pending' THEN
        PERFORM pg_notify('tenure_tasks', NEW.topic);
    END IF;
    RETURN NULL;
END;
$$;

DROP TRIGGER tasks_transitioned ON tasks;
CREATE TRIGGER tasks_transitioned AFTER UPDATE OF status ON tasks
FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status
                   OR NEW.record_ver = OLD.record_ver + 2)
EXECUTE FUNCTION tenure_task_transitioned();
