-- Concurrency limits and ordered keys (flow control): how many tasks may run
-- at once per topic (tenure_topic_limits) and per key computed from a task's
-- arguments (limit_key, at most limit_max running), and keys whose tasks run
-- one at a time in enqueue order (order_key). The reserve statements read
-- them, within the one write transaction SQLite allows at a time. Times are
-- Unix seconds.
--
-- And the concurrency an operator asked a running worker to take (tenure
-- workers scale), which its heartbeat reads back.
ALTER TABLE tenure_workers ADD COLUMN scale_to INTEGER;
CREATE TABLE tenure_topic_limits (
    topic TEXT PRIMARY KEY,
    max_running INTEGER NOT NULL CHECK (max_running > 0),
    set_at REAL NOT NULL
);

-- Topic rates: at most max_starts of a topic's tasks start within any
-- per_seconds. Each start under a rate is noted in tenure_rate_starts (by the
-- trigger below, as a task turns running), which the reserve statements count
-- over the window and the scheduler's housekeeping empties of older starts.
CREATE TABLE tenure_topic_rates (
    topic TEXT PRIMARY KEY,
    max_starts INTEGER NOT NULL CHECK (max_starts > 0),
    per_seconds REAL NOT NULL CHECK (per_seconds > 0),
    set_at REAL NOT NULL
);
CREATE TABLE tenure_rate_starts (
    id INTEGER PRIMARY KEY,
    topic TEXT NOT NULL,
    at REAL NOT NULL
);
CREATE INDEX tenure_rate_starts_by_topic ON tenure_rate_starts (topic, at);
CREATE TRIGGER tenure_rate_started AFTER UPDATE OF status ON tenure_tasks
WHEN NEW.status = 'running' AND OLD.status <> 'running'
BEGIN
    INSERT INTO tenure_rate_starts (topic, at)
    SELECT NEW.topic, NEW.started_at
    WHERE NEW.topic IN (SELECT topic FROM tenure_topic_rates);
END;

ALTER TABLE tenure_tasks ADD COLUMN limit_key TEXT;
ALTER TABLE tenure_tasks ADD COLUMN limit_max INTEGER;
ALTER TABLE tenure_tasks ADD COLUMN order_key TEXT;

-- The running tasks of a topic, and of a key, counted before a reservation
-- takes more.
CREATE INDEX tenure_tasks_running_by_topic ON tenure_tasks (topic) WHERE status = 'running';
CREATE INDEX tenure_tasks_limited_running ON tenure_tasks (limit_key)
    WHERE status = 'running' AND limit_key IS NOT NULL;

-- An ordered key's unfinished tasks in enqueue order: only the first may
-- start, and none while one runs.
CREATE INDEX tenure_tasks_ordered ON tenure_tasks (order_key, seq)
    WHERE order_key IS NOT NULL AND status IN ('waiting', 'pending', 'running', 'snoozed');
