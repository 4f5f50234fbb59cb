-- Paused topics: while a topic's row is here, no worker reserves its tasks
-- (the reserve statements read this table themselves); a resume deletes it.
-- A new, empty table: nothing else is read or rewritten.
CREATE TABLE paused_topics (
    topic text PRIMARY KEY,
    paused_at timestamptz NOT NULL
);

-- A task's deadline (options(expires=...), @app.task(expires=...)): the
-- moment, that many seconds after its creation, by which it must start. Past
-- it, the reserve statements skip the task, and the scheduler's sweep ends it
-- cancelled, walking the pending tasks that have one in deadline order. A
-- nullable column without a default rewrites no row; the partial index holds
-- only those tasks (made by reading the table once).
ALTER TABLE tasks ADD COLUMN expires_at timestamptz;
CREATE INDEX tasks_expiring ON tasks (expires_at, seq)
    WHERE status = 'pending' AND expires_at IS NOT NULL;
