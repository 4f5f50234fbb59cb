-- Paused topics: while a topic's row is here, no worker reserves its tasks
-- (the reserve statements read this table themselves); a resume deletes it.
-- A new, empty table: nothing else is read or rewritten. Times are Unix seconds.
CREATE TABLE tenure_paused_topics (
    topic TEXT PRIMARY KEY,
    paused_at REAL NOT NULL
);

-- A task's deadline (options(expires=...), @app.task(expires=...)): the
-- moment, that many seconds after its creation, by which it must start. Past
-- it, the reserve statements skip the task, and the scheduler's sweep ends it
-- cancelled, walking the pending tasks that have one in deadline order.
ALTER TABLE tenure_tasks ADD COLUMN expires_at REAL;
CREATE INDEX tenure_tasks_expiring ON tenure_tasks (expires_at, seq)
    WHERE status = 'pending' AND expires_at IS NOT NULL;
