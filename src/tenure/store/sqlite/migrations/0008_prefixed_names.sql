-- Every name tenure gives begins with tenure_: its tables, view, indexes and
-- triggers. A SQLite file has one namespace, and tenure often shares it with
-- an application (Django on SQLite, a web app beside its workers): a table of
-- the application's named tasks, events or workers could not be created beside
-- tenure's, nor tenure's beside it. The migration ledger, tenure_migrations,
-- always had the prefix.
--
-- The tables are renamed in place, so their rows stay as they are: tasks
-- pending, running or ended, their lease tokens and record versions, the event
-- log with its ids, and how far retention pruned it (a follower's cursor still
-- reads the same events). Indexes and triggers cannot be renamed: each is
-- dropped and made again under its new name, as it was, and so is the view.
-- Making the indexes again reads each table once, under the write lock the
-- migration holds.
--
-- The triggers and the view go first, so that no rename depends on rewriting
-- their bodies. The renames run out of legacy mode (some builds of SQLite start
-- in it): a view or trigger of yours that reads one of tenure's tables then
-- reads it under its new name, as before. In legacy mode it would be left
-- naming a table that no longer exists.

PRAGMA legacy_alter_table = OFF;

DROP TRIGGER tasks_created;
DROP TRIGGER tasks_transitioned;
DROP TRIGGER tasks_unique_released;
DROP TRIGGER reports_created;
DROP TRIGGER reports_updated;
DROP TRIGGER events_tallied;
DROP VIEW next_event_id;

DROP INDEX tasks_pending_by_topic;
DROP INDEX tasks_pending;
DROP INDEX tasks_leased;
DROP INDEX tasks_by_group;
DROP INDEX tasks_by_status;
DROP INDEX tasks_finished;
DROP INDEX events_by_time;
DROP INDEX events_by_task;
DROP INDEX unique_locks_by_task;
DROP INDEX unique_locks_by_expiry;
DROP INDEX reports_by_run;

ALTER TABLE tasks RENAME TO tenure_tasks;
ALTER TABLE events RENAME TO tenure_events;
ALTER TABLE event_log RENAME TO tenure_event_log;
ALTER TABLE workers RENAME TO tenure_workers;
ALTER TABLE leaders RENAME TO tenure_leaders;
ALTER TABLE unique_locks RENAME TO tenure_unique_locks;
ALTER TABLE reports RENAME TO tenure_reports;
ALTER TABLE task_transition_totals RENAME TO tenure_task_transition_totals;

-- Reserve: pending rows only, in the order they are taken.
CREATE INDEX tenure_tasks_pending_by_topic ON tenure_tasks (topic, priority DESC, seq)
    WHERE status = 'pending';
CREATE INDEX tenure_tasks_pending ON tenure_tasks (priority DESC, seq) WHERE status = 'pending';
-- The supervisor's list of leased tasks.
CREATE INDEX tenure_tasks_leased ON tenure_tasks (seq) WHERE status IN ('running', 'snoozed');
CREATE INDEX tenure_tasks_by_group ON tenure_tasks (group_id, seq) WHERE group_id IS NOT NULL;
CREATE INDEX tenure_tasks_by_status ON tenure_tasks (status, seq);
CREATE INDEX tenure_tasks_finished ON tenure_tasks (finished_at)
    WHERE status IN ('done', 'failed', 'cancelled');
CREATE INDEX tenure_events_by_time ON tenure_events (at);
CREATE INDEX tenure_events_by_task ON tenure_events (task_id, id);
CREATE INDEX tenure_unique_locks_by_task ON tenure_unique_locks (task_id);
CREATE INDEX tenure_unique_locks_by_expiry ON tenure_unique_locks (expires_at);
CREATE INDEX tenure_reports_by_run ON tenure_reports (run_at);

-- The one rule for a new event's id (0007_event_ids_without_a_sequence.sql).
CREATE VIEW tenure_next_event_id AS
SELECT max(coalesce((SELECT max(id) FROM tenure_events), 0),
           coalesce((SELECT pruned_id FROM tenure_event_log), 0)) + 1 AS id;

CREATE TRIGGER tenure_events_tallied AFTER INSERT ON tenure_events
WHEN NEW.to_status <> 'report'
BEGIN
    INSERT INTO tenure_task_transition_totals (topic, status, n)
    VALUES (NEW.topic, NEW.to_status, 1)
    ON CONFLICT (topic, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER tenure_tasks_created AFTER INSERT ON tenure_tasks
BEGIN
    INSERT INTO tenure_events (id, task_id, topic, name, from_status, to_status, attempt,
                               owner, at)
    SELECT next.id,
           NEW.id, NEW.topic, NEW.name, NULL, NEW.status, NEW.attempts, NEW.assignee,
           NEW.updated_at
    FROM tenure_next_event_id AS next;
END;

CREATE TRIGGER tenure_tasks_transitioned AFTER UPDATE OF status ON tenure_tasks
WHEN NEW.status IS NOT OLD.status
BEGIN
    INSERT INTO tenure_events (id, task_id, topic, name, from_status, to_status, attempt,
                               owner, at)
    SELECT next.id,
           NEW.id, NEW.topic, NEW.name, OLD.status, NEW.status, NEW.attempts, NEW.assignee,
           NEW.updated_at
    FROM tenure_next_event_id AS next;
END;

-- Ends of a unique task's phase give up its lock (0003_unique_locks.sql).
CREATE TRIGGER tenure_tasks_unique_released AFTER UPDATE OF status ON tenure_tasks
WHEN NEW.unique_key IS NOT NULL AND NEW.status IS NOT OLD.status
BEGIN
    DELETE FROM tenure_unique_locks
    WHERE task_id = NEW.id
      AND (NEW.status IN ('done', 'failed', 'cancelled')
           OR (NEW.status = 'running' AND lock = 'until_executing')
           OR (NEW.status = 'pending' AND lock = 'while_executing'));
END;

CREATE TRIGGER tenure_reports_created AFTER INSERT ON tenure_reports
BEGIN
    INSERT INTO tenure_events (id, task_id, topic, name, from_status, to_status, attempt,
                               owner, at)
    SELECT next.id,
           '', '', NEW.key, NULL, 'report', NEW.total, NEW.owner, NEW.run_at
    FROM tenure_next_event_id AS next;
END;

CREATE TRIGGER tenure_reports_updated AFTER UPDATE ON tenure_reports
BEGIN
    INSERT INTO tenure_events (id, task_id, topic, name, from_status, to_status, attempt,
                               owner, at)
    SELECT next.id,
           '', '', NEW.key, NULL, 'report', NEW.total, NEW.owner, NEW.run_at
    FROM tenure_next_event_id AS next;
END;
