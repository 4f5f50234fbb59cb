-- The soak's samples of a PostgreSQL store (benchmarks/soak/sampler.py).

-- Each table of the store's schema: its size with indexes and TOAST, and its
-- dead and live rows as the statistics collector last counted them.
-- name: tables
SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes,
       coalesce(s.n_dead_tup, 0) AS dead, coalesce(s.n_live_tup, 0) AS live
FROM pg_class AS c
JOIN pg_namespace AS n ON n.oid = c.relnamespace
LEFT JOIN pg_stat_user_tables AS s ON s.relid = c.oid
WHERE c.relkind = 'r' AND n.nspname = 'tenure';

-- How long ago the oldest finished task finished, and the oldest event was
-- written, in seconds (NULL: none).
-- name: oldest
SELECT extract(epoch FROM now() - (
           SELECT min(finished_at) FROM tenure.tasks
           WHERE status IN ('done', 'failed', 'cancelled')))::float8 AS finished,
       extract(epoch FROM now() - (SELECT min(at) FROM tenure.events))::float8 AS event;

-- The wait of each task finished in the last :window seconds, from its creation
-- to its start (the soak's tasks end as they start): a walk of tasks_finished,
-- not a scan of the table on the server whose work is measured.
-- name: pickups
SELECT extract(epoch FROM started_at - created_at)::float8 AS seconds
FROM tenure.tasks
WHERE status IN ('done', 'failed', 'cancelled')
  AND finished_at >= now() - make_interval(secs => %(window)s::float8);
