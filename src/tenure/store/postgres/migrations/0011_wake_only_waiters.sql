-- Wake-ups only while someone waits for them.
--
-- PostgreSQL queues a transaction's notifications at commit under one lock for
-- the whole database, held until the commit is flushed: every transaction that
-- notifies commits alone, and producers enqueueing at once can no longer share
-- a flush. So the triggers now notify only when an idle waiter is registered
-- in wake_wanted: a worker with free slots and nothing to run (topics: those it
-- takes, NULL for any), or a follower of the event log (events). Under a
-- backlog nobody waits, nobody notifies, and commits flush together.
--
-- No wake-up is lost to the race between a registration and a producer. A
-- notifying transaction holds the advisory lock 'tenure.wake' shared from its
-- check to its end; a registration takes it exclusively, so it waits for the
-- transactions that are checking or committing, commits, and only then does
-- the waiter look for work once more before it waits. Either a producer's check
-- comes after the registration (a snapshot taken after the lock sees it) and it
-- notifies, or its commit comes before the waiter's look, which finds its task.
-- A creation checks from a deferred trigger, at commit: the lock is held for
-- the commit only, even when the caller's own transaction enqueued early and
-- runs on for seconds. Registrations expire (until) unless renewed, so a
-- waiter that died stops costing producers anything within its time to live.
--
-- A transaction at REPEATABLE READ or SERIALIZABLE always notifies, as before:
-- its snapshot is its first, and would not show a registration made since.

CREATE TABLE wake_wanted (
    waiter text        PRIMARY KEY,
    topics text[],
    events boolean     NOT NULL,
    until  timestamptz NOT NULL
);

-- Whether this transaction checks for registrations before it notifies: then
-- the lock is held, shared, until it ends. Not at REPEATABLE READ or above.
CREATE FUNCTION tenure_wake_checked() RETURNS boolean
LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('transaction_isolation') IN ('repeatable read', 'serializable') THEN
        RETURN false;
    END IF;
    PERFORM pg_advisory_xact_lock_shared(hashtext('tenure.wake'));
    RETURN true;
END;
$$;

-- Notify 'tenure_tasks' for each topic of woken that a live registration
-- takes, and 'tenure_events' if appended and a follower is registered. (Simple
-- statements with at most one variable: their plans are cached; one query over
-- unnest(woken) was planned anew at every call, at three times the cost.)
CREATE FUNCTION tenure_wake(woken text[], appended boolean) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    topic text;
BEGIN
    IF NOT appended AND cardinality(woken) = 0 THEN
        RETURN;  -- a write that changed no status (a lease extension)
    END IF;
    IF NOT tenure_wake_checked() THEN
        IF appended THEN
            PERFORM pg_notify('tenure_events', '');
        END IF;
        FOREACH topic IN ARRAY woken LOOP
            PERFORM pg_notify('tenure_tasks', topic);
        END LOOP;
        RETURN;
    END IF;
    -- Statements of their own: their snapshots are taken after the lock is held.
    IF appended THEN
        IF EXISTS (SELECT 1 FROM wake_wanted WHERE events AND until > statement_timestamp()) THEN
            PERFORM pg_notify('tenure_events', '');
        END IF;
    END IF;
    FOREACH topic IN ARRAY woken LOOP
        IF EXISTS (SELECT 1 FROM wake_wanted
                   WHERE until > statement_timestamp()
                     AND (topics IS NULL OR topic = ANY(topics))) THEN
            PERFORM pg_notify('tenure_tasks', topic);
        END IF;
    END LOOP;
END;
$$;

-- The creation's rows and counts are written as before; its wake-ups move to
-- tenure_created_wake, at commit.
CREATE OR REPLACE FUNCTION tenure_tasks_created() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_counts (topic, status, n)
    SELECT topic, status, count(*) FROM created GROUP BY topic, status;
    INSERT INTO task_transitions (minute, topic, status, n)
    SELECT date_trunc('minute', updated_at), topic, status, count(*)
    FROM created GROUP BY date_trunc('minute', updated_at), topic, status;
    INSERT INTO events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    SELECT id, topic, name, NULL, status, attempts, assignee, updated_at
    FROM created
    ORDER BY seq;
    RETURN NULL;
