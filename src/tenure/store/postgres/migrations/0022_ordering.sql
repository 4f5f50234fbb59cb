-- The order tasks are taken in.
--
-- Fairness across tenants: a task enqueued with a fair key (a function of its
-- arguments, as a limit key) takes a turn, and the reserve statements take
-- tasks by priority, then turn, then age. A key's task takes the turn after
-- the latest its key holds among the topic's pending tasks, and never one
-- before the first turn pending in its topic at its priority (the round
-- under way): a key with 100,000 tasks queued holds turns far ahead,
-- and another key's lone task, enqueued now, joins the current round, taken
-- after at most one task of each key in it. A task without a key has turn 0: a topic
-- that never uses keys is taken as before, by priority then age.
--
-- Turns are counted from the pending tasks by the enqueueing statement
-- (queries.sql's fair_turn), not kept in a row every producer would write. Two
-- producers enqueueing one key at once may give two tasks the same turn;
-- their age orders them.
ALTER TABLE {schema}.tasks ADD COLUMN fair_key text;
ALTER TABLE {schema}.tasks ADD COLUMN fair_turn bigint NOT NULL DEFAULT 0;

-- The order the reserve statements take pending tasks in, now with the turn.
-- Built anew (the pending tasks only, though the build reads the table).
DROP INDEX {schema}.tasks_pending_by_topic;
CREATE INDEX tasks_pending_by_topic ON {schema}.tasks (topic, priority DESC, fair_turn, seq)
    WHERE status = 'pending';
DROP INDEX {schema}.tasks_pending;
CREATE INDEX tasks_pending ON {schema}.tasks (priority DESC, fair_turn, seq)
    WHERE status = 'pending';

-- A key's latest turn among its topic's pending tasks, and the round under
-- way at a priority: of the tasks that have a fair key only (the others' turn
-- is 0), so that a topic's other tasks are never walked for a turn.
CREATE INDEX tasks_fair_pending ON {schema}.tasks (topic, fair_key, fair_turn)
    WHERE status = 'pending' AND fair_key IS NOT NULL;
CREATE INDEX tasks_fair_round ON {schema}.tasks (topic, priority, fair_turn)
    WHERE status = 'pending' AND fair_key IS NOT NULL;

-- Priority ageing, per topic: a pending task of the topic is taken as if its
-- priority were one higher for every every_seconds it has waited since it
-- became runnable, at most most higher. The reserve statements read the
-- topic's oldest tasks of each priority (a probe of tasks_pending_by_topic a
-- priority) and rank them with the rest; nothing is written as tasks wait.
CREATE TABLE {schema}.topic_ageing (
    topic text PRIMARY KEY,
    every_seconds float8 NOT NULL CHECK (every_seconds >= 0.001),
    most bigint NOT NULL CHECK (most > 0),
    set_at timestamptz NOT NULL
);
