-- Paused topics: while a topic's row is here, no worker reserves its tasks
-- (the reserve statements read this table themselves); a resume deletes it.
-- A new, empty table: nothing else is read or rewritten. Times are Unix seconds.
CREATE TABLE tenure_paused_topics (
    topic TEXT PRIMARY KEY,
    paused_at REAL NOT NULL
);

-- A task's deadline (options(expires=...), @app.task(expires=...)): seconds
-- after its creation by which it must start. Past it, the reserve statements
-- skip the task, and the scheduler's sweep ends it cancelled. The sweep's
-- partial index holds only the pending tasks that have a deadline.
ALTER TABLE tenure_tasks ADD COLUMN expires REAL;
CREATE INDEX tenure_tasks_expiring ON tenure_tasks (created_at)
    WHERE status = 'pending' AND expires IS NOT NULL;
