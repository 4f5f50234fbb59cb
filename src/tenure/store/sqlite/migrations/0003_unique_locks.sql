-- Unique tasks: each task's rule, and the locks they hold.
--
-- A lock row names the task that holds it and the phase it was taken for. It is
-- taken in the transaction that creates the task (until_executing,
-- until_executed) or that starts it (while_executing); the trigger below gives
-- it up in the transaction of the transition that ends its phase, so a task and
-- its lock can never disagree after a crash. expires_at is the safety net of a
-- lock left behind anyway: an expired lock is free to take.

ALTER TABLE tasks ADD COLUMN unique_lock        TEXT;
ALTER TABLE tasks ADD COLUMN unique_on_conflict TEXT;
ALTER TABLE tasks ADD COLUMN unique_ttl         REAL;
ALTER TABLE tasks ADD COLUMN unique_retry_in    REAL;

CREATE TABLE unique_locks (
    key        TEXT PRIMARY KEY,
    task_id    TEXT NOT NULL,
    lock       TEXT NOT NULL
        CHECK (lock IN ('until_executing', 'while_executing', 'until_executed')),
    expires_at REAL NOT NULL,
    created_at REAL NOT NULL
);
CREATE INDEX unique_locks_by_task ON unique_locks (task_id);
CREATE INDEX unique_locks_by_expiry ON unique_locks (expires_at);

-- Ends of a phase: the start ends until_executing; going back to pending ends
-- while_executing (it is taken again at the next start); an end state ends all.
-- Only the holder's own row is deleted: a task refused at start holds nothing.
CREATE TRIGGER tasks_unique_released AFTER UPDATE OF status ON tasks
WHEN NEW.unique_key IS NOT NULL AND NEW.status IS NOT OLD.status
BEGIN
    DELETE FROM unique_locks
    WHERE task_id = NEW.id
      AND (NEW.status IN ('done', 'failed', 'cancelled')
           OR (NEW.status = 'running' AND lock = 'until_executing')
           OR (NEW.status = 'pending' AND lock = 'while_executing'));
END;
