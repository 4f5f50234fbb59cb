-- Per topic, how many times tasks entered each status (a creation enters its
-- first), since the database had this table: the counters metrics export for
-- rate(). Counting the events instead would make them go down whenever
-- retention prunes the log, and a counter must never go down.
--
-- Each event a task writes adds one, in the transaction that writes it, so the
-- totals count exactly what the log records (a start refused by a unique lock
-- is two events, so two entries). Reports are not transitions. The events
-- already kept are counted once, here.

CREATE TABLE task_transition_totals (
    topic  TEXT    NOT NULL,
    status TEXT    NOT NULL,
    n      INTEGER NOT NULL,
    PRIMARY KEY (topic, status)
) WITHOUT ROWID;

CREATE TRIGGER events_tallied AFTER INSERT ON events
WHEN NEW.to_status <> 'report'
BEGIN
    INSERT INTO task_transition_totals (topic, status, n) VALUES (NEW.topic, NEW.to_status, 1)
    ON CONFLICT (topic, status) DO UPDATE SET n = n + 1;
END;

INSERT INTO task_transition_totals (topic, status, n)
SELECT topic, to_status, count(*) FROM events WHERE to_status <> 'report'
GROUP BY topic, to_status;
