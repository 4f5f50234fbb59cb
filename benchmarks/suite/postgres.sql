-- Named queries of the benchmark on PostgreSQL. Each starts with "-- name: <name>".
-- Parameters are named (%(param)s) and always bound. The two database
-- statements take an identifier ({name}), which is composed with
-- psycopg.sql.Identifier: identifiers cannot be bound parameters.

-- name: create_database
CREATE DATABASE {name};

-- name: drop_database
DROP DATABASE IF EXISTS {name} WITH (FORCE);

-- Empty every table of the store but the migration ledger, so a measurement
-- starts from a store as new as a fresh database would be, without creating one.
-- name: empty_tables
DO $$
DECLARE
    tables text;
BEGIN
    SELECT string_agg(format('tenure.%I', tablename), ', ') INTO tables
    FROM pg_tables
    WHERE schemaname = 'tenure' AND tablename <> 'tenure_migrations';
    IF tables IS NOT NULL THEN
        EXECUTE 'TRUNCATE ' || tables || ' RESTART IDENTITY';
    END IF;
END
$$;

-- History for the reserve measurement: %(count)s done tasks in one statement, as
-- if they had run an hour ago. The store's insert trigger logs one event per
-- row, as it did for real tasks.
-- name: load_finished
INSERT INTO tenure.tasks (
    id, topic, name, status, data, result, attempts, max_attempts, assignee,
    created_at, updated_at, started_at, finished_at, duration, record_ver
)
SELECT %(prefix)s::text || i, %(topic)s::text, %(name)s::text, 'done',
       '{"args": [], "kwargs": {}}', 'null', 1, 1, %(owner)s::text,
       now() - interval '1 hour', now() - interval '3599 seconds',
       now() - interval '1 hour', now() - interval '3599 seconds', 1.0, 3
FROM generate_series(1, %(count)s::bigint) AS i;

-- After a bulk load: what autovacuum would have done by the time a store had
-- grown that history (visibility map, planner statistics).
-- name: settle
VACUUM (ANALYZE) tasks;

-- name: server_version
SELECT current_setting('server_version') AS version;

-- name: settings
SELECT name, current_setting(name) AS value
FROM pg_settings
WHERE name = ANY(%(names)s::text[])
ORDER BY name;

-- The database's own limit, measured on a table of the benchmark's own.
-- name: limit_setup
CREATE TABLE tenure_bench_rows (id bigint PRIMARY KEY, n bigint NOT NULL DEFAULT 0);

-- name: limit_seed
INSERT INTO tenure_bench_rows (id) SELECT generate_series(1, %(rows)s::bigint);

-- name: limit_drop
DROP TABLE IF EXISTS tenure_bench_rows;

-- One transaction's write: rows %(first)s to %(last)s (one row when they are
-- equal). pgbench_update.sql is the same statement for pgbench.
-- name: limit_update
UPDATE tenure_bench_rows SET n = n + 1
WHERE id BETWEEN %(first)s::bigint AND %(last)s::bigint
RETURNING n;

-- The store's own limit on a durable enqueue (make bench-compare): one-row
-- inserts, each its own transaction, replayed by pgbench_insert.sql.
-- name: limit_insert_setup
CREATE TABLE IF NOT EXISTS tenure_bench_inserts (id bigserial PRIMARY KEY, data text NOT NULL);
