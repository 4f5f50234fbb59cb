-- Paused topics: while a topic's row is here, no worker reserves its tasks
-- (the reserve statements read this table themselves); a resume deletes it.
-- A new, empty table: nothing else is read or rewritten.
CREATE TABLE paused_topics (
    topic text PRIMARY KEY,
    paused_at timestamptz NOT NULL
);
