-- Following the event log, and the observer's reports.
--
-- Every statement that appends events also notifies "tenure_events" (empty
-- payload: equal notifications of one transaction fold into one), so a follower
-- wakes when they commit instead of polling. Only statements that appended
-- something notify: lease extensions change no status and stay silent.
--
-- event_log remembers how far retention has deleted, as the (xid, id) of the
-- newest event pruned: a follower resuming from an older cursor may have lost
-- history, and is told so rather than silently skipping it.
--
-- reports holds the latest result of each observer query. A run is saved only
-- for a later slot than the one saved (two schedulers, one slot: one report),
-- and each saved run appends a report event (to_status 'report', name = the
-- query's key, attempt = the total count) in the same transaction.

CREATE OR REPLACE FUNCTION tenure_tasks_created() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    SELECT id, topic, name, NULL, status, attempts, assignee, updated_at
    FROM created
    ORDER BY seq;
    IF FOUND THEN
        PERFORM pg_notify('tenure_events', '');
    END IF;
    PERFORM pg_notify('tenure_tasks', woken.topic)
    FROM (SELECT DISTINCT topic FROM created WHERE status = 'pending') AS woken;
    RETURN NULL;
END;
$$;

CREATE OR REPLACE FUNCTION tenure_tasks_updated() RETURNS trigger
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

CREATE TABLE event_log (
    only_row   boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    pruned_xid xid8    NOT NULL DEFAULT '0'::xid8,
    pruned_id  bigint  NOT NULL DEFAULT 0
);
INSERT INTO event_log DEFAULT VALUES;

CREATE TABLE reports (
    key      text        PRIMARY KEY,
    slot     timestamptz NOT NULL,
    run_at   timestamptz NOT NULL,
    owner    text        NOT NULL,
    query    jsonb       NOT NULL,
    task_ids text[]      NOT NULL,
    total    bigint      NOT NULL
);
CREATE INDEX reports_by_run ON reports (run_at);

CREATE FUNCTION tenure_report_saved() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    VALUES ('', '', NEW.key, NULL, 'report', NEW.total, NEW.owner, NEW.run_at);
    PERFORM pg_notify('tenure_events', '');
    RETURN NULL;
END;
$$;

CREATE TRIGGER reports_saved AFTER INSERT OR UPDATE ON reports
FOR EACH ROW EXECUTE FUNCTION tenure_report_saved();
