-- Paused topics: while a topic's row is here, no worker reserves its tasks
-- (the reserve statements read this table themselves); a resume deletes it.
-- A new, empty table: nothing else is read or rewritten. Times are Unix seconds.
CREATE TABLE tenure_paused_topics (
    topic TEXT PRIMARY KEY,
    paused_at REAL NOT NULL
);
