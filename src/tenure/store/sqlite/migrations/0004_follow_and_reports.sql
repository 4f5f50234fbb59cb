-- Following the event log, and the observer's reports.
--
-- event_log remembers how far retention has deleted, as the id of the newest
-- event pruned: a follower resuming from an older cursor may have lost history,
-- and is told so rather than silently skipping it.
--
-- reports holds the latest result of each observer query. A run is saved only
-- for a later slot than the one saved (two schedulers, one slot: one report),
-- and each saved run appends a report event (to_status 'report', name = the
-- query's key, attempt = the total count) in the same transaction.

CREATE TABLE event_log (
    only_row  INTEGER PRIMARY KEY CHECK (only_row = 1),
    pruned_id INTEGER NOT NULL DEFAULT 0
);
INSERT INTO event_log (only_row) VALUES (1);

CREATE TABLE reports (
    key      TEXT    PRIMARY KEY,
    slot     REAL    NOT NULL,
    run_at   REAL    NOT NULL,
    owner    TEXT    NOT NULL,
    query    TEXT    NOT NULL,
    task_ids TEXT    NOT NULL,
    total    INTEGER NOT NULL
);
CREATE INDEX reports_by_run ON reports (run_at);

CREATE TRIGGER reports_created AFTER INSERT ON reports
BEGIN
    INSERT INTO events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    VALUES ('', '', NEW.key, NULL, 'report', NEW.total, NEW.owner, NEW.run_at);
END;

CREATE TRIGGER reports_updated AFTER UPDATE ON reports
BEGIN
    INSERT INTO events (task_id, topic, name, from_status, to_status, attempt, owner, at)
    VALUES ('', '', NEW.key, NULL, 'report', NEW.total, NEW.owner, NEW.run_at);
END;
