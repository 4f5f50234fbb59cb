-- tenure in a schema of its own (default "tenure", set with ?schema=NAME in
-- the store URL or TENURE_SCHEMA), so that an application's database can hold
-- it beside its own tables, a "tasks" table of its own included.
--
-- Every migration runs with the search path set to the store's schema, so the
-- names the migration files leave unqualified are made, and found, there; the
-- store's queries name the schema themselves ({schema}, spliced in as a
-- quoted identifier when the queries and migrations are loaded). An install
-- made before this migration, in "public", is moved into the schema first, in
-- the same transaction (see move_from_public in queries.sql): ALTER ... SET
-- SCHEMA changes the catalog only, however large the tables, and every row,
-- lease and event cursor stays as it was.
--
-- What this file changes: a trigger fires in whatever session writes the
-- row, an application's connection enqueuing in its own transaction (with its
-- own search path) included, and a PL/pgSQL function looks up the names in
-- its body on that session's search path. So every function that names a
-- table or another function of tenure's is made again here, naming them with
-- the schema, as the queries do. (A search path set on each function instead,
-- SET search_path FROM CURRENT, costs a setting saved and restored on every
-- call, and keeps the planner from inlining the SQL ones: a quarter of the
-- enqueue rate in make bench-schema.) The functions that name nothing of
-- tenure's (tenure_start_refused, tenure_unique_refused, tenure_wake_checked)
-- are unchanged. A function a later migration makes names the schema too.

CREATE OR REPLACE FUNCTION {schema}.tenure_created_wake()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
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
    IF decided = '*' OR (first AND NOT {schema}.tenure_wake_checked()) THEN
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
    FROM {schema}.wake_wanted WHERE until > statement_timestamp();
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
$function$;

CREATE OR REPLACE FUNCTION {schema}.tenure_report_saved()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO {schema}.events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    VALUES ('', '', NEW.key, NULL, 'report', NEW.total, NEW.owner, NEW.run_at);
    PERFORM {schema}.tenure_wake('{}', true);
    RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION {schema}.tenure_tasks_created()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO {schema}.task_counts (topic, status, n)
    SELECT topic, status, count(*) FROM created GROUP BY topic, status;
    INSERT INTO {schema}.task_transitions (minute, topic, status, n)
    SELECT date_trunc('minute', updated_at), topic, status, count(*)
    FROM created GROUP BY date_trunc('minute', updated_at), topic, status;
    INSERT INTO {schema}.events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    SELECT id, topic, name, NULL, status, attempts, assignee, updated_at
    FROM created
    ORDER BY seq;
    RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION {schema}.tenure_tasks_tallied_deleted()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    INSERT INTO {schema}.task_counts (topic, status, n)
    SELECT topic, status, -count(*) FROM deleted GROUP BY topic, status;
    RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION {schema}.tenure_tasks_tallied_truncated()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
BEGIN
    LOCK TABLE {schema}.task_counts IN EXCLUSIVE MODE;
    DELETE FROM {schema}.task_counts;
    RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION {schema}.tenure_tasks_updated()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    appended boolean;
    woken text[];
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
    RETURN NULL;
END;
$function$;

CREATE OR REPLACE FUNCTION {schema}.tenure_unique_transition()
 RETURNS trigger
 LANGUAGE plpgsql
AS $function$
DECLARE
    at     timestamptz := NEW.updated_at;
    holder text;
BEGIN
    IF NEW.status IN ('done', 'failed', 'cancelled') THEN
        DELETE FROM {schema}.unique_locks WHERE task_id = NEW.id;
    ELSIF NEW.status = 'pending' THEN
        DELETE FROM {schema}.unique_locks WHERE task_id = NEW.id AND lock = 'while_executing';
    ELSIF NEW.status = 'running' THEN
        DELETE FROM {schema}.unique_locks WHERE task_id = NEW.id AND lock = 'until_executing';
        IF NEW.unique_lock IN ('while_executing', 'until_executed') THEN
            INSERT INTO {schema}.unique_locks AS held (key, task_id, lock, expires_at, created_at)
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
                SELECT task_id INTO holder FROM {schema}.unique_locks WHERE key = NEW.unique_key;
                NEW := {schema}.tenure_unique_refused(NEW, holder);
            END IF;
        END IF;
    END IF;
    RETURN NEW;
END;
$function$;

CREATE OR REPLACE FUNCTION {schema}.tenure_wake(woken text[], appended boolean)
 RETURNS void
 LANGUAGE plpgsql
AS $function$
DECLARE
    topic text;
BEGIN
    IF NOT appended AND cardinality(woken) = 0 THEN
        RETURN;  -- a write that changed no status (a lease extension)
    END IF;
    IF NOT {schema}.tenure_wake_checked() THEN
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
        IF EXISTS (SELECT 1 FROM {schema}.wake_wanted WHERE events AND until > statement_timestamp()) THEN
            PERFORM pg_notify('tenure_events', '');
        END IF;
    END IF;
    FOREACH topic IN ARRAY woken LOOP
        IF EXISTS (SELECT 1 FROM {schema}.wake_wanted
                   WHERE until > statement_timestamp()
                     AND (topics IS NULL OR topic = ANY(topics))) THEN
            PERFORM pg_notify('tenure_tasks', topic);
        END IF;
    END LOOP;
END;
$function$;
