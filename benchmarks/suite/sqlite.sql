-- Named queries of the benchmark on SQLite. Each starts with "-- name: <name>".
-- Parameters are named (:param) and always bound. Times are Unix epoch seconds.

-- History for the reserve measurement: :count done tasks in one statement, as if
-- they had run an hour ago. The store's insert trigger logs one event per row,
-- as it did for real tasks.
-- name: load_finished
WITH RECURSIVE n(i) AS (
    SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :count
)
INSERT INTO tenure_tasks (
    id, topic, name, status, data, result, attempts, max_attempts, assignee,
    created_at, updated_at, started_at, finished_at, duration, record_ver
)
SELECT :prefix || i, :topic, :name, 'done', '{"args": [], "kwargs": {}}', 'null', 1, 1,
       :owner, :now - 3600, :now - 3599, :now - 3600, :now - 3599, 1.0, 3
FROM n;

-- After a bulk load: fold the write-ahead log back into the database file, as
-- the automatic checkpoints of a store that grew slowly would have.
-- name: settle
PRAGMA wal_checkpoint(TRUNCATE);

-- The database's own limit, measured on a table of the benchmark's own, with
-- the settings tenure uses (WAL, synchronous FULL).
-- name: use_wal
PRAGMA journal_mode = WAL;

-- name: synchronous_full
PRAGMA synchronous = FULL;

-- name: limit_setup
CREATE TABLE bench_rows (id INTEGER PRIMARY KEY, n INTEGER NOT NULL DEFAULT 0);

-- name: limit_seed
WITH RECURSIVE n(i) AS (
    SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :rows
)
INSERT INTO bench_rows (id) SELECT i FROM n;

-- One transaction's write: rows :first to :last (one row when they are equal).
-- name: limit_update
UPDATE bench_rows SET n = n + 1 WHERE id BETWEEN :first AND :last RETURNING n;

-- The store's own limit on a durable enqueue (make bench-compare): one-row
-- inserts, each its own transaction, on the store's own file.
-- name: limit_insert_setup
CREATE TABLE IF NOT EXISTS bench_inserts (id INTEGER PRIMARY KEY, data TEXT NOT NULL);

-- name: limit_insert
INSERT INTO bench_inserts (data) VALUES (:data);
