-- The soak's samples of a SQLite store (benchmarks/soak/sampler.py). Times
-- are seconds since the epoch, as the store keeps them.

-- How long before :now the oldest finished task finished, and the oldest event
-- was written (NULL: none).
-- name: oldest
SELECT :now - (SELECT min(finished_at) FROM tenure_tasks
               WHERE status IN ('done', 'failed', 'cancelled')) AS finished,
       :now - (SELECT min(at) FROM tenure_events) AS event;

-- The wait of each task finished since :since, from its creation to its start
-- (the soak's tasks end as they start): a walk of tenure_tasks_finished.
-- name: pickups
SELECT started_at - created_at AS seconds FROM tenure_tasks
WHERE status IN ('done', 'failed', 'cancelled') AND finished_at >= :since;

-- Pages of the file that hold no row, to be reused before it grows.
-- name: free_pages
PRAGMA freelist_count;
