-- Schedules: the periodic tasks declared in code (origin 'code', written by
-- the elected scheduler) and those added at run time (origin 'store', through
-- app.schedules, `tenure periodic add` or the API), one row each.
--
-- last_tick is the newest tick enqueued, written in the transaction that
-- enqueues its task, and a compare-and-set on it makes each tick enqueued once
-- whatever schedulers race. A new schedule starts with the moment it was first
-- seen, so a first start enqueues nothing from before it; a failover resumes
-- from the last tick (bounded by catch_up seconds).
CREATE TABLE schedules (
    name text PRIMARY KEY,
    origin text NOT NULL CHECK (origin IN ('code', 'store')),
    task text NOT NULL,
    cron text,
    every double precision,
    tz text,
    args jsonb NOT NULL,
    kwargs jsonb NOT NULL,
    catch_up double precision NOT NULL,
    paused_at timestamptz,
    last_tick timestamptz NOT NULL,
    last_task_id text,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    CHECK ((cron IS NULL) <> (every IS NULL))
);

-- A task's meta: names and values (text) it was enqueued with to be found by
-- (options(meta=...), tenure tasks --meta name=value). A nullable column
-- without a default rewrites no row. The GIN index answers "meta holds these
-- pairs" (@>) for the tasks that have any; it is built by reading the table
-- once, under a lock that holds writes off for that long (a second or so per
-- million tasks).
ALTER TABLE tasks ADD COLUMN meta jsonb;
CREATE INDEX tasks_meta ON tasks USING gin (meta jsonb_path_ops) WHERE meta IS NOT NULL;
