-- Workflows: gates between tasks (a group's callback, a chain's links).
--
-- A gate stands between the tasks that must end first, its members (their
-- gate_out names it), and the tasks behind it (gate_in names it), created
-- 'waiting'. Its remaining count is how many members have not ended, kept
-- exactly by the transition trigger in the transaction that writes each
-- ending (and each retry that sends an ended member back), under the gate
-- row's lock, taken gate by gate in the order of their ids, so that two
-- batches of endings that share gates wait for each other and never deadlock. The ending that leaves none
-- remaining opens the gate in its own transaction: the tasks behind it become
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

-- 0016's function, with the gates' step at its end: after the statement's
-- events are written, so a member's ending comes before the opening it causes
-- in the event log.
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
               {schema}.tenure_start_refused(o.status, n.status, o.record_ver, n.record_ver) AS refused
        FROM after_rows AS n JOIN before_rows AS o USING (seq)
    ), step AS MATERIALIZED (
        SELECT c.seq, c.id, c.topic, c.name, c.assignee, c.updated_at,
               s.ord, s.from_status, s.to_status, s.attempt
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
        INSERT INTO {schema}.events (task_id, topic, name, from_status, to_status, attempt, owner, at)
        SELECT id, topic, name, from_status, to_status, attempt, assignee, updated_at
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
