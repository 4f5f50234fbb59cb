-- Event ids without AUTOINCREMENT: one page fewer in every commit that writes
-- an event.
--
-- AUTOINCREMENT kept event ids from ever being reused by updating the id's
-- row in sqlite_sequence in each transaction that wrote an event: one more
-- page in the write-ahead log of every enqueue (ten instead of nine), about a
-- tenth of a single enqueue's commit. Ids are now given by the triggers that
-- write events (through the view next_event_id), one above both the newest
-- event and the newest one pruned (event_log.pruned_id): retention, the only thing that deletes events, marks
-- what it deletes, so an id is still never given twice, even after every event
-- was pruned. Reading the two only reads pages the insert touches anyway.
--
-- The highest id the sequence gave goes to event_log first, should the events
-- holding it be gone: a follower's cursor up to it then reads as pruned, as it
-- would have after retention.

UPDATE event_log
SET pruned_id = max(pruned_id, (SELECT seq FROM sqlite_sequence WHERE name = 'events'))
WHERE (SELECT seq FROM sqlite_sequence WHERE name = 'events')
      > coalesce((SELECT max(id) FROM events), 0);

DROP TRIGGER tasks_created;
DROP TRIGGER tasks_transitioned;
DROP TRIGGER reports_created;
DROP TRIGGER reports_updated;

-- The old table is renamed away and a new one made under its name, rather than
-- a new one renamed into place: in legacy mode a rename checks no view or
-- trigger, so views of yours on events (even stale ones) neither stop the
-- migration nor change, and they read the new table. Indexes and triggers of
-- yours on events go with the old table.
PRAGMA legacy_alter_table = ON;
ALTER TABLE events RENAME TO events_before_0007;
PRAGMA legacy_alter_table = OFF;

CREATE TABLE events (
    id          INTEGER PRIMARY KEY,
    task_id     TEXT    NOT NULL,
    topic       TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    from_status TEXT,
    to_status   TEXT    NOT NULL,
    attempt     INTEGER NOT NULL,
    owner       TEXT,
    at          REAL    NOT NULL
);
INSERT INTO events (id, task_id, topic, name, from_status, to_status, attempt, owner, at)
SELECT id, task_id, topic, name, from_status, to_status, attempt, owner, at
FROM events_before_0007;
DROP TABLE events_before_0007;

CREATE INDEX events_by_time ON events (at);
CREATE INDEX events_by_task ON events (task_id, id);

-- The one rule for a new event's id, read by every trigger that writes events:
-- always one row, whatever the tables hold.
CREATE VIEW next_event_id AS
SELECT max(coalesce((SELECT max(id) FROM events), 0),
           coalesce((SELECT pruned_id FROM event_log), 0)) + 1 AS id;

CREATE TRIGGER events_tallied AFTER INSERT ON events
WHEN NEW.to_status <> 'report'
BEGIN
    INSERT INTO task_transition_totals (topic, status, n) VALUES (NEW.topic, NEW.to_status, 1)
    ON CONFLICT (topic, status) DO UPDATE SET n = n + 1;
END;

CREATE TRIGGER tasks_created AFTER INSERT ON tasks
BEGIN
    INSERT INTO events (id, task_id, topic, name, from_status, to_status, attempt, owner, at)
    SELECT next.id,
           NEW.id, NEW.topic, NEW.name, NULL, NEW.status, NEW.attempts, NEW.assignee,
           NEW.updated_at
    FROM next_event_id AS next;
END;

CREATE TRIGGER tasks_transitioned AFTER UPDATE OF status ON tasks
WHEN NEW.status IS NOT OLD.status
BEGIN
    INSERT INTO events (id, task_id, topic, name, from_status, to_status, attempt, owner, at)
    SELECT next.id,
           NEW.id, NEW.topic, NEW.name, OLD.status, NEW.status, NEW.attempts, NEW.assignee,
           NEW.updated_at
    FROM next_event_id AS next;
END;

CREATE TRIGGER reports_created AFTER INSERT ON reports
BEGIN
    INSERT INTO events (id, task_id, topic, name, from_status, to_status, attempt, owner, at)
    SELECT next.id,
           '', '', NEW.key, NULL, 'report', NEW.total, NEW.owner, NEW.run_at
    FROM next_event_id AS next;
END;

CREATE TRIGGER reports_updated AFTER UPDATE ON reports
BEGIN
    INSERT INTO events (id, task_id, topic, name, from_status, to_status, attempt, owner, at)
    SELECT next.id,
           '', '', NEW.key, NULL, 'report', NEW.total, NEW.owner, NEW.run_at
    FROM next_event_id AS next;
END;
