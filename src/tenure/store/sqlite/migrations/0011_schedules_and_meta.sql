-- Schedules: the periodic tasks declared in code (origin 'code', written by
-- the elected scheduler) and those added at run time (origin 'store', through
-- app.schedules, `tenure periodic add` or the API), one row each.
--
-- last_tick is the newest tick enqueued, written in the transaction that
-- enqueues its task, and a compare-and-set on it makes each tick enqueued once
-- whatever schedulers race. A new schedule starts with the moment it was first
-- seen, so a first start enqueues nothing from before it; a failover resumes
-- from the last tick (bounded by catch_up seconds). Times are Unix seconds.
CREATE TABLE tenure_schedules (
    name TEXT PRIMARY KEY,
    origin TEXT NOT NULL CHECK (origin IN ('code', 'store')),
    task TEXT NOT NULL,
    cron TEXT,
    every REAL,
    tz TEXT,
    args TEXT NOT NULL,
    kwargs TEXT NOT NULL,
    catch_up REAL NOT NULL,
    paused_at REAL,
    last_tick REAL NOT NULL,
    last_task_id TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    CHECK ((cron IS NULL) <> (every IS NULL))
);

-- A task's meta: names and values (text) it was enqueued with to be found by
-- (options(meta=...), tenure tasks --meta name=value), as a JSON object. A
-- nullable column rewrites no row. Filters on it read each listed row's
-- object: SQLite has no index for JSON containment.
ALTER TABLE tenure_tasks ADD COLUMN meta TEXT;
