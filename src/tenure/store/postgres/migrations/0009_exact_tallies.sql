-- The tallies of 0008_task_tallies.sql made to agree with the event log, and
-- the oldest pending wait made exact and cheap.
--
-- A start refused by a unique lock is two transitions in one UPDATE (pending ->
-- running -> its rule's outcome, record_ver up by two, see 0003_unique_locks.sql):
-- the event log records both, and now so does task_transitions, also when the
-- outcome is pending again (a reschedule), where the status did not change. Both
-- triggers ask the one test, tenure_start_refused. And each entry is tallied in
-- the minute of its event's time (the task's updated_at, which is the
-- transaction's now() unless the writer gave its own "now"), so that counting
-- events and summing the tallies of the same minutes agree: stats_endings counts
-- the whole minutes of a window from the tallies and the part of its first
-- minute from the events.
--
-- TRUNCATE tasks fires no row or DELETE trigger: task_counts is emptied by one
-- of its own (task_transitions counts history and keeps it).

CREATE FUNCTION tenure_start_refused(
    from_status text, to_status text, from_ver bigint, to_ver bigint
) RETURNS boolean
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT from_status = 'pending' AND to_status <> 'running' AND to_ver = from_ver + 2
$$;

CREATE OR REPLACE FUNCTION tenure_tasks_updated() RETURNS trigger
LANGUAGE plpgsql AS $$
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
    IF FOUND THEN
        PERFORM pg_notify('tenure_events', '');
    END IF;
    PERFORM pg_notify('tenure_tasks', woken.topic)
    FROM (SELECT DISTINCT n.topic
          FROM after_rows AS n JOIN before_rows AS o USING (seq)
          WHERE n.status = 'pending' AND o.status IS DISTINCT FROM 'pending') AS woken;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION tenure_tasks_tallied_created() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_counts (topic, status, n)
    SELECT topic, status, count(*) FROM created GROUP BY topic, status;
    INSERT INTO task_transitions (minute, topic, status, n)
    SELECT date_trunc('minute', updated_at), topic, status, count(*)
    FROM created GROUP BY date_trunc('minute', updated_at), topic, status;
    RETURN NULL;
END;
$$;

-- task_counts moves each changed task from its old status to its new one; a
-- refused start that ends where it began changes no count.
CREATE OR REPLACE FUNCTION tenure_tasks_tallied_updated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_counts (topic, status, n)
    SELECT topic, status, sum(n)
    FROM (
        SELECT n.topic, n.status, 1 AS n
        FROM after_rows AS n JOIN before_rows AS o USING (seq)
        WHERE n.status IS DISTINCT FROM o.status
        UNION ALL
        SELECT o.topic, o.status, -1
        FROM after_rows AS n JOIN before_rows AS o USING (seq)
        WHERE n.status IS DISTINCT FROM o.status
    ) AS change
    GROUP BY topic, status;
    INSERT INTO task_transitions (minute, topic, status, n)
    SELECT date_trunc('minute', n.updated_at), n.topic, step.status, count(*)
    FROM after_rows AS n
    JOIN before_rows AS o USING (seq)
    CROSS JOIN LATERAL (SELECT tenure_start_refused(o.status, n.status, o.record_ver,
                                                    n.record_ver) AS refused) AS start
    CROSS JOIN LATERAL (VALUES
        ('running', start.refused),
        (n.status, start.refused OR o.status IS DISTINCT FROM n.status)
    ) AS step(status, happened)
    WHERE step.happened
    GROUP BY date_trunc('minute', n.updated_at), n.topic, step.status;
    RETURN NULL;
END;
$$;

-- The lock waits for a fold under way (it rewrites the rows), so the DELETE,
-- with a snapshot taken after it, leaves none of the fold's rows behind. (Not
-- TRUNCATE: a statement that truncates task_counts along with tasks, as tests
-- do, could not truncate it again from here.)
CREATE FUNCTION tenure_tasks_tallied_truncated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    LOCK TABLE task_counts IN EXCLUSIVE MODE;
    DELETE FROM task_counts;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_tallied_truncated AFTER TRUNCATE ON tasks
FOR EACH STATEMENT EXECUTE FUNCTION tenure_tasks_tallied_truncated();

-- The oldest pending wait (stats_oldest_pending): per topic, the pending tasks
-- in the order they became runnable, so the longest wait is the first entry at
-- or before now. Delayed tasks not due yet sort after every runnable one, so
-- they are never walked. Costs each insert of a pending task (and each return
-- to pending) one more index entry; writes that keep the status, run_at and
-- created_at (lease extensions) stay HOT.
CREATE INDEX tasks_pending_since ON tasks (topic, (coalesce(run_at, created_at)))
    WHERE status = 'pending';
