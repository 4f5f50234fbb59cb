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

ALTER TABLE tenure_tasks ADD COLUMN limit_key TEXT;
ALTER TABLE tenure_tasks ADD COLUMN limit_max INTEGER;
ALTER TABLE tenure_tasks ADD COLUMN order_key TEXT;

-- The running tasks of a key, counted before a reservation takes more.
CREATE INDEX tenure_tasks_limited_running ON tenure_tasks (limit_key)
    WHERE status = 'running' AND limit_key IS NOT NULL;

-- An ordered key's unfinished tasks in enqueue order: only the first may
-- start, and none while one runs.
CREATE INDEX tenure_tasks_ordered ON tenure_tasks (order_key, seq)
    WHERE order_key IS NOT NULL AND status IN ('waiting', 'pending', 'running', 'snoozed');
