-- Concurrency limits and ordered keys (flow control): how many tasks may run
-- at once per topic (topic_limits) and per key computed from a task's
-- arguments (limit_key, at most limit_max running), and keys whose tasks run
-- one at a time in enqueue order (order_key). The reserve statements read
-- them; nothing else does. Nullable columns without a default rewrite no row,
-- and the partial indexes hold only the tasks that have a key.
--
-- And the concurrency an operator asked a running worker to take (tenure
-- workers scale), which its heartbeat reads back.
ALTER TABLE {schema}.workers ADD COLUMN scale_to bigint;
CREATE TABLE {schema}.topic_limits (
    topic text PRIMARY KEY,
    max_running bigint NOT NULL CHECK (max_running > 0),
    set_at timestamptz NOT NULL
);

-- Topic rates: at most max_starts of a topic's tasks start within any
-- per_seconds, on the store's clock. Each start under a rate is noted in
-- rate_starts, which the reserve statements count over the window and the
-- scheduler's housekeeping empties of starts older than it.
CREATE TABLE {schema}.topic_rates (
    topic text PRIMARY KEY,
    max_starts bigint NOT NULL CHECK (max_starts > 0),
    per_seconds float8 NOT NULL CHECK (per_seconds > 0),
    set_at timestamptz NOT NULL
);
CREATE TABLE {schema}.rate_starts (
    id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    topic text NOT NULL,
    at timestamptz NOT NULL
);
CREATE INDEX rate_starts_by_topic ON {schema}.rate_starts (topic, at);

ALTER TABLE {schema}.tasks ADD COLUMN limit_key text;
ALTER TABLE {schema}.tasks ADD COLUMN limit_max bigint;
ALTER TABLE {schema}.tasks ADD COLUMN order_key text;

-- The running tasks of a key, counted before a reservation takes more.
CREATE INDEX tasks_limited_running ON {schema}.tasks (limit_key)
    WHERE status = 'running' AND limit_key IS NOT NULL;

-- An ordered key's unfinished tasks in enqueue order: only the first may
-- start, and none while one runs.
CREATE INDEX tasks_ordered ON {schema}.tasks (order_key, seq)
    WHERE order_key IS NOT NULL AND status IN ('waiting', 'pending', 'running', 'snoozed');

-- The room under each limit a reservation would take tasks under: the
-- limit's most, less the tasks running under it (a rate's: the starts within
-- its span before "moment"), counted once its lock is held. Reservations of
-- one limit take its lock in turn (every caller in the order of the locks'
-- keys, so none waits on another in a circle), and the lock lasts until the
-- reservation commits; each count is a statement of its own, whose snapshot
-- (this function is VOLATILE, the transaction READ COMMITTED) sees every
-- reservation that held the lock before. A count never misses a start, so a
-- limit is never exceeded; a task that ended since is seen ending by the next
-- reservation. Under a stricter isolation the count would read the
-- transaction's first snapshot, taken before the lock: such a reservation is
-- refused rather than let past a limit. The locks' keys name the schema, so
-- the stores of two schemas do not wait on each other. A topic's running
-- tasks are read from its tallies (0008_task_tallies.sql: the sum of a few
-- rows, exact in the snapshot), not counted in the tasks table, whose index of
-- statuses holds every version a busy topic's rows went through until a
-- vacuum.
CREATE FUNCTION {schema}.tenure_rooms(
    kinds text[], names text[], maxes bigint[], spans float8[], moment timestamptz
)
RETURNS TABLE (kind text, name text, room bigint)
LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
    held record;
BEGIN
    IF current_setting('transaction_isolation') <> 'read committed' THEN
        RAISE EXCEPTION 'tenure''s limits need READ COMMITTED transactions, not %',
            current_setting('transaction_isolation')
            USING HINT = 'set default_transaction_isolation to read committed for tenure''s role';
    END IF;
    FOR held IN
        SELECT DISTINCT hashtextextended(
            'tenure.limit.{schema}.' || l.kind || '.' || l.name, 0) AS key
        FROM unnest(kinds, names) AS l(kind, name)
        ORDER BY key
    LOOP
        PERFORM pg_advisory_xact_lock(held.key);
    END LOOP;
    RETURN QUERY
    SELECT l.kind, l.name, l.max - CASE l.kind
        WHEN 'topic' THEN (SELECT COALESCE(sum(c.n), 0)::bigint FROM {schema}.task_counts AS c
                           WHERE c.topic = l.name AND c.status = 'running')
        WHEN 'key' THEN (SELECT count(*) FROM {schema}.tasks AS r
                         WHERE r.status = 'running' AND r.limit_key = l.name)
        WHEN 'order' THEN (SELECT count(*) FROM {schema}.tasks AS r
                           WHERE r.status = 'running' AND r.order_key = l.name)
        ELSE (SELECT count(*) FROM {schema}.rate_starts AS s
              WHERE s.topic = l.name AND s.at > moment - make_interval(secs => l.span)) END
    FROM unnest(kinds, names, maxes, spans) AS l(kind, name, max, span);
END
$$;
