-- Workflows: gates between tasks (a group's callback, a chain's links); and
-- every attempt's error, kept on its task.
--
-- A gate stands between the tasks that must end first, its members (their
-- gate_out names it), and the tasks behind it (gate_in names it), created
-- 'waiting'. Its remaining count is how many members have not ended, kept
-- exactly by the transition trigger in the transaction that writes each
-- ending (and each retry that sends an ended member back), under the gate
-- row's lock, taken gate by gate in the order of their ids, so that two
-- batches of endings that share gates wait for each other and never deadlock.
-- The ending that leaves none remaining opens the gate in its own transaction: the tasks behind it become
-- pending, given the members' outcomes (ids, statuses, results and errors, in
-- the members' order) in upstream, so a callback reads them from its own row
-- whatever retention has pruned since. Whoever wrote that ending (a worker, a
-- scheduler rolling back a dead worker's task, a person cancelling), the gate
-- opens once: the ending and the opening commit together or not at all.
--
-- A gate in mode all_done breaks at its first member failed or cancelled:
-- every task waiting behind it, and behind those, is cancelled in the same
-- transaction, and their gates are marked broken.
--
-- The new columns are nullable without a default: adding them rewrites no
-- row. The status check only widens, so it is made NOT VALID: every row written
-- from now on is checked, and the rows already there, which the old check
-- held to fewer statuses, are not read again under this migration's lock. The
-- two new indexes each read the table once.

CREATE TABLE gates (
    id         text        PRIMARY KEY,
    mode       text        NOT NULL CHECK (mode IN ('all_ended', 'all_done')),
    shape      text        NOT NULL CHECK (shape IN ('outcomes', 'result', 'results')),
    remaining  bigint      NOT NULL CHECK (remaining >= 0),
    created_at timestamptz NOT NULL,
    opened_at  timestamptz,
    broken_at  timestamptz
);
-- Retention finds the gates that opened or broke long ago along this.
CREATE INDEX gates_settled ON gates ((COALESCE(opened_at, broken_at)));

ALTER TABLE tasks
    ADD COLUMN gate_in text,
    ADD COLUMN gate_out text,
    ADD COLUMN upstream json,
    DROP CONSTRAINT tasks_status_known,
    ADD CONSTRAINT tasks_status_known CHECK (
        status IN ('waiting', 'pending', 'running', 'snoozed', 'done', 'failed', 'cancelled')
    ) NOT VALID;

-- Only the tasks of flows enter these: the rest of the table costs them nothing.
CREATE INDEX tasks_behind_gate ON tasks (gate_in) WHERE gate_in IS NOT NULL;
CREATE INDEX tasks_gate_members ON tasks (gate_out, seq) WHERE gate_out IS NOT NULL;

-- A gate's members that ended (delta < 0) or were sent back (delta > 0) in
-- one statement; culprit, one of them that failed or was cancelled.
CREATE FUNCTION {schema}.tenure_gate_passed(
    gate text, delta bigint, culprit text, at timestamptz
) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    passed {schema}.gates;
BEGIN
    UPDATE {schema}.gates AS g
    SET remaining = greatest(g.remaining + delta, 0),
        broken_at = CASE WHEN culprit IS NOT NULL AND g.mode = 'all_done' THEN at END
    WHERE g.id = gate AND g.opened_at IS NULL AND g.broken_at IS NULL
    RETURNING g.* INTO passed;
    IF NOT FOUND THEN
        RETURN;  -- opened or broken before: what happens to its members now changes nothing
    ELSIF passed.broken_at IS NOT NULL THEN
        PERFORM {schema}.tenure_gate_broken(gate, culprit, at);
    ELSIF passed.remaining = 0 THEN
        UPDATE {schema}.gates SET opened_at = at WHERE id = gate;
        UPDATE {schema}.tasks AS t
        SET status = 'pending',
            upstream = json_build_object('shape', passed.shape, 'outcomes', (
                SELECT json_agg(json_build_object('id', m.id, 'status', m.status,
                                                  'result', m.result, 'error', m.error)
                                ORDER BY m.seq)
                FROM {schema}.tasks AS m WHERE m.gate_out = gate)),
            -- Runnable from now (or its own later time): a queue's age counts from here.
            run_at = greatest(t.run_at, at),
            record_ver = t.record_ver + 1,
            updated_at = at
        WHERE t.gate_in = gate AND t.status = 'waiting';
    END IF;
END;
$$;

-- Cancel every task waiting behind the broken gate, and behind those.
CREATE FUNCTION {schema}.tenure_gate_broken(gate text, culprit text, at timestamptz)
RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    why json := json_build_object(
        'type', 'UpstreamFailed',
        'message', format('task %s, upstream of this one, ended %s', culprit,
                          (SELECT status FROM {schema}.tasks WHERE id = culprit)),
        'traceback', '');
BEGIN
    WITH RECURSIVE downstream (id) AS (
        SELECT gate
        UNION
        SELECT t.gate_out
        FROM {schema}.tasks AS t JOIN downstream AS d ON t.gate_in = d.id
        WHERE t.status = 'waiting' AND t.gate_out IS NOT NULL
    ), marked AS (
        UPDATE {schema}.gates AS g SET broken_at = at
        WHERE g.id IN (SELECT id FROM downstream) AND g.opened_at IS NULL
          AND g.broken_at IS NULL
    )
    UPDATE {schema}.tasks AS t
    SET status = 'cancelled',
        error = why,
        finished_at = at,
        record_ver = t.record_ver + 1,
        updated_at = at
    WHERE t.gate_in IN (SELECT id FROM downstream) AND t.status = 'waiting';
END;
$$;

-- Every attempt's error, not only the last one (errors, the last 20), and the
-- error's type and message on the event of the transition that wrote it
-- (the function at the end).
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

-- 0016's function, each event of a transition that wrote an error naming it,
-- and the gates' step at its end: after the statement's events are written, so
-- a member's ending comes before the opening it causes in the event log.
CREATE OR REPLACE FUNCTION {schema}.tenure_tasks_updated()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    appended boolean;
    woken text[];
    gates text[];
    deltas bigint[];
    culprits text[];
    ats timestamptz[];
BEGIN
    WITH changed AS MATERIALIZED (
        SELECT n.seq, n.id, n.topic, n.name, n.assignee, n.updated_at, n.attempts,
               n.status, o.status AS old_status, o.attempts AS old_attempts,
               {schema}.tenure_start_refused(o.status, n.status, o.record_ver, n.record_ver) AS refused,
               CASE WHEN n.error::text IS DISTINCT FROM o.error::text THEN n.error END AS error,
               n.gate_out
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
    ), passed AS (  -- each gate whose members ended (or were sent back) here
        SELECT gate_out AS gate,
               sum(CASE WHEN status IN ('done', 'failed', 'cancelled') THEN -1 ELSE 1 END) AS delta,
               min(id) FILTER (WHERE status IN ('failed', 'cancelled')) AS culprit,
               max(updated_at) AS at
        FROM changed
        WHERE gate_out IS NOT NULL
          AND (status IN ('done', 'failed', 'cancelled'))
              <> (old_status IN ('done', 'failed', 'cancelled'))
        GROUP BY gate_out
    )
    SELECT EXISTS (SELECT FROM logged),
           ARRAY(SELECT DISTINCT topic FROM changed
                 WHERE status = 'pending' AND old_status IS DISTINCT FROM 'pending'),
           p.gates, p.deltas, p.culprits, p.ats
    FROM (SELECT array_agg(gate ORDER BY gate) AS gates, array_agg(delta ORDER BY gate) AS deltas,
                 array_agg(culprit ORDER BY gate) AS culprits, array_agg(at ORDER BY gate) AS ats
          FROM passed) AS p
    INTO appended, woken, gates, deltas, culprits, ats;
    PERFORM {schema}.tenure_wake(woken, appended);
    FOR i IN 1 .. coalesce(cardinality(gates), 0) LOOP  -- in their ids' order: no deadlock
        PERFORM {schema}.tenure_gate_passed(gates[i], deltas[i], culprits[i], ats[i]);
    END LOOP;
    RETURN NULL;
END;
$function$;