END;
$$;

-- Once per created pending row (every creation of tenure's is), at commit: a
-- constraint trigger is the only kind that waits for it, and it is per row. The
-- first row of a transaction takes the lock, notifies followers if one is
-- registered, and with no live registration at all sets tenure.woken to '-' so
-- that every other row returns at once ('*': the transaction notifies every
-- row, unchecked). Each row's topic is checked, but for a run of rows of the
-- topic last checked. One query reads what is registered.
CREATE FUNCTION tenure_created_wake() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    decided text := current_setting('tenure.woken', true);
    first boolean := decided IS NULL OR decided = '';
    live boolean;
    for_events boolean;
    for_topic boolean;
BEGIN
    IF decided = '-' OR decided = '+' || NEW.topic THEN
        RETURN NULL;
    END IF;
    IF decided = '*' OR (first AND NOT tenure_wake_checked()) THEN
        IF first THEN
            PERFORM pg_notify('tenure_events', '');
            PERFORM set_config('tenure.woken', '*', true);
        END IF;
        PERFORM pg_notify('tenure_tasks', NEW.topic);
        RETURN NULL;
    END IF;
    -- A statement of its own: its snapshot is taken after the lock is held.
    SELECT count(*) > 0, coalesce(bool_or(events), false),
           coalesce(bool_or(topics IS NULL OR NEW.topic = ANY(topics)), false)
    INTO live, for_events, for_topic
    FROM wake_wanted WHERE until > statement_timestamp();
    IF first AND NOT live THEN
        PERFORM set_config('tenure.woken', '-', true);
        RETURN NULL;
    END IF;
    IF first AND for_events THEN
        PERFORM pg_notify('tenure_events', '');
    END IF;
    IF for_topic THEN
        PERFORM pg_notify('tenure_tasks', NEW.topic);
    END IF;
    PERFORM set_config('tenure.woken', '+' || NEW.topic, true);
    RETURN NULL;
END;
$$;

CREATE CONSTRAINT TRIGGER tasks_created_wake AFTER INSERT ON tasks
DEFERRABLE INITIALLY DEFERRED
FOR EACH ROW WHEN (NEW.status = 'pending') EXECUTE FUNCTION tenure_created_wake();

-- Updates run in the store's own short transactions: their statement trigger
-- checks at once.
CREATE OR REPLACE FUNCTION tenure_tasks_updated() RETURNS trigger
LANGUAGE plpgsql AS $$
DECLARE
    appended boolean;
BEGIN
    INSERT INTO events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    SELECT n.id, n.topic, n.name, step.from_status, step.to_status, step.attempt,
           n.assignee, n.updated_at
    FROM after_rows AS n
    JOIN before_rows AS o USING (seq)
    CROSS JOIN LATERAL (SELECT tenure_start_refused(o.status, n.status, o.record_ver,
                                                    n.record_ver) AS refused) AS start
    CROSS JOIN LATERAL (VALUES
        (1, 'pending', 'running', o.attempts + 1, start.refused),
        (2, CASE WHEN start.refused THEN 'running' ELSE o.status END, n.status, n.attempts,
         start.refused OR o.status IS DISTINCT FROM n.status)
    ) AS step(ord, from_status, to_status, attempt, happened)
    WHERE step.happened
    ORDER BY n.seq, step.ord;
    appended := FOUND;
    PERFORM tenure_wake(
        ARRAY(SELECT DISTINCT n.topic
              FROM after_rows AS n JOIN before_rows AS o USING (seq)
              WHERE n.status = 'pending' AND o.status IS DISTINCT FROM 'pending'),
        appended);
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION tenure_report_saved() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    VALUES ('', '', NEW.key, NULL, 'report', NEW.total, NEW.owner, NEW.run_at);
    PERFORM tenure_wake('{}', true);
    RETURN NULL;
END;
$$;
