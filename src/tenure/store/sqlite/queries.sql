-- Named queries of the SQLite store. Each starts with "-- name: <name>".
-- Parameters are named (:param). Times are Unix epoch seconds; :now is the
-- store's clock unless the caller passed one.
--
-- A query has the same name in both dialects' queries.sql, whichever runs it
-- once per item and whichever once per batch; a query that exists in one
-- dialect only is listed, with the reason, in tests/unit/test_dialect_symmetry.py.

-- Transactions. A write takes the database's write lock from its start, so
-- concurrent writers queue on busy_timeout instead of failing to upgrade a
-- read lock; in a caller's transaction a batch runs under a savepoint.
-- name: begin_write
BEGIN IMMEDIATE;

-- Sent as a statement, which sqlite3 keeps prepared in its cache: its
-- Connection.commit() prepares COMMIT anew at every call (5 to 7 µs of a
-- one-task enqueue's processor time on a 2-core machine).
-- name: commit
COMMIT;

-- name: savepoint
SAVEPOINT tenure_create;

-- name: rollback_to_savepoint
ROLLBACK TO tenure_create;

-- name: release_savepoint
RELEASE tenure_create;

-- Values by position (rows.insert_row, in rows.INSERT_COLUMNS' order), ?13 the
-- creation time: sqlite3 binds a value by name with a lookup of the name for
-- each value of each row, a tenth of a batch's whole write. ?19 is the status:
-- pending, or waiting for a flow's task behind a gate (Store.flow_create),
-- whose gates are ?20 and ?21. The last value, the fair turn, is computed.
-- name: insert_task
INSERT INTO tenure_tasks (
    id, topic, sub_topic, name, status, data, group_id, description, priority,
    max_attempts, tags, timeout, run_at, created_at, updated_at,
    unique_key, unique_lock, unique_on_conflict, unique_ttl, unique_retry_in,
    gate_in, gate_out, meta, expires_at, limit_key, limit_max, order_key, fair_key, fair_turn
) VALUES (
    ?1, ?2, ?3, ?4, ?19, ?5, ?6, ?7, ?8,
    ?9, ?10, ?11, ?12, ?13, ?13,
    ?14, ?15, ?16, ?17, ?18,
    ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27,
    -- A fair key's task (0014_ordering.sql) takes the later of the turn after
    -- its key's latest pending one and the round under way at its priority
    -- (the tasks of a batch before it are pending already).
    CASE WHEN ?27 IS NULL THEN 0 ELSE max(
        COALESCE((SELECT h.fair_turn FROM tenure_tasks AS h INDEXED BY tenure_tasks_fair_round
                  WHERE h.status = 'pending' AND h.fair_key IS NOT NULL
                    AND h.topic = ?2 AND h.priority = ?8
                    AND (h.run_at IS NULL OR h.run_at <= ?13)
                  ORDER BY h.fair_turn LIMIT 1), 0),
        COALESCE((SELECT k.fair_turn + 1 FROM tenure_tasks AS k INDEXED BY tenure_tasks_fair_pending
                  WHERE k.status = 'pending' AND k.fair_key IS NOT NULL
                    AND k.topic = ?2 AND k.fair_key = ?27
                  ORDER BY k.fair_turn DESC LIMIT 1), 0)) END
);

-- A flow's gates, each with all its members remaining.
-- name: insert_gates
INSERT INTO tenure_gates (id, mode, shape, remaining, created_at)
VALUES (:id, :mode, :shape, :remaining, :now);

-- name: get_gate
SELECT id, mode, shape, remaining, created_at, opened_at, broken_at
FROM tenure_gates WHERE id = :id;

-- name: existing_ids
SELECT id FROM tenure_tasks WHERE id IN (SELECT value FROM json_each(:ids));

-- name: get_task
SELECT * FROM tenure_tasks WHERE id = :id;

-- name: list_group
SELECT * FROM tenure_tasks WHERE group_id = :group_id ORDER BY seq;

-- The filters (index_filters, row_filters) are at the end, with the listings
-- whose work a scan bounds.
-- name: list_tasks
SELECT * FROM tenure_tasks
WHERE seq > :after {index_filters} {row_filters}
ORDER BY seq
LIMIT :limit;

-- The same, newest first: from the position before :before, backwards.
-- name: list_tasks_newest
SELECT * FROM tenure_tasks
WHERE seq < :before {index_filters} {row_filters}
ORDER BY seq DESC
LIMIT :limit;

-- name: list_leased
SELECT * FROM tenure_tasks
WHERE status IN ('running', 'snoozed') AND seq > :after
ORDER BY seq
LIMIT :limit;

-- name: list_leased_topics
SELECT * FROM tenure_tasks
WHERE status IN ('running', 'snoozed') AND seq > :after
  AND topic IN (SELECT value FROM json_each(:topics))
ORDER BY seq
LIMIT :limit;

-- SQLite serialises writers (BEGIN IMMEDIATE), so events commit in id order
-- and paging by id alone skips none: the cursor's transaction part is always 0.
-- One row comes back even when there is no event, carrying how far retention
-- has pruned (a cursor older than that may have lost history).
-- name: list_events
SELECT coalesce((SELECT pruned_id FROM tenure_event_log), 0) AS pruned_id, e.*
FROM (SELECT 1) AS one
LEFT JOIN (SELECT * FROM tenure_events WHERE id > :after ORDER BY id LIMIT :limit) AS e ON 1
ORDER BY e.id;

-- Reserve: take the first :limit runnable rows, highest priority first, then
-- oldest. A NULL run_at runs at once: no clock is compared for it. A task's tags
-- must all be among the worker's (:tags, a JSON array).
--
-- INDEXED BY names the partial index of pending rows that yields them in that
-- order, so the scan stops after :limit matches. Left to itself, the planner
-- (without statistics) picks tenure_tasks_by_status and sorts every pending row on
-- each reserve: 30 times slower with 20,000 pending. One topic scans that
-- topic's index; several scan all pending rows in order and skip the others'.
--
-- What a reservation writes on the rows it picked: running, one more attempt,
-- leased to the owner for lease_seconds, the lease token one above the version
-- it read.
-- fragment: lease_picked
UPDATE tenure_tasks
SET status = 'running',
    attempts = attempts + 1,
    assignee = :owner,
    lease_owner = :owner,
    lease_token = record_ver + 1,
    lease_seconds = :lease_seconds,
    lease_expires_at = :now + :lease_seconds,
    started_at = :now,
    finished_at = NULL,
    duration = NULL,
    progress = NULL,
    progress_note = NULL,
    record_ver = record_ver + 1,
    updated_at = :now

-- Limits (0013_limits.sql): the room each topic's limit and rate leaves,
-- counted once a statement (topic_rooms, MATERIALIZED: a subquery would count
-- again for every row it is asked about). A topic without room is not taken
-- (as a paused topic's); in the scan, no task of a limit key at its most, and
-- of an ordered key only the first unfinished task, while none of it runs.
-- The scan so passes over the tasks that cannot start (a full key's backlog
-- blocks no other key); within_room then takes, of the rows offered, as many
-- per topic and per key as there is room for. The write transaction is
-- SQLite's only one: nothing starts a task between the counts and the writes.
-- fragment: topic_rooms
SELECT l.topic, l.max_running - (SELECT count(*) FROM tenure_tasks AS r
                                 WHERE r.status = 'running' AND r.topic = l.topic) AS room
FROM tenure_topic_limits AS l
UNION ALL
SELECT r.topic, r.max_starts - (SELECT count(*) FROM tenure_rate_starts AS s
                                WHERE s.topic = r.topic AND s.at > :now - r.per_seconds)
FROM tenure_topic_rates AS r

-- fragment: within_limits
AND (limit_key IS NULL OR limit_key NOT IN (
    SELECT r.limit_key FROM tenure_tasks AS r INDEXED BY tenure_tasks_limited_running
    WHERE r.status = 'running' AND r.limit_key IS NOT NULL
    GROUP BY r.limit_key HAVING count(*) >= min(r.limit_max)))
AND (order_key IS NULL OR NOT EXISTS (
    SELECT 1 FROM tenure_tasks AS e
    WHERE e.order_key = tenure_tasks.order_key AND e.seq < tenure_tasks.seq
      AND e.status IN ('waiting', 'pending', 'running', 'snoozed')))

-- Of the rows offered (c, numbered in the order taken per topic and per key),
-- the first ones of each topic and key up to the room left under its limit
-- (a key's most: the smallest its offered tasks give, as PostgreSQL's), and
-- an ordered key's first while none of it runs.
-- fragment: within_room
NOT EXISTS (SELECT 1 FROM topic_rooms AS t WHERE t.topic = c.topic AND t.room < c.nth_in_topic)
AND (c.limit_key IS NULL OR c.nth_in_key <= c.key_most - (
    SELECT count(*) FROM tenure_tasks AS r INDEXED BY tenure_tasks_limited_running
    WHERE r.status = 'running' AND r.limit_key = c.limit_key))
AND (c.order_key IS NULL OR NOT EXISTS (
    SELECT 1 FROM tenure_tasks AS r INDEXED BY tenure_tasks_ordered
    WHERE r.order_key = c.order_key
      AND r.status IN ('waiting', 'pending', 'running', 'snoozed') AND r.status = 'running'))

-- Priority ageing (0014_ordering.sql): the topics in scope (:scope, a JSON
-- list of the reservation's topics, NULL for any) that age, and are neither
-- paused nor full; the priorities their pending tasks have (levels, each
-- found by one probe of tenure_tasks_pending_by_topic: a loose scan of the
-- index); and of each priority, the first :limit runnable tasks by turn and
-- age. A priority's tasks are ranked together, by its priority raised by one
-- for every every_seconds the longest waiting of them has waited since it
-- became runnable (its run_at, or its last change: a retry, a release), at
-- most most: within a priority, tasks keep their order (turn, then age), and
-- the topics' backlogs are never read whole. Each level walks past the tasks
-- of its priority that cannot start, as the plain scan does.
-- fragment: ageing
aged AS MATERIALIZED (
    SELECT a.topic, a.every_seconds, a.most FROM tenure_topic_ageing AS a
    WHERE (:scope IS NULL OR a.topic IN (SELECT value FROM json_each(:scope)))
      AND a.topic NOT IN (SELECT topic FROM tenure_paused_topics)
      AND a.topic NOT IN (SELECT topic FROM topic_rooms WHERE room <= 0)
),
levels (topic, priority) AS (
    SELECT a.topic, (SELECT t.priority FROM tenure_tasks AS t
                     INDEXED BY tenure_tasks_pending_by_topic
                     WHERE t.status = 'pending' AND t.topic = a.topic
                     ORDER BY t.priority DESC LIMIT 1)
    FROM aged AS a
    UNION ALL
    SELECT l.topic, (SELECT t.priority FROM tenure_tasks AS t
                     INDEXED BY tenure_tasks_pending_by_topic
                     WHERE t.status = 'pending' AND t.topic = l.topic AND t.priority < l.priority
                     ORDER BY t.priority DESC LIMIT 1)
    FROM levels AS l WHERE l.priority IS NOT NULL
),
ageing AS (
    SELECT o.seq,
           o.priority + max(min(a.most, max(0, CAST(
               (:now - max(coalesce(o.run_at, o.updated_at), o.updated_at))
               / a.every_seconds AS INTEGER)))) OVER (PARTITION BY o.topic, o.priority) AS rank,
           o.priority, o.fair_turn, o.topic, o.limit_key, o.limit_max, o.order_key
    FROM levels AS l
    JOIN aged AS a ON a.topic = l.topic
    JOIN tenure_tasks AS o ON o.seq IN (
        SELECT seq FROM tenure_tasks INDEXED BY tenure_tasks_pending_by_topic
        WHERE {runnable}
          AND topic = l.topic AND priority = l.priority
        ORDER BY fair_turn, seq
        LIMIT :limit)
    WHERE l.priority IS NOT NULL
)

-- What makes a pending task runnable by this reservation, in the plain scans
-- and the ageing levels alike: due, not past its deadline, its tags all
-- among the worker's, and within its key's limit and its ordered key's turn.
-- fragment: runnable
status = 'pending' AND (run_at IS NULL OR run_at <= :now)
          AND (expires_at IS NULL OR expires_at > :now)
          AND (tags = '[]' OR NOT EXISTS (
              SELECT 1 FROM json_each(tenure_tasks.tags) AS t
              WHERE t.value NOT IN (SELECT value FROM json_each(:tags))))
          {within_limits}

-- The rows a reservation takes, of the plain scan's (CTE plain) and the
-- ageing levels': the first :limit by rank, priority, turn, then age, and of
-- those the ones within the room their topic's and key's limits leave.
-- fragment: take_within_room
SELECT c.seq FROM (
        SELECT seq, topic, limit_key, order_key,
               row_number() OVER (PARTITION BY topic
                                  ORDER BY rank DESC, priority DESC, fair_turn, seq)
                   AS nth_in_topic,
               row_number() OVER (PARTITION BY limit_key
                                  ORDER BY rank DESC, priority DESC, fair_turn, seq)
                   AS nth_in_key,
               min(limit_max) OVER (PARTITION BY limit_key) AS key_most
        FROM (
            SELECT * FROM plain
            UNION ALL
            SELECT * FROM ageing
            ORDER BY rank DESC, priority DESC, fair_turn, seq
            LIMIT :limit
        )
    ) AS c
    WHERE {within_room}

-- A reserved task's rank (see ageing: its own wait, where the reservation
-- ranked its priority's tasks together by the longest), for the order a
-- worker starts them in. The write sets updated_at: the wait is read from
-- run_at, else from created_at.
-- fragment: rank
priority + coalesce((SELECT min(a.most, max(0, CAST(
                         (:now - coalesce(tenure_tasks.run_at, tenure_tasks.created_at))
                         / a.every_seconds AS INTEGER)))
                     FROM tenure_topic_ageing AS a WHERE a.topic = tenure_tasks.topic), 0)

-- name: reserve_any
{lease_picked}
WHERE seq IN (
    WITH RECURSIVE topic_rooms AS MATERIALIZED ({topic_rooms}),
    {ageing},
    plain AS (
        SELECT seq, priority AS rank, priority, fair_turn, topic, limit_key, limit_max, order_key
        FROM tenure_tasks INDEXED BY tenure_tasks_pending
        WHERE {runnable}
          AND topic NOT IN (SELECT topic FROM tenure_paused_topics)
          AND topic NOT IN (SELECT topic FROM topic_rooms WHERE room <= 0)
          AND topic NOT IN (SELECT topic FROM aged)
        ORDER BY priority DESC, fair_turn, seq
        LIMIT :limit
    )
    {take_within_room}
)
RETURNING *, {rank} AS rank;

-- name: reserve_topic
{lease_picked}
WHERE seq IN (
    WITH RECURSIVE topic_rooms AS MATERIALIZED ({topic_rooms}),
    {ageing},
    plain AS (
        SELECT seq, priority AS rank, priority, fair_turn, topic, limit_key, limit_max, order_key
        FROM tenure_tasks INDEXED BY tenure_tasks_pending_by_topic
        WHERE {runnable}
          AND topic = :topic
          AND :topic NOT IN (SELECT topic FROM tenure_paused_topics)
          AND :topic NOT IN (SELECT topic FROM topic_rooms WHERE room <= 0)
          AND topic NOT IN (SELECT topic FROM aged)
        ORDER BY priority DESC, fair_turn, seq
        LIMIT :limit
    )
    {take_within_room}
)
RETURNING *, {rank} AS rank;

-- name: reserve_topics
{lease_picked}
WHERE seq IN (
    WITH RECURSIVE topic_rooms AS MATERIALIZED ({topic_rooms}),
    {ageing},
    plain AS (
        SELECT seq, priority AS rank, priority, fair_turn, topic, limit_key, limit_max, order_key
        FROM tenure_tasks INDEXED BY tenure_tasks_pending
        WHERE {runnable}
          AND topic IN (SELECT value FROM json_each(:topics)
                        WHERE value NOT IN (SELECT topic FROM tenure_paused_topics)
                          AND value NOT IN (SELECT topic FROM topic_rooms WHERE room <= 0))
          AND topic NOT IN (SELECT topic FROM aged)
        ORDER BY priority DESC, fair_turn, seq
        LIMIT :limit
    )
    {take_within_room}
)
RETURNING *, {rank} AS rank;

-- Holder writes: each matches only while the task runs under the named lease.
-- Each answers with the whole task (a single write) or, as <name>_brief, with
-- its state (a batch). A batch runs its query once per lease, in one
-- transaction; the names are PostgreSQL's, whose queries take the whole batch.
-- Which of these leases (a JSON array of [id, token, owner]) are no longer
-- held: their task not running under that lease any more. By id alone.
-- name: leases_lost
SELECT json_extract(held.value, '$[0]') AS id
FROM json_each(:held) AS held
WHERE NOT EXISTS (
    SELECT 1 FROM tenure_tasks AS t
    WHERE t.id = json_extract(held.value, '$[0]') AND t.status = 'running'
      AND t.lease_token = json_extract(held.value, '$[1]')
      AND t.assignee = json_extract(held.value, '$[2]')
);

-- fragment: extend_leases_write
UPDATE tenure_tasks
SET lease_expires_at = :now + :lease_seconds,
    lease_seconds = :lease_seconds,
    record_ver = record_ver + 1,
    updated_at = :now
WHERE id = :id AND status = 'running' AND lease_token = :token AND assignee = :owner
  AND lease_expires_at >= :now

-- name: extend_leases
{extend_leases_write}
RETURNING *;

-- name: extend_leases_brief
{extend_leases_write}
RETURNING id, status, attempts, record_ver;

-- fragment: complete_tasks_write
UPDATE tenure_tasks
SET status = 'done',
    result = :result,
    finished_at = :now,
    duration = :now - started_at,
    lease_owner = NULL,
    lease_expires_at = NULL,
    record_ver = record_ver + 1,
    updated_at = :now
WHERE id = :id AND status = 'running' AND lease_token = :token AND assignee = :owner

-- name: complete_tasks
{complete_tasks_write}
RETURNING *;

-- name: complete_tasks_brief
{complete_tasks_write}
RETURNING id, status, attempts, record_ver;

-- An attempt's error, :error, kept in errors with the attempt and :now (the
-- last 20, each traceback's last 8 KB), as PostgreSQL's trigger
-- tasks_wrote_error keeps it (0018_flows_and_errors.sql). In the statement that
-- writes the error, not in a trigger: an UPDATE's RETURNING shows no change a
-- trigger made after it. An aggregate reads a subquery with ORDER BY in order.
-- fragment: errors_kept
(SELECT json_group_array(json(entry)) FROM (
    SELECT entry FROM (
        SELECT value AS entry, key AS n FROM json_each(coalesce(errors, '[]'))
        UNION ALL
        SELECT json_object('type', json_extract(:error, '$.type'),
                           'message', json_extract(:error, '$.message'),
                           'traceback', substr(json_extract(:error, '$.traceback'), -8192),
                           'attempt', attempts, 'at', :now), 2147483647
        ORDER BY n DESC LIMIT 20)
    ORDER BY n))

-- A retry is granted only while attempts remain; otherwise the task fails.
-- fragment: fail_tasks_write
UPDATE tenure_tasks
SET status = CASE WHEN :retry_in IS NOT NULL AND attempts < max_attempts
                  THEN 'pending' ELSE 'failed' END,
    run_at = CASE WHEN :retry_in IS NOT NULL AND attempts < max_attempts
                  THEN (CASE WHEN :retry_in > 0 THEN :now + :retry_in END)
                  ELSE run_at END,
    priority = CASE WHEN :retry_in IS NOT NULL AND attempts < max_attempts
                    THEN priority - :priority_step ELSE priority END,
    finished_at = CASE WHEN :retry_in IS NOT NULL AND attempts < max_attempts
                       THEN NULL ELSE :now END,
    error = json_set(:error, '$.attempt', attempts),
    errors = {errors_kept},
    duration = :now - started_at,
    lease_owner = NULL,
    lease_expires_at = NULL,
    record_ver = record_ver + 1,
    updated_at = :now
WHERE id = :id AND status = 'running' AND lease_token = :token AND assignee = :owner

-- name: fail_tasks
{fail_tasks_write}
RETURNING *;

-- name: fail_tasks_brief
{fail_tasks_write}
RETURNING id, status, attempts, record_ver;

-- A snooze is a pause, not an attempt. lease_seconds holds the snooze length,
-- which the supervisor projects on its own monotonic clock; lease_expires_at
-- shows the wake-up time by the snoozer's clock, for people only.
-- name: snooze_task
UPDATE tenure_tasks
SET status = 'snoozed',
    attempts = attempts - 1,
    lease_owner = NULL,
    lease_seconds = :seconds,
    lease_expires_at = :now + :seconds,
    duration = :now - started_at,
    record_ver = record_ver + 1,
    updated_at = :now
WHERE id = :id AND status = 'running' AND lease_token = :token AND assignee = :owner
RETURNING *;

-- A task that cancels itself (tenure.Cancel): cancelled at once, whatever
-- attempts remain, with the reason as its error.
-- name: cancel_held_task
UPDATE tenure_tasks
SET status = 'cancelled',
    finished_at = :now,
    error = json_set(:error, '$.attempt', attempts),
    errors = {errors_kept},
    duration = :now - started_at,
    lease_owner = NULL,
    lease_expires_at = NULL,
    record_ver = record_ver + 1,
    updated_at = :now
WHERE id = :id AND status = 'running' AND lease_token = :token AND assignee = :owner
RETURNING *;

-- A running task's progress (tenure.current().progress): a holder write like
-- the others, so a stale lease changes nothing; no event (not a transition).
-- A new attempt starts without progress (lease_picked clears it).
-- name: progress_task_brief
UPDATE tenure_tasks
SET progress = :progress,
    progress_note = :note,
    record_ver = record_ver + 1,
    updated_at = :now
WHERE id = :id AND status = 'running' AND lease_token = :token AND assignee = :owner
RETURNING id, status, attempts, record_ver;

-- name: release_task
UPDATE tenure_tasks
SET status = 'pending',
    attempts = attempts - 1,
    lease_owner = NULL,
    lease_expires_at = NULL,
    lease_seconds = NULL,
    record_ver = record_ver + 1,
    updated_at = :now
WHERE id = :id AND status = 'running' AND lease_token = :token AND assignee = :owner
RETURNING *;

-- Revoke by compare-and-set on record_ver. A running task with no attempt left
-- fails (a task that kills its workers must not loop forever); otherwise it and
-- any snoozed task go back to pending. The lease token is cleared: the old
-- holder's writes are refused from now on.
-- name: revoke_task
UPDATE tenure_tasks
SET status = CASE WHEN status = 'running' AND attempts >= max_attempts
                  THEN 'failed' ELSE 'pending' END,
    error = CASE WHEN status = 'running' AND attempts >= max_attempts
                 THEN json_set(:error, '$.attempt', attempts) ELSE error END,
    errors = CASE WHEN status = 'running' AND attempts >= max_attempts
                  THEN {errors_kept} ELSE errors END,
    finished_at = CASE WHEN status = 'running' AND attempts >= max_attempts
                       THEN :now ELSE finished_at END,
    lease_owner = NULL,
    lease_expires_at = NULL,
    lease_token = NULL,
    lease_seconds = NULL,
    record_ver = record_ver + 1,
    updated_at = :now
WHERE id = :id AND record_ver = :record_ver AND status IN ('running', 'snoozed')
RETURNING *;

-- name: cancel_task
UPDATE tenure_tasks
SET status = 'cancelled',
    finished_at = :now,
    lease_owner = NULL,
    lease_expires_at = NULL,
    lease_token = NULL,
    lease_seconds = NULL,
    record_ver = record_ver + 1,
    updated_at = :now
WHERE id = :id AND status IN (SELECT value FROM json_each(:sources))
RETURNING *;

-- name: retry_task
UPDATE tenure_tasks
SET status = 'pending',
    attempts = 0,
    run_at = NULL,
    finished_at = NULL,
    lease_token = NULL,
    record_ver = record_ver + 1,
    updated_at = :now
WHERE id = :id AND status IN (SELECT value FROM json_each(:sources))
RETURNING *;

-- Migration ledger: which numbered migrations this database has applied.
-- name: create_migration_ledger
CREATE TABLE IF NOT EXISTS tenure_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at REAL NOT NULL
);

-- name: applied_migrations
SELECT version FROM tenure_migrations;

-- name: record_migration
INSERT INTO tenure_migrations (version, name, applied_at) VALUES (:version, :name, :now);

-- What a build of every migration in a private database holds, to copy into a
-- new one (tenure.store.sqlite.schema.built): its objects in the order they
-- were made (the rowid of sqlite_master; a later object only ever depends on
-- earlier ones), without those SQLite makes itself (a table's automatic
-- indexes, which have no SQL; sqlite_sequence).
-- name: built_objects
SELECT type, name, sql FROM sqlite_master
WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\_%' ESCAPE '\'
ORDER BY rowid;

-- name: built_columns
SELECT name FROM pragma_table_info(:table) ORDER BY cid;

-- A value as a SQL literal, in SQLite's own spelling (a REAL in as many digits
-- as it takes to read back the same).
-- name: literal
SELECT quote(:value);

-- Connection settings (values cannot be bound in a PRAGMA, so each allowed
-- setting is its own query).
-- name: use_wal
PRAGMA journal_mode = WAL;

-- name: synchronous_full
PRAGMA synchronous = FULL;

-- name: synchronous_normal
PRAGMA synchronous = NORMAL;

-- name: synchronous_extra
PRAGMA synchronous = EXTRA;

-- A private :memory: store's temporary file: nothing in it outlives the process.
-- name: synchronous_off
PRAGMA synchronous = OFF;

-- name: count_tasks
SELECT count(*) AS count FROM tenure_tasks WHERE true {index_filters} {row_filters};

-- Retention: finished tasks and old events go in bounded batches.
-- Along tenure_tasks_finished, named: left to itself the planner walks
-- tenure_tasks_by_status through every finished task and sorts them, which took
-- 12 ms a batch with 40,000 of them, whatever the batch's size, all of it under
-- the one write lock (0.2 ms this way). The literal statuses let the partial
-- index be used; :statuses narrows them.
-- name: prune_tasks
DELETE FROM tenure_tasks WHERE seq IN (
    SELECT seq FROM tenure_tasks INDEXED BY tenure_tasks_finished
    WHERE status IN ('done', 'failed', 'cancelled') AND finished_at < :cutoff
      AND status IN (SELECT value FROM json_each(:statuses))
      -- A member of a gate still closed stays: its outcome is read when it opens.
      AND (gate_out IS NULL OR NOT EXISTS (
          SELECT 1 FROM tenure_gates AS g
          WHERE g.id = tenure_tasks.gate_out AND g.opened_at IS NULL
            AND g.broken_at IS NULL))
    ORDER BY finished_at  -- the oldest go first when the limit cuts the batch
    LIMIT :limit
);

-- With the tasks, the gates that opened or broke before the retention (their
-- tasks no longer need them).
-- name: prune_gates
DELETE FROM tenure_gates WHERE id IN (
    SELECT id FROM tenure_gates WHERE coalesce(opened_at, broken_at) < :cutoff LIMIT :limit
);

-- How many finished tasks and events are older than the retention, each
-- counted up to a cap: a bounded walk of tenure_tasks_finished and
-- tenure_events_by_time.
-- name: retention_backlog
SELECT
    (SELECT count(*) FROM (
        SELECT 1 FROM tenure_tasks INDEXED BY tenure_tasks_finished
        WHERE status IN ('done', 'failed', 'cancelled') AND finished_at < :cutoff
        LIMIT :cap
    )) AS tasks,
    (SELECT count(*) FROM (SELECT 1 FROM tenure_events WHERE at < :cutoff LIMIT :cap)) AS events;

-- name: prune_events
DELETE FROM tenure_events WHERE id IN (
    SELECT id FROM tenure_events WHERE at < :cutoff ORDER BY at LIMIT :limit
)
RETURNING id;

-- The newest event pruned so far (see 0004_follow_and_reports.sql).
-- name: mark_events_pruned
INSERT INTO tenure_event_log (only_row, pruned_id) VALUES (1, :pruned_id)
ON CONFLICT (only_row) DO UPDATE SET pruned_id = max(pruned_id, excluded.pruned_id);

-- name: worker_beat
INSERT INTO tenure_workers (id, host, pid, topics, tags, pool, concurrency, held, started_at, last_seen)
VALUES (:id, :host, :pid, :topics, :tags, :pool, :concurrency, :held, :now, :now)
ON CONFLICT (id) DO UPDATE SET
    host = excluded.host, pid = excluded.pid, topics = excluded.topics,
    tags = excluded.tags, pool = excluded.pool, concurrency = excluded.concurrency,
    held = excluded.held, last_seen = excluded.last_seen
RETURNING *;

-- name: worker_remove
DELETE FROM tenure_workers WHERE id = :id RETURNING id;

-- name: worker_list
SELECT * FROM tenure_workers ORDER BY started_at, id;

-- An operator's new concurrency for a running worker, which its next
-- heartbeat reads back and takes.
-- name: worker_scale
UPDATE tenure_workers SET scale_to = :concurrency WHERE id = :id RETURNING *;

-- name: worker_prune
DELETE FROM tenure_workers WHERE last_seen < :cutoff;

-- Leadership: acquire only a vacant (or never held) leadership.
-- name: leader_acquire
INSERT INTO tenure_leaders (name, owner, token, record_ver, lease_seconds, updated_at)
VALUES (:name, :owner, 1, 1, :lease_seconds, :now)
ON CONFLICT (name) DO UPDATE SET
    owner = excluded.owner,
    token = tenure_leaders.record_ver + 1,
    record_ver = tenure_leaders.record_ver + 1,
    lease_seconds = excluded.lease_seconds,
    updated_at = excluded.updated_at
WHERE tenure_leaders.owner IS NULL
RETURNING name, owner, token;

-- name: leader_extend
UPDATE tenure_leaders
SET record_ver = record_ver + 1, lease_seconds = :lease_seconds, updated_at = :now
WHERE name = :name AND owner = :owner AND token = :token
RETURNING *;

-- name: leader_get
SELECT * FROM tenure_leaders WHERE name = :name;

-- name: leader_revoke
UPDATE tenure_leaders
SET owner = NULL, token = NULL, record_ver = record_ver + 1, updated_at = :now
WHERE name = :name AND record_ver = :record_ver AND owner IS NOT NULL
RETURNING name;

-- name: leader_resign
UPDATE tenure_leaders
SET owner = NULL, token = NULL, record_ver = record_ver + 1, updated_at = :now
WHERE name = :name AND owner = :owner AND token = :token
RETURNING name;

-- Unique locks. Taking one succeeds when the key is free, expired, or already
-- this task's (a start of an until_executed task finds its own lock); the row
-- comes back only if it was taken. A lock kept by its own task keeps its expiry.
-- name: take_unique_locks
INSERT INTO tenure_unique_locks (key, task_id, lock, expires_at, created_at)
VALUES (:key, :task_id, :lock, :expires_at, :now)
ON CONFLICT (key) DO UPDATE SET
    task_id = excluded.task_id,
    lock = excluded.lock,
    expires_at = CASE WHEN tenure_unique_locks.task_id = excluded.task_id
                           AND tenure_unique_locks.expires_at > :now
                      THEN tenure_unique_locks.expires_at ELSE excluded.expires_at END,
    created_at = CASE WHEN tenure_unique_locks.task_id = excluded.task_id
                      THEN tenure_unique_locks.created_at ELSE excluded.created_at END
WHERE tenure_unique_locks.expires_at <= :now OR tenure_unique_locks.task_id = excluded.task_id
RETURNING key;

-- name: unique_lock_holders
SELECT task_id FROM tenure_unique_locks WHERE key = :key;

-- A task refused at start, by its rule: reject cancels it; reschedule puts it
-- back to pending later without spending the attempt; raise fails the attempt
-- (retried later while attempts remain).
-- name: refuse_unique_start
UPDATE tenure_tasks
SET status = CASE
        WHEN unique_on_conflict = 'reject' THEN 'cancelled'
        WHEN unique_on_conflict = 'reschedule' OR attempts < max_attempts THEN 'pending'
        ELSE 'failed' END,
    attempts = CASE WHEN unique_on_conflict = 'reschedule' THEN attempts - 1
                    ELSE attempts END,
    priority = CASE WHEN unique_on_conflict = 'raise' AND attempts < max_attempts
                    THEN priority - 1 ELSE priority END,
    run_at = CASE WHEN unique_on_conflict = 'reject' THEN run_at
                  WHEN unique_retry_in > 0 THEN :now + unique_retry_in END,
    error = CASE WHEN unique_on_conflict = 'reschedule' THEN error
                 ELSE json_set(:error, '$.attempt', attempts) END,
    errors = CASE WHEN unique_on_conflict = 'reschedule' THEN errors ELSE {errors_kept} END,
    finished_at = CASE
        WHEN unique_on_conflict = 'reject'
             OR (unique_on_conflict = 'raise' AND attempts >= max_attempts) THEN :now END,
    lease_owner = NULL,
    lease_expires_at = NULL,
    lease_token = NULL,
    lease_seconds = NULL,
    record_ver = record_ver + 1,
    updated_at = :now
WHERE id = :id AND status = 'running';

-- name: list_unique_locks
SELECT * FROM tenure_unique_locks WHERE expires_at > :now ORDER BY created_at, key LIMIT :limit;

-- name: prune_unique_locks
DELETE FROM tenure_unique_locks WHERE expires_at <= :now;

-- Wake-ups. data_version changes when another connection commits; reading it
-- costs no I/O (it is kept in the WAL index, in shared memory).
-- name: data_version
PRAGMA data_version;

-- Whether a task of the topics may be reserved now (tags aside).
-- name: runnable_any
WITH topic_rooms AS MATERIALIZED ({topic_rooms})
SELECT 1 FROM tenure_tasks INDEXED BY tenure_tasks_pending
WHERE status = 'pending' AND (run_at IS NULL OR run_at <= :now)
  AND topic NOT IN (SELECT topic FROM tenure_paused_topics)
  AND topic NOT IN (SELECT topic FROM topic_rooms WHERE room <= 0)
  AND (expires_at IS NULL OR expires_at > :now)
  {within_limits}
LIMIT 1;

-- name: runnable_topics
WITH topic_rooms AS MATERIALIZED ({topic_rooms})
SELECT 1 FROM tenure_tasks INDEXED BY tenure_tasks_pending_by_topic
WHERE status = 'pending'
  AND topic IN (SELECT value FROM json_each(:topics)
                WHERE value NOT IN (SELECT topic FROM tenure_paused_topics)
                  AND value NOT IN (SELECT topic FROM topic_rooms WHERE room <= 0))
  AND (run_at IS NULL OR run_at <= :now)
  AND (expires_at IS NULL OR expires_at > :now)
  {within_limits}
LIMIT 1;

-- Tasks past their deadline (Task.expires) that never started end cancelled,
-- their error saying so, the oldest first, at most :limit. A retry that comes
-- due after the deadline is one of them: the deadline counts from creation.
-- name: expire_tasks
UPDATE tenure_tasks
SET status = 'cancelled',
    finished_at = :now,
    error = json_set(:error, '$.attempt', attempts),
    errors = {errors_kept},
    record_ver = record_ver + 1,
    updated_at = :now
WHERE seq IN (
    SELECT seq FROM tenure_tasks INDEXED BY tenure_tasks_expiring
    WHERE status = 'pending' AND expires_at <= :now
    ORDER BY expires_at, seq
    LIMIT :limit
)
RETURNING id;

-- Paused topics (0012_flow_control.sql): the reserve statements above take
-- no task of one. Pausing a paused topic keeps its first time.
-- name: topic_pause
INSERT INTO tenure_paused_topics (topic, paused_at) VALUES (:topic, :now)
ON CONFLICT (topic) DO UPDATE SET paused_at = tenure_paused_topics.paused_at
RETURNING topic, paused_at;

-- name: topic_resume
DELETE FROM tenure_paused_topics WHERE topic = :topic RETURNING topic;

-- name: topics_paused
SELECT topic, paused_at FROM tenure_paused_topics ORDER BY topic;

-- Topic limits (0013_limits.sql): at most max_running tasks of the topic run
-- at once, across every worker.
-- name: topic_limit_set
INSERT INTO tenure_topic_limits (topic, max_running, set_at) VALUES (:topic, :max_running, :now)
ON CONFLICT (topic) DO UPDATE SET max_running = excluded.max_running, set_at = excluded.set_at
RETURNING topic, max_running, set_at;

-- name: topic_limit_clear
DELETE FROM tenure_topic_limits WHERE topic = :topic RETURNING topic;

-- name: topic_limits
SELECT topic, max_running, set_at FROM tenure_topic_limits ORDER BY topic;

-- Topic rates (0013_limits.sql): at most max_starts of the topic's tasks start
-- within any per_seconds, across every worker.
-- name: topic_rate_set
INSERT INTO tenure_topic_rates (topic, max_starts, per_seconds, set_at)
VALUES (:topic, :max_starts, :per, :now)
ON CONFLICT (topic) DO UPDATE
SET max_starts = excluded.max_starts, per_seconds = excluded.per_seconds, set_at = excluded.set_at
RETURNING topic, max_starts, per_seconds, set_at;

-- name: topic_rate_clear
DELETE FROM tenure_topic_rates WHERE topic = :topic RETURNING topic;

-- name: topic_rates
SELECT topic, max_starts, per_seconds, set_at FROM tenure_topic_rates ORDER BY topic;

-- Priority ageing (0014_ordering.sql).
-- name: topic_ageing_set
INSERT INTO tenure_topic_ageing (topic, every_seconds, most, set_at)
VALUES (:topic, :every, :most, :now)
ON CONFLICT (topic) DO UPDATE
SET every_seconds = excluded.every_seconds, most = excluded.most, set_at = excluded.set_at
RETURNING topic, every_seconds, most, set_at;

-- name: topic_ageing_clear
DELETE FROM tenure_topic_ageing WHERE topic = :topic RETURNING topic;

-- name: topic_ageings
SELECT topic, every_seconds, most, set_at FROM tenure_topic_ageing ORDER BY topic;

-- The starts no rate's window holds any more (or of a topic without a rate).
-- name: prune_rate_starts
DELETE FROM tenure_rate_starts
WHERE NOT EXISTS (
    SELECT 1 FROM tenure_topic_rates AS r
    WHERE r.topic = tenure_rate_starts.topic AND tenure_rate_starts.at > :now - r.per_seconds)
RETURNING id;

-- The observer's reports (0004_follow_and_reports.sql). A run is saved only for
-- a slot later than the saved one, so of two schedulers running the same slot
-- one saves (and its trigger appends the report event) and the other gets no
-- row back.
-- name: report_save
INSERT INTO tenure_reports (key, slot, run_at, owner, query, task_ids, total)
VALUES (:key, :slot, :now, :owner, :query, :task_ids, :total)
ON CONFLICT (key) DO UPDATE SET
    slot = excluded.slot, run_at = excluded.run_at, owner = excluded.owner,
    query = excluded.query, task_ids = excluded.task_ids, total = excluded.total
WHERE tenure_reports.slot < excluded.slot
RETURNING *;

-- name: report_get
SELECT * FROM tenure_reports WHERE key = :key;

-- name: report_list
SELECT * FROM tenure_reports ORDER BY key;

-- Reports of queries no longer run (nothing saved within the retention).
-- name: prune_reports
DELETE FROM tenure_reports WHERE run_at < :cutoff;

-- The newest events before an id, newest first (for a tail).
-- name: tail_events
SELECT * FROM tenure_events WHERE id < :before ORDER BY id DESC LIMIT :limit;

-- Operating: what the command line and the HTTP API show and do.
--
-- Ids that begin with :prefix (GLOB's own characters escaped by the caller), to
-- accept a unique prefix of an id; two are enough to say it is ambiguous. GLOB
-- matches case for case, so the pattern is a range of the id's index.
-- name: find_task_ids
SELECT id FROM tenure_tasks WHERE id GLOB :pattern ORDER BY id LIMIT 2;

-- The greatest id that begins with :prefix (pattern as for find_task_ids): one
-- step back along the id's index.
-- name: last_task_id
SELECT id FROM tenure_tasks WHERE id GLOB :pattern ORDER BY id DESC LIMIT 1;

-- One task's events, in the order they were written (walks tenure_events_by_task).
-- name: list_task_events
SELECT * FROM tenure_events WHERE task_id = :task_id ORDER BY id;

-- How many tasks each topic has in each status.
-- name: stats_counts
SELECT topic, status, count(*) AS count FROM tenure_tasks GROUP BY topic, status;

-- Per topic, the longest wait among the pending tasks runnable at :now: the
-- earliest time one became runnable (its run_at, or its creation if it had no
-- delay), among those that became runnable by :now.
-- name: stats_oldest_pending
SELECT topic, min(coalesce(run_at, created_at)) AS since
FROM tenure_tasks
WHERE status = 'pending' AND coalesce(run_at, created_at) <= :now
GROUP BY topic;

-- How many tasks ended (done, failed, cancelled) since :since, by how, per topic.
-- name: stats_endings
SELECT topic, to_status AS status, count(*) AS count
FROM tenure_events
WHERE at >= :since AND to_status IN ('done', 'failed', 'cancelled')
GROUP BY topic, to_status;

-- Per topic, the tasks that entered each status: the totals the events'
-- trigger keeps (0006_transition_totals.sql), which pruning leaves alone.
-- name: transition_totals
SELECT topic, status, n AS count FROM tenure_task_transition_totals;

-- Listing, and what the dashboard reads.
--
-- A listing's filters: those an index narrows to (status, group), and those
-- checked on each row. text is a literal substring of the description: instr
-- takes no pattern, and lower() folds ASCII letters only (as PostgreSQL's
-- does in the "C" collation), so both stores match the same tasks.
-- fragment: index_filters
AND (:status IS NULL OR status = :status)
  AND (:group_id IS NULL OR group_id = :group_id)

-- fragment: row_filters
AND (:topic IS NULL OR topic = :topic)
  AND (:sub_topic IS NULL OR sub_topic = :sub_topic)
  AND (:name IS NULL OR name = :name)
  AND (:text IS NULL OR instr(lower(description), lower(:text)) > 0)
  AND (:created_from IS NULL OR created_at >= :created_from)
  AND (:created_to IS NULL OR created_at < :created_to)
  AND (:meta IS NULL OR NOT EXISTS (
         SELECT 1 FROM json_each(:meta) AS wanted WHERE NOT EXISTS (
             SELECT 1 FROM json_each(meta) AS held
             WHERE held.key = wanted.key AND held.value = wanted.value)))

-- A page whose work :scan bounds: the tasks examined are the first :scan past
-- the cursor among those of the status and group asked for, in the listing's
-- order, and row_filters pick the page among them. reach is the position of
-- the last of them (NULL when fewer than :scan are left), and the page is
-- taken from the positions up to it: the same tasks as taking the page among
-- the first :scan (what PostgreSQL's query does), but SQLite, which cannot
-- tell that those come in order, would sort them all before taking a page.
-- examined_to is reach when the page came out short: the next page starts
-- after it. One row comes back even for an empty page, to carry it.
-- name: list_tasks_scan
WITH reach AS MATERIALIZED (
    SELECT (SELECT seq FROM tenure_tasks
            WHERE seq > :after {index_filters}
            ORDER BY seq
            LIMIT 1 OFFSET :scan - 1) AS seq
), page AS (
    SELECT * FROM tenure_tasks
    WHERE seq > :after AND seq <= coalesce((SELECT seq FROM reach), 9223372036854775807)
      {index_filters} {row_filters}
    ORDER BY seq
    LIMIT :limit
)
SELECT page.*,
       CASE WHEN (SELECT count(*) FROM page) < :limit THEN (SELECT seq FROM reach)
       END AS examined_to
FROM (SELECT 1) AS one
LEFT JOIN page ON true
ORDER BY page.seq;

-- The same, newest first: from the position before :before, backwards.
-- name: list_tasks_newest_scan
WITH reach AS MATERIALIZED (
    SELECT (SELECT seq FROM tenure_tasks
            WHERE seq < :before {index_filters}
            ORDER BY seq DESC
            LIMIT 1 OFFSET :scan - 1) AS seq
), page AS (
    SELECT * FROM tenure_tasks
    WHERE seq < :before AND seq >= coalesce((SELECT seq FROM reach), 0)
      {index_filters} {row_filters}
    ORDER BY seq DESC
    LIMIT :limit
)
SELECT page.*,
       CASE WHEN (SELECT count(*) FROM page) < :limit THEN (SELECT seq FROM reach)
       END AS examined_to
FROM (SELECT 1) AS one
LEFT JOIN page ON true
ORDER BY page.seq DESC;

-- How many tasks entered each status in each minute from :since to :until (a
-- creation enters pending), counted from the event log: walks tenure_events_by_time
-- over those minutes only. Reports are not transitions.
-- name: task_rates
SELECT CAST(at / 60 AS INTEGER) * 60 AS minute, to_status AS status, count(*) AS count
FROM tenure_events
WHERE at >= :since AND at < :until AND to_status <> 'report'
  AND (:topic IS NULL OR topic = :topic)
GROUP BY CAST(at / 60 AS INTEGER), to_status;

-- The groups with tasks among the newest :scan (walking the table backwards
-- from its end), the group of the newest first, at most :limit; each with its
-- tasks per status and its earliest creation, over all its tasks (walks
-- tenure_tasks_by_group).
-- name: task_groups
WITH recent AS (
    SELECT group_id, max(seq) AS newest
    FROM (SELECT seq, group_id FROM tenure_tasks ORDER BY seq DESC LIMIT :scan)
    WHERE group_id IS NOT NULL
    GROUP BY group_id
    ORDER BY newest DESC
    LIMIT :limit
)
SELECT recent.group_id, t.status, count(*) AS count, min(t.created_at) AS created_at
FROM recent
JOIN tenure_tasks AS t ON t.group_id = recent.group_id
GROUP BY recent.newest, recent.group_id, t.status
ORDER BY recent.newest DESC, t.status;

-- What tenure doctor reads. Run times: the newest finished tasks along
-- tenure_tasks_finished, then per name the 99th percentile by nearest rank (in
-- integers: the first rank at or above 99% of the runs), and the shortest
-- lease the runs were held under.
-- name: task_run_times
WITH recent AS (
    SELECT name, status, duration, lease_seconds
    FROM tenure_tasks INDEXED BY tenure_tasks_finished
    WHERE status IN ('done', 'failed', 'cancelled')
    ORDER BY finished_at DESC
    LIMIT :sample
), ranked AS (
    SELECT name, duration, lease_seconds,
           row_number() OVER (PARTITION BY name ORDER BY duration) AS rank,
           count(*) OVER (PARTITION BY name) AS runs
    FROM recent
    WHERE status <> 'cancelled' AND duration IS NOT NULL
)
SELECT name, max(runs) AS runs,
       max(CASE WHEN rank = (99 * runs + 99) / 100 THEN duration END) AS p99,
       min(lease_seconds) AS lease
FROM ranked
GROUP BY name
ORDER BY name;

-- name: leader_silence
SELECT :now - updated_at AS silence
FROM tenure_leaders
WHERE name = :name AND owner IS NOT NULL;

-- PRAGMA values come back as one row each: journal_mode's name, and
-- synchronous's number (0 off, 1 normal, 2 full, 3 extra).
-- name: journal_mode
PRAGMA journal_mode;

-- name: synchronous
PRAGMA synchronous;

-- Schedules (tenure.store.schedules): each periodic task declared in code or
-- added at run time, with the newest tick it enqueued.

-- A schedule declared in code: a new one starts from now; a stored one takes
-- the spec, and starts again from now if its timing changed. A name added at
-- run time is left alone. Rows that would not change are not written.
-- name: schedule_declare
INSERT INTO tenure_schedules AS s
    (name, origin, task, cron, every, tz, args, kwargs, catch_up, last_tick,
     created_at, updated_at)
VALUES (:name, 'code', :task, :cron, :every, :tz, :args, :kwargs, :catch_up, :now, :now, :now)
ON CONFLICT (name) DO UPDATE SET
    task = excluded.task, cron = excluded.cron, every = excluded.every, tz = excluded.tz,
    args = excluded.args, kwargs = excluded.kwargs, catch_up = excluded.catch_up,
    last_tick = CASE WHEN (s.cron, s.every, s.tz) IS (excluded.cron, excluded.every, excluded.tz)
                     THEN s.last_tick ELSE max(s.last_tick, excluded.last_tick) END,
    updated_at = excluded.updated_at
WHERE s.origin = 'code'
  AND (s.task, s.cron, s.every, s.tz, s.args, s.kwargs, s.catch_up)
      IS NOT (excluded.task, excluded.cron, excluded.every, excluded.tz,
              excluded.args, excluded.kwargs, excluded.catch_up);

-- name: schedule_add
INSERT INTO tenure_schedules
    (name, origin, task, cron, every, tz, args, kwargs, catch_up, last_tick,
     created_at, updated_at)
VALUES (:name, 'store', :task, :cron, :every, :tz, :args, :kwargs, :catch_up, :now, :now, :now)
ON CONFLICT (name) DO NOTHING
RETURNING *;

-- A new spec for a schedule added at run time; a new timing starts again from now.
-- name: schedule_replace
UPDATE tenure_schedules AS s SET
    task = :task, cron = :cron, every = :every, tz = :tz, args = :args,
    kwargs = :kwargs, catch_up = :catch_up,
    last_tick = CASE WHEN (s.cron, s.every, s.tz) IS (:cron, :every, :tz)
                     THEN s.last_tick ELSE max(s.last_tick, :now) END,
    updated_at = :now
WHERE s.name = :name AND s.origin = 'store'
RETURNING *;

-- Pause (keeping the first pause's time), or resume from now: the ticks a
-- paused schedule missed are not enqueued.
-- name: schedule_pause
UPDATE tenure_schedules AS s SET
    paused_at = CASE WHEN :paused THEN coalesce(s.paused_at, :now) END,
    last_tick = CASE WHEN :paused OR s.paused_at IS NULL THEN s.last_tick
                     ELSE max(s.last_tick, :now) END,
    updated_at = :now
WHERE s.name = :name
RETURNING *;

-- name: schedule_remove
DELETE FROM tenure_schedules WHERE name = :name RETURNING name;

-- name: schedule_get
SELECT * FROM tenure_schedules WHERE name = :name;

-- name: schedule_list
SELECT * FROM tenure_schedules ORDER BY name;

-- The compare-and-set that makes each tick enqueued once: the last tick moves
-- forward only, and only while the schedule runs. Its task is written in the
-- same transaction.
-- name: schedule_advance
UPDATE tenure_schedules SET
    last_tick = :tick,
    last_task_id = coalesce(:task_id, last_task_id)
WHERE name = :name AND paused_at IS NULL AND last_tick < :tick
RETURNING name;
