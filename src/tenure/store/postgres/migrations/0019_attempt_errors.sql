-- Every attempt's error, not only the last one (errors, the last 20), and the
-- error's type and message on the event of the transition that wrote it.
--
-- Each write of an attempt's error (a failure, a cancel from inside the task,
-- a lease lost on the last attempt, a unique lock held at start) stamps it
-- with the attempt's number, so two attempts that fail alike still write two
-- different errors; a trigger keeps each new one in errors, on the row being
-- written (no second write), with its time and at most the last 8 KB of its
-- traceback (the whole of the last one stays in error).
--
-- The new columns are nullable without a default: no row is rewritten.

ALTER TABLE tasks ADD COLUMN errors json;
ALTER TABLE events ADD COLUMN error_type text, ADD COLUMN error_message text;

CREATE FUNCTION {schema}.tenure_stamped(error json, attempt bigint) RETURNS json
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT json_build_object('type', error->'type', 'message', error->'message',
                             'traceback', error->'traceback', 'attempt', attempt)
$$;

CREATE FUNCTION {schema}.tenure_error_kept() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    NEW.errors := (
        SELECT json_agg(kept.entry ORDER BY kept.n)
        FROM (
            SELECT entry, n FROM (
                SELECT before.entry, before.n
                FROM json_array_elements(COALESCE(OLD.errors, '[]'::json))
                     WITH ORDINALITY AS before(entry, n)
                UNION ALL
                SELECT json_build_object(
                    'type', NEW.error->'type', 'message', NEW.error->'message',
                    'traceback', right(NEW.error->>'traceback', 8192),
                    'attempt', NEW.attempts, 'at', extract(epoch FROM NEW.updated_at)),
                    2147483647
            ) AS every ORDER BY n DESC LIMIT 20
        ) AS kept);
    RETURN NEW;
END;
$$;

-- 0003's refusal at start, its error stamped with the attempt.
CREATE OR REPLACE FUNCTION {schema}.tenure_unique_refused(t {schema}.tasks, holder text)
RETURNS {schema}.tasks
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
            'traceback', '', 'attempt', t.attempts);
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

-- Only an attempt's error, stamped (a task cancelled because a task before it
-- failed, UpstreamFailed, is not an attempt's). Named to fire after tasks_unique (BEFORE triggers fire in the order of their
-- names), whose refusal at start writes an error too.
-- Only writes that set the status or the error are looked at (not a lease
-- extension, not progress), the cheap comparison first.
CREATE TRIGGER tasks_wrote_error BEFORE UPDATE OF status, error ON tasks
FOR EACH ROW WHEN (NEW.error::text IS DISTINCT FROM OLD.error::text
                   AND NEW.error->>'attempt' IS NOT NULL)
EXECUTE FUNCTION {schema}.tenure_error_kept();

-- 0018's function, each event of a transition that wrote an error naming it.
CREATE OR REPLACE FUNCTION {schema}.tenure_tasks_updated()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    appended boolean;
    woken text[];
    passed record;
BEGIN
    WITH changed AS MATERIALIZED (
        SELECT n.seq, n.id, n.topic, n.name, n.assignee, n.updated_at, n.attempts,
               n.status, o.status AS old_status, o.attempts AS old_attempts,
               {schema}.tenure_start_refused(o.status, n.status, o.record_ver, n.record_ver) AS refused,
               CASE WHEN n.error::text IS DISTINCT FROM o.error::text THEN n.error END AS error
        FROM after_rows AS n JOIN before_rows AS o USING (seq)
    ), step AS MATERIALIZED (
        SELECT c.seq, c.id, c.topic, c.name, c.assignee, c.updated_at,
               s.ord, s.from_status, s.to_status, s.attempt,
               CASE WHEN s.ord = 2 THEN c.error->>'type' END AS error_type,
               CASE WHEN s.ord = 2 THEN c.error->>'message' END AS error_message
        FROM changed AS c
        CROSS JOIN LATERAL (VALUES
            (1, 'pending', 'running', c.old_attempts + 1, c.refused),
            (2, CASE WHEN c.refused THEN 'running' ELSE c.old_status END, c.status, c.attempts,
             c.refused OR c.old_status IS DISTINCT FROM c.status)
        ) AS s(ord, from_status, to_status, attempt, happened)
        WHERE s.happened
    ), counted AS (
        INSERT INTO {schema}.task_counts (topic, status, n)
        SELECT topic, status, sum(n)
        FROM (SELECT topic, to_status AS status, 1 AS n FROM step
              UNION ALL
              SELECT topic, from_status, -1 FROM step) AS moved
        GROUP BY topic, status
        HAVING sum(n) <> 0
    ), entered AS (
        INSERT INTO {schema}.task_transitions (minute, topic, status, n)
        SELECT date_trunc('minute', updated_at), topic, to_status, count(*)
        FROM step
        GROUP BY date_trunc('minute', updated_at), topic, to_status
    ), logged AS (
        INSERT INTO {schema}.events (task_id, topic, name, from_status, to_status, attempt, owner, at,
                                     error_type, error_message)
        SELECT id, topic, name, from_status, to_status, attempt, assignee, updated_at,
               error_type, error_message
        FROM step
        ORDER BY seq, ord
        RETURNING 1
    )
    SELECT EXISTS (SELECT FROM logged),
           ARRAY(SELECT DISTINCT topic FROM changed
                 WHERE status = 'pending' AND old_status IS DISTINCT FROM 'pending')
    INTO appended, woken;
    PERFORM {schema}.tenure_wake(woken, appended);
    FOR passed IN
        SELECT n.gate_out AS gate,
               sum(CASE WHEN n.status IN ('done', 'failed', 'cancelled') THEN -1 ELSE 1 END) AS delta,
               min(n.id) FILTER (WHERE n.status IN ('failed', 'cancelled')) AS culprit,
               max(n.updated_at) AS at
        FROM after_rows AS n JOIN before_rows AS o USING (seq)
        WHERE n.gate_out IS NOT NULL
          AND (n.status IN ('done', 'failed', 'cancelled'))
              <> (o.status IN ('done', 'failed', 'cancelled'))
        GROUP BY n.gate_out
        ORDER BY n.gate_out
    LOOP
        PERFORM {schema}.tenure_gate_passed(passed.gate, passed.delta, passed.culprit, passed.at);
    END LOOP;
    RETURN NULL;
END;
$function$;
