-- Tallies: how many tasks each topic has in each status, and how many entered
-- each status per minute, kept as the tasks change, so that reading them (for
-- stats, metrics and the dashboard) costs the same with a million tasks as with
-- ten. Counting the tasks table instead reads every row of it.
--
-- Writers only ever append delta rows (no row is updated, so concurrent writers
-- never wait on each other); the scheduler folds the deltas into one row per
-- key now and then (fold_task_tallies). A reader sums the rows of a key, so it
-- sees exact figures, in step with the tasks its snapshot sees, folded or not.
--
-- task_transitions counts entries into a status (a creation enters its first
-- status) per minute. A minute's delta rows are folded into one row per key
-- (folded = true) once the minute is over; minutes older than a day are folded
-- into rows with minute NULL, so the sum per key stays the total since the start.

CREATE TABLE task_counts (
    topic  text   NOT NULL,
    status text   NOT NULL,
    n      bigint NOT NULL
);
CREATE INDEX task_counts_by_key ON task_counts (topic, status);

CREATE TABLE task_transitions (
    minute timestamptz,
    topic  text    NOT NULL,
    status text    NOT NULL,
    n      bigint  NOT NULL,
    folded boolean NOT NULL DEFAULT false
);
CREATE INDEX task_transitions_by_minute ON task_transitions (minute);
CREATE INDEX task_transitions_to_fold ON task_transitions (minute) WHERE NOT folded;

CREATE FUNCTION tenure_tasks_tallied_created() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_counts (topic, status, n)
    SELECT topic, status, count(*) FROM created GROUP BY topic, status;
    INSERT INTO task_transitions (minute, topic, status, n)
    SELECT date_trunc('minute', now()), topic, status, count(*)
    FROM created GROUP BY topic, status;
    RETURN NULL;
END;
$$;

CREATE FUNCTION tenure_tasks_tallied_updated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_counts (topic, status, n)
    SELECT topic, status, sum(n)
    FROM (
        SELECT n.topic, n.status, 1 AS n
        FROM after_rows AS n JOIN before_rows AS o USING (seq)
        WHERE n.status IS DISTINCT FROM o.status
        UNION ALL
        SELECT o.topic, o.status, -1
        FROM after_rows AS n JOIN before_rows AS o USING (seq)
        WHERE n.status IS DISTINCT FROM o.status
    ) AS change
    GROUP BY topic, status;
    INSERT INTO task_transitions (minute, topic, status, n)
    SELECT date_trunc('minute', now()), n.topic, n.status, count(*)
    FROM after_rows AS n JOIN before_rows AS o USING (seq)
    WHERE n.status IS DISTINCT FROM o.status
    GROUP BY n.topic, n.status;
    RETURN NULL;
END;
$$;

CREATE FUNCTION tenure_tasks_tallied_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO task_counts (topic, status, n)
    SELECT topic, status, -count(*) FROM deleted GROUP BY topic, status;
    RETURN NULL;
END;
$$;

CREATE TRIGGER tasks_tallied_created AFTER INSERT ON tasks
REFERENCING NEW TABLE AS created
FOR EACH STATEMENT EXECUTE FUNCTION tenure_tasks_tallied_created();

CREATE TRIGGER tasks_tallied_updated AFTER UPDATE ON tasks
REFERENCING OLD TABLE AS before_rows NEW TABLE AS after_rows
FOR EACH STATEMENT EXECUTE FUNCTION tenure_tasks_tallied_updated();

CREATE TRIGGER tasks_tallied_deleted AFTER DELETE ON tasks
REFERENCING OLD TABLE AS deleted
FOR EACH STATEMENT EXECUTE FUNCTION tenure_tasks_tallied_deleted();

-- The tasks already there: the triggers' lock on tasks (taken above, held until
-- this migration commits) keeps writers out meanwhile, so the count is exact.
INSERT INTO task_counts (topic, status, n)
SELECT topic, status, count(*) FROM tasks GROUP BY topic, status;
INSERT INTO task_transitions (minute, topic, status, n, folded)
SELECT NULL, topic, status, count(*), true FROM tasks GROUP BY topic, status;
