-- The worker registry, leaderships for the elected scheduler, and indexes that
-- keep retention pruning cheap.

CREATE TABLE workers (
    id          TEXT    PRIMARY KEY,
    host        TEXT    NOT NULL,
    pid         INTEGER NOT NULL,
    topics      TEXT    NOT NULL DEFAULT '[]',
    tags        TEXT    NOT NULL DEFAULT '[]',
    pool        TEXT    NOT NULL,
    concurrency INTEGER NOT NULL,
    held        INTEGER NOT NULL DEFAULT 0,
    started_at  REAL    NOT NULL,
    last_seen   REAL    NOT NULL
);

-- One row per leadership. owner is NULL while vacant; record_ver grows with
-- every write, so standbys can watch it on their own monotonic clocks.
CREATE TABLE leaders (
    name          TEXT    PRIMARY KEY,
    owner         TEXT,
    token         INTEGER,
    record_ver    INTEGER NOT NULL,
    lease_seconds REAL    NOT NULL,
    updated_at    REAL    NOT NULL,
    CHECK ((owner IS NULL) = (token IS NULL))
);

CREATE INDEX tasks_finished ON tasks (finished_at)
    WHERE status IN ('done', 'failed', 'cancelled');
CREATE INDEX events_by_time ON events (at);
