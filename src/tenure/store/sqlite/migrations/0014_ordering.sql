-- The order tasks are taken in.
--
-- Fairness across tenants: a task enqueued with a fair key (a function of its
-- arguments, as a limit key) takes a turn, and the reserve statements take
-- tasks by priority, then turn, then age. A key's task takes the turn after
-- the latest its key holds among the topic's pending tasks, and never one
-- before the first turn pending in its topic at its priority (the round
-- under way, which a new key's task joins), given by insert_task. A
-- task without a key has turn 0: a topic that never uses keys is taken as
-- before, by priority then age.
ALTER TABLE tenure_tasks ADD COLUMN fair_key TEXT;
ALTER TABLE tenure_tasks ADD COLUMN fair_turn INTEGER NOT NULL DEFAULT 0;

-- The order the reserve statements take pending tasks in, now with the turn.
DROP INDEX tenure_tasks_pending_by_topic;
CREATE INDEX tenure_tasks_pending_by_topic ON tenure_tasks (topic, priority DESC, fair_turn, seq)
    WHERE status = 'pending';
DROP INDEX tenure_tasks_pending;
CREATE INDEX tenure_tasks_pending ON tenure_tasks (priority DESC, fair_turn, seq)
    WHERE status = 'pending';

-- A key's latest turn among its topic's pending tasks, and the round under
-- way at a priority: of the tasks that have a fair key only (the others' turn
-- is 0), so that a topic's other tasks are never walked for a turn.
CREATE INDEX tenure_tasks_fair_pending ON tenure_tasks (topic, fair_key, fair_turn)
    WHERE status = 'pending' AND fair_key IS NOT NULL;
CREATE INDEX tenure_tasks_fair_round ON tenure_tasks (topic, priority, fair_turn)
    WHERE status = 'pending' AND fair_key IS NOT NULL;

-- Priority ageing, per topic: a pending task of the topic is taken as if its
-- priority were one higher for every every_seconds it has waited since it
-- became runnable, at most most higher. The reserve statements read the
-- topic's oldest tasks of each priority and rank them with the rest; nothing
-- is written as tasks wait.
CREATE TABLE tenure_topic_ageing (
    topic TEXT PRIMARY KEY,
    every_seconds REAL NOT NULL CHECK (every_seconds >= 0.001),
    most INTEGER NOT NULL CHECK (most > 0),
    set_at REAL NOT NULL
);
