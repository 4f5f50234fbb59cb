-- The worker registry, leaderships for the elected scheduler, and indexes that
-- keep retention pruning cheap. Same version number and the same rules as the
-- SQLite store's 0002_workers_leaders_retention.sql.

-- One row per live worker; started_at is set by its first beat and kept,
-- last_seen by every beat. Times are the store's clock (the database's).
CREATE TABLE workers (
    id          text        PRIMARY KEY,
    host        text        NOT NULL,
    pid         bigint      NOT NULL,
    topics      text[]      NOT NULL DEFAULT '{}',
    tags        text[]      NOT NULL DEFAULT '{}',
    pool        text        NOT NULL,
    concurrency bigint      NOT NULL,
    held        bigint      NOT NULL DEFAULT 0,
    started_at  timestamptz NOT NULL,
    last_seen   timestamptz NOT NULL
);

-- One row per leadership. owner is NULL while vacant; record_ver grows with
-- every write, so standbys can watch it on their own monotonic clocks.
CREATE TABLE leaders (
    name          text             PRIMARY KEY,
    owner         text,
    token         bigint,
    record_ver    bigint           NOT NULL,
    lease_seconds double precision NOT NULL,
    updated_at    timestamptz      NOT NULL,
    CONSTRAINT leaders_owner_iff_token CHECK ((owner IS NULL) = (token IS NULL))
);

-- Retention: finished tasks by the time they finished (the predicate is the
-- one prune_tasks states, so the planner can walk this index), events by time.
CREATE INDEX tasks_finished ON tasks (finished_at)
    WHERE status IN ('done', 'failed', 'cancelled');
CREATE INDEX events_by_time ON events (at);
