-- The event log and the wake-ups, written once per statement instead of once per
-- row: a batch (a bulk enqueue, a reservation of many, a completion of many)
-- appends all its events with one INSERT ... SELECT from the statement's
-- transition tables, and notifies each woken topic once. Same events, same
-- order (by seq), in the same transaction as the change; the per-row triggers
-- cost about half the time of a 1,000-task insert.

DROP TRIGGER tasks_created ON tasks;
DROP TRIGGER tasks_transitioned ON tasks;
DROP FUNCTION tenure_task_created();
DROP FUNCTION tenure_task_transitioned();

CREATE FUNCTION tenure_tasks_created() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    SELECT id, topic, name, NULL, status, attempts, assignee, updated_at
    FROM created
    ORDER BY seq;
    PERFORM pg_notify('tenure_tasks', woken.topic)
    FROM (SELECT DISTINCT topic FROM created WHERE status = 'pending') AS woken;
    RETURN NULL;
END;
$$;

-- A row's transition is a status change, or a start refused by a unique lock
-- (record_ver up by two: pending -> running -> the rule's outcome, which may be
-- pending again), which is two transitions. Updates that keep the status (lease
-- extensions) add nothing.
CREATE FUNCTION tenure_tasks_updated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    SELECT n.id, n.topic, n.name, step.from_status, step.to_status, step.attempt,
           n.assignee, n.updated_at
    FROM after_rows AS n
    JOIN before_rows AS o USING (seq)
    CROSS JOIN LATERAL (SELECT o.status = 'pending' AND n.status <> 'running'
                               AND n.record_ver = o.record_ver + 2 AS refused) AS start
    CROSS JOIN LATERAL (VALUES
        (1, 'pending', 'running', o.attempts + 1, start.refused),
        (2, CASE WHEN start.refused THEN 'running' ELSE o.status END, n.status, n.attempts,
         start.refused OR o.status IS DISTINCT FROM n.status)
    ) AS step(ord, from_status, to_status, attempt, happened)
    WHERE step.happened
    ORDER BY n.seq, step.ord;
    PERFORM pg_notify('tenure_tasks', woken.topic)
    FROM (SELECT DISTINCT n.topic
          FROM after_rows AS n JOIN before_rows AS o USING (seq)
          WHERE n.status = 'pending' AND o.status IS DISTINCT FROM 'pending') AS woken;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_created AFTER INSERT ON tasks
REFERENCING NEW TABLE AS created
FOR EACH STATEMENT EXECUTE FUNCTION tenure_tasks_created();

CREATE TRIGGER tasks_transitioned AFTER UPDATE ON tasks
REFERENCING OLD TABLE AS before_rows NEW TABLE AS after_rows
FOR EACH STATEMENT EXECUTE FUNCTION tenure_tasks_updated();
