-- Every attempt's error, not only the last one (errors, the last 20), and the
-- error's type and message on the event of the transition that wrote it, as in
-- PostgreSQL's 0019_attempt_errors.sql. The statements that write an attempt's
-- error keep it in errors themselves (queries.sql's errors_kept): SQLite's
-- triggers cannot change the row being written, and a change a trigger makes
-- after it is missing from the statement's RETURNING.
--
-- Adding nullable columns rewrites no row. The transition trigger is made again
-- to write the error on the event; the gates' trigger stays older than it, so
-- it still fires after it (triggers fire newest first).

ALTER TABLE tenure_tasks ADD COLUMN errors TEXT;
ALTER TABLE tenure_events ADD COLUMN error_type TEXT;
ALTER TABLE tenure_events ADD COLUMN error_message TEXT;

DROP TRIGGER tenure_tasks_transitioned;
CREATE TRIGGER tenure_tasks_transitioned AFTER UPDATE OF status ON tenure_tasks
WHEN NEW.status IS NOT OLD.status
BEGIN
    INSERT INTO tenure_events (id, task_id, topic, name, from_status, to_status, attempt,
                               owner, at, error_type, error_message)
    SELECT next.id,
           NEW.id, NEW.topic, NEW.name, OLD.status, NEW.status, NEW.attempts, NEW.assignee,
           NEW.updated_at,
           CASE WHEN NEW.error IS NOT OLD.error THEN json_extract(NEW.error, '$.type') END,
           CASE WHEN NEW.error IS NOT OLD.error THEN json_extract(NEW.error, '$.message') END
    FROM tenure_next_event_id AS next;
END;
