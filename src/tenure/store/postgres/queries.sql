-- Named queries of the PostgreSQL store. Each starts with "-- name: <name>".
-- Parameters are named (%(param)s) and always bound, never spliced in.
--
-- A query has the same name in both dialects' queries.sql, whichever runs it
-- once per item and whichever once per batch; a query that exists in one
-- dialect only is listed, with the reason, in tests/unit/test_dialect_symmetry.py.
--
-- One clock: every time written or compared is COALESCE(%(now)s, now()), the
-- caller's explicit "now" (tests, replays) or else the database's own clock, so
-- machines whose clocks disagree still agree on every stored time. now() is the
-- transaction's start time: one value for every row a statement touches.
--
-- Batches: the holder writes take parallel arrays, unnest()ed WITH ORDINALITY,
-- and create takes a JSON array of rows, so a whole batch is one statement and
-- one round trip; "ord" (1-based) tells which item each returned row belongs to.
--
-- Prepared statements: psycopg prepares a statement once it has run a few
-- times on a connection. A prepared statement fails ("cached plan must not
-- change result type") if its result columns change, as "*" would when a later
-- migration adds a column under a running process: so every query names the
-- columns it returns.

-- What a task is read from: every query that returns tasks names the table "t".
-- fragment: task_columns
t.seq, t.id, t.topic, t.sub_topic, t.name, t.status, t.data, t.result, t.error, t.group_id,
t.description, t.priority, t.attempts, t.max_attempts, t.tags, t.assignee, t.timeout,
t.run_at, t.created_at, t.updated_at, t.started_at, t.finished_at, t.duration,
t.lease_owner, t.lease_expires_at, t.lease_token, t.lease_seconds, t.record_ver, t.unique_key,
t.progress, t.progress_note, t.gate_in, t.gate_out, t.upstream, t.errors, t.meta, t.expires_at,
t.limit_key, t.limit_max, t.order_key, t.fair_key

-- What a batch holder write answers with (TaskState): no payloads sent back.
-- fragment: task_state
t.id, t.status, t.attempts, t.record_ver

-- The columns a new task is written in: the order of insert_task's and
-- insert_one's values, and of the rows COPY streams (copying.copy_text).
-- fragment: new_task_columns
id, topic, sub_topic, name, status, data, group_id, description, priority,
max_attempts, tags, timeout, run_at, created_at, updated_at,
unique_key, unique_lock, unique_on_conflict, unique_ttl, unique_retry_in, meta, expires_at,
limit_key, limit_max, order_key

-- The turn of a new task n of a fair key (0022_ordering.sql): the later of
-- the one after its key's latest and the round under way (the first turn
-- runnable at its priority: a delayed task's holds no round back); 0 in an
-- empty topic. Two probes of the indexes of
-- the pending tasks that have a key.
-- fragment: fair_turn
GREATEST(
    (SELECT min(h.fair_turn) FROM {schema}.tasks AS h
     WHERE h.status = 'pending' AND h.fair_key IS NOT NULL
       AND h.topic = n.topic AND h.priority = n.priority
       AND (h.run_at IS NULL OR h.run_at <= COALESCE(%(now)s::timestamptz, now()))),
    (SELECT max(k.fair_turn) + 1 FROM {schema}.tasks AS k
     WHERE k.status = 'pending' AND k.fair_key IS NOT NULL
       AND k.topic = n.topic AND k.fair_key = n.fair_key),
    0)

-- One statement creates the whole batch. (The name is SQLite's, whose
-- insert_task runs once per task.) A flow's tasks (Store.flow_create) also
-- give their status and gates; the others leave them out, and are pending.
-- name: insert_task
INSERT INTO {schema}.tasks AS t ({new_task_columns}, gate_in, gate_out, fair_key, fair_turn)
SELECT n.id, n.topic, n.sub_topic, n.name, COALESCE(n.status, 'pending'), n.data::json,
       n.group_id, n.description, n.priority, n.max_attempts, n.tags, n.timeout,
       -- A task with neither run_at nor a delay keeps run_at NULL: runnable at once.
       COALESCE(n.run_at,
                CASE WHEN n.delay > 0 THEN COALESCE(%(now)s::timestamptz, now())
                                           + make_interval(secs => n.delay) END),
       COALESCE(%(now)s::timestamptz, now()), COALESCE(%(now)s::timestamptz, now()),
       n.unique_key, n.unique_lock, n.unique_on_conflict, n.unique_ttl, n.unique_retry_in,
       n.meta::jsonb,
       -- A deadline in seconds is kept as the moment it falls on, by the same clock.
       CASE WHEN n.expires IS NOT NULL THEN COALESCE(%(now)s::timestamptz, now())
                                            + make_interval(secs => n.expires) END,
       n.limit_key, n.limit_max, n.order_key, n.gate_in, n.gate_out, n.fair_key,
       -- A fair key's tasks take the turns from its next, in the batch's order.
       CASE WHEN n.fair_key IS NULL THEN 0
            ELSE {fair_turn}
                 + row_number() OVER (PARTITION BY n.topic, n.fair_key ORDER BY n.ord) - 1 END
FROM ROWS FROM (json_to_recordset(%(tasks)s::json) AS (
    id text, topic text, sub_topic text, name text, data text, group_id text,
    description text, priority bigint, max_attempts bigint, tags text[], timeout float8,
    run_at timestamptz, delay float8, unique_key text, unique_lock text,
    unique_on_conflict text, unique_ttl float8, unique_retry_in float8,
    status text, gate_in text, gate_out text, meta text, expires float8,
    limit_key text, limit_max bigint, order_key text, fair_key text
)) WITH ORDINALITY AS n(
    id, topic, sub_topic, name, data, group_id, description, priority, max_attempts, tags,
    timeout, run_at, delay, unique_key, unique_lock, unique_on_conflict, unique_ttl,
    unique_retry_in, status, gate_in, gate_out, meta, expires, limit_key, limit_max,
    order_key, fair_key, ord
)
-- seq follows the caller's order. The rest of each task is what was sent.
ORDER BY n.ord
RETURNING t.id, t.created_at, t.run_at;

-- A flow's gates, each with all its members remaining.
-- name: insert_gates
INSERT INTO {schema}.gates (id, mode, shape, remaining, created_at)
SELECT g.id, g.mode, g.shape, g.remaining, COALESCE(%(now)s::timestamptz, now())
FROM json_to_recordset(%(gates)s::json) AS g(id text, mode text, shape text, remaining bigint)
RETURNING id;

-- name: get_gate
SELECT id, mode, shape, remaining, created_at, opened_at, broken_at
FROM {schema}.gates WHERE id = %(id)s::text;

-- One task: the same row as insert_task makes of it, its values bound one by
-- one, which spares the server the JSON array (about 5% of the statement).
-- name: insert_one
INSERT INTO {schema}.tasks AS t ({new_task_columns}, fair_key, fair_turn)
VALUES (
    %(id)s::text, %(topic)s::text, %(sub_topic)s::text, %(name)s::text, 'pending',
    %(data)s::json, %(group_id)s::text, %(description)s::text, %(priority)s::bigint,
    %(max_attempts)s::bigint, %(tags)s::text[], %(timeout)s::float8,
    COALESCE(%(run_at)s::timestamptz,
             CASE WHEN %(delay)s::float8 > 0 THEN COALESCE(%(now)s::timestamptz, now())
                  + make_interval(secs => %(delay)s::float8) END),
    COALESCE(%(now)s::timestamptz, now()), COALESCE(%(now)s::timestamptz, now()),
    %(unique_key)s::text, %(unique_lock)s::text, %(unique_on_conflict)s::text,
    %(unique_ttl)s::float8, %(unique_retry_in)s::float8, %(meta)s::jsonb,
    CASE WHEN %(expires)s::float8 IS NOT NULL THEN COALESCE(%(now)s::timestamptz, now())
         + make_interval(secs => %(expires)s::float8) END,
    %(limit_key)s::text, %(limit_max)s::bigint, %(order_key)s::text, %(fair_key)s::text,
    CASE WHEN %(fair_key)s::text IS NULL THEN 0 ELSE (
        SELECT {fair_turn}
        FROM (SELECT %(topic)s::text AS topic, %(priority)s::bigint AS priority,
                     %(fair_key)s::text AS fair_key) AS n) END
)
RETURNING t.id, t.created_at, t.run_at;

-- A large batch without server-computed run times or turns, streamed (see
-- copying.py):
-- every column given, so nothing is computed per row. The statement triggers
-- see the rows as they see an INSERT's.
-- name: copy_tasks
COPY {schema}.tasks ({new_task_columns}) FROM STDIN;

-- The transaction's clock, which a COPY's rows are stamped with.
-- name: transaction_now
SELECT now() AS now;

-- name: existing_ids
SELECT id FROM {schema}.tasks WHERE id = ANY(%(ids)s::text[]);

-- name: get_task
SELECT {task_columns} FROM {schema}.tasks AS t WHERE id = %(id)s::text;

-- name: get_tasks
SELECT {task_columns} FROM {schema}.tasks AS t WHERE id = ANY(%(ids)s::text[]);

-- name: list_group
SELECT {task_columns} FROM {schema}.tasks AS t WHERE group_id = %(group_id)s::text ORDER BY seq;

-- The filters (index_filters, row_filters) are at the end, with the listings
-- whose work a scan bounds.
-- name: list_tasks
SELECT {task_columns} FROM {schema}.tasks AS t
WHERE seq > %(after)s::bigint {index_filters} {row_filters}
ORDER BY seq
LIMIT %(limit)s::bigint;

-- The same, newest first: from the position before :before, backwards.
-- name: list_tasks_newest
SELECT {task_columns} FROM {schema}.tasks AS t
WHERE seq < %(before)s::bigint {index_filters} {row_filters}
ORDER BY seq DESC
LIMIT %(limit)s::bigint;

-- name: list_leased
SELECT {task_columns} FROM {schema}.tasks AS t
WHERE status IN ('running', 'snoozed') AND seq > %(after)s::bigint
ORDER BY seq
LIMIT %(limit)s::bigint;

-- name: list_leased_topics
SELECT {task_columns} FROM {schema}.tasks AS t
WHERE status IN ('running', 'snoozed') AND seq > %(after)s::bigint
  AND topic = ANY(%(topics)s::text[])
ORDER BY seq
LIMIT %(limit)s::bigint;

-- Events in (xid, id) order, after the cursor's position, and only those whose
-- transaction is older than every transaction still open that could write one:
-- ids are drawn before commit, so a later id can commit first, and a reader
-- paging by id alone would pass an event still to be committed and never see
-- it. Below that horizon no transaction can add an event any more.
--
-- The horizon is the snapshot's oldest running transaction (its xmin), except
-- that a transaction another database's backend is running cannot write this
-- database's events, so it is passed over: otherwise any busy neighbour on the
-- server would hold the log back. A running xid not found in pg_stat_activity
-- (it ended meanwhile, or is a prepared transaction, or its backend is not
-- visible) is kept, so the horizon errs only towards waiting. pg_stat_activity
-- shows 32-bit xids, compared with the low 32 bits of the snapshot's xid8.
--
-- The xid goes out as text (psycopg has no xid8 type) under another name, so
-- that ORDER BY xid sorts the column, not the text. Walks the events' key,
-- (xid, id).
--
-- One row comes back even when there is no event, carrying what the follower
-- needs besides: how far retention has pruned (a cursor older than that may
-- have lost history), and whether committed events wait behind the horizon
-- (a transaction that wrote no event is still open: read again shortly).
-- name: list_events
WITH horizon AS (
    SELECT coalesce(min(running.xid), pg_snapshot_xmax(pg_current_snapshot())) AS xid
    FROM pg_snapshot_xip(pg_current_snapshot()) AS running (xid)
    WHERE NOT EXISTS (
        SELECT FROM pg_stat_activity AS other
        WHERE other.datid <> (SELECT oid FROM pg_database WHERE datname = current_database())
          AND other.backend_xid::text::bigint = running.xid::text::numeric %% 4294967296
    )
), log AS (
    SELECT coalesce((SELECT pruned_xid::text FROM {schema}.event_log), '0') AS pruned_xid_text,
           coalesce((SELECT pruned_id FROM {schema}.event_log), 0) AS pruned_id,
           coalesce((SELECT xid FROM {schema}.events ORDER BY xid DESC LIMIT 1)
                    >= (SELECT xid FROM horizon), false) AS held_back
)
SELECT log.pruned_xid_text, log.pruned_id, log.held_back,
       e.xid_text, e.id, e.task_id, e.topic, e.name, e.from_status, e.to_status,
       e.attempt, e.owner, e.at, e.error_type, e.error_message
FROM log
LEFT JOIN LATERAL (
    SELECT xid, xid::text AS xid_text, id, task_id, topic, name, from_status, to_status,
           attempt, owner, at, error_type, error_message
    FROM {schema}.events
    WHERE (xid, id) > (%(after_xid)s::text::xid8, %(after_id)s::bigint)
      AND xid < (SELECT xid FROM horizon)
    ORDER BY xid, id
    LIMIT %(limit)s::bigint
) AS e ON true
ORDER BY e.xid, e.id;

-- What a reservation writes on the rows it picked (the CTE "picked"): running,
-- one more attempt, leased to the owner for lease_seconds, the lease token one
-- above the version it read.
-- fragment: lease_picked
SET status = 'running',
    attempts = t.attempts + 1,
    assignee = %(owner)s::text,
    lease_owner = %(owner)s::text,
    lease_token = t.record_ver + 1,
    lease_seconds = %(lease_seconds)s::float8,
    lease_expires_at = COALESCE(%(now)s::timestamptz, now())
                       + make_interval(secs => %(lease_seconds)s::float8),
    started_at = COALESCE(%(now)s::timestamptz, now()),
    finished_at = NULL,
    duration = NULL,
    progress = NULL,
    progress_note = NULL,
    record_ver = t.record_ver + 1,
    updated_at = COALESCE(%(now)s::timestamptz, now())
FROM picked
WHERE t.seq = picked.seq

-- Limits (0021_limits.sql), read from the statement's snapshot: the topics
-- already at their most, which a reservation does not scan (as a paused
-- topic's), and in the scan, no task of a limit key at its most, and of an
-- ordered key only the first unfinished task, while none of it runs. This
-- spares the scan the tasks that cannot start (a full topic's or key's
-- backlog blocks no other); the rooms counted under the limits' locks
-- (pick_within_limits) decide.
-- fragment: full_topics
SELECT l.topic FROM {schema}.topic_limits AS l
WHERE l.max_running <= (SELECT COALESCE(sum(c.n), 0) FROM {schema}.task_counts AS c
                        WHERE c.topic = l.topic AND c.status = 'running')
UNION ALL
SELECT r.topic FROM {schema}.topic_rates AS r
WHERE r.max_starts <= (
    SELECT count(*) FROM {schema}.rate_starts AS s
    WHERE s.topic = r.topic
      AND s.at > COALESCE(%(now)s::timestamptz, now()) - make_interval(secs => r.per_seconds))

-- fragment: within_limits
AND (limit_key IS NULL OR limit_key <> ALL (ARRAY(
    SELECT r.limit_key FROM {schema}.tasks AS r
    WHERE r.status = 'running' AND r.limit_key IS NOT NULL
    GROUP BY r.limit_key HAVING count(*) >= min(r.limit_max))))
AND (order_key IS NULL OR NOT EXISTS (
    SELECT FROM {schema}.tasks AS e
    WHERE e.order_key = tasks.order_key AND e.seq < tasks.seq
      AND e.status IN ('waiting', 'pending', 'running', 'snoozed')))

-- Of the rows offered (the CTE "candidates", locked), those within the room
-- left under each limit they fall under: per topic (its limit, and its rate)
-- and per limit key, the first ones in the order taken, as many as the room;
-- per ordered key, its first while none of it runs. The room is counted by tenure_rooms, under the
-- limits' locks, which the reservation holds until it commits: concurrent
-- reservations of one limit take turns, each counting the others' starts, so
-- none exceeds it. Without a limit among the rows, no lock and no count.
-- fragment: pick_within_limits
limited AS MATERIALIZED (
    SELECT 'topic'::text AS kind, l.topic AS name, l.max_running AS most, NULL::float8 AS span
    FROM {schema}.topic_limits AS l WHERE l.topic IN (SELECT c.topic FROM candidates AS c)
    UNION ALL
    SELECT 'rate', r.topic, r.max_starts, r.per_seconds
    FROM {schema}.topic_rates AS r WHERE r.topic IN (SELECT c.topic FROM candidates AS c)
    UNION ALL
    SELECT 'key', c.limit_key, min(c.limit_max), NULL FROM candidates AS c
    WHERE c.limit_key IS NOT NULL GROUP BY c.limit_key
    UNION ALL
    SELECT DISTINCT 'order', c.order_key, 1::bigint, NULL::float8 FROM candidates AS c
    WHERE c.order_key IS NOT NULL
),
rooms AS MATERIALIZED (
    SELECT r.kind, r.name, r.room
    FROM (SELECT array_agg(kind) AS kinds, array_agg(name) AS names, array_agg(most) AS mosts,
                 array_agg(span) AS spans
          FROM limited HAVING count(*) > 0) AS l
    CROSS JOIN LATERAL {schema}.tenure_rooms(
        l.kinds, l.names, l.mosts, l.spans, COALESCE(%(now)s::timestamptz, now())) AS r
),
picked AS MATERIALIZED (
    SELECT c.seq, c.rank FROM (
        SELECT c.seq, c.rank, c.topic, c.limit_key, c.order_key,
               row_number() OVER (PARTITION BY c.topic
                                  ORDER BY c.rank DESC, c.priority DESC, c.fair_turn, c.seq)
                   AS nth_in_topic,
               row_number() OVER (PARTITION BY c.limit_key
                                  ORDER BY c.rank DESC, c.priority DESC, c.fair_turn, c.seq)
                   AS nth_in_key
        FROM candidates AS c
    ) AS c
    WHERE NOT EXISTS (
        SELECT FROM rooms AS r
        WHERE (r.kind IN ('topic', 'rate') AND r.name = c.topic AND r.room < c.nth_in_topic)
           OR (r.kind = 'key' AND r.name = c.limit_key AND r.room < c.nth_in_key)
           OR (r.kind = 'order' AND r.name = c.order_key AND r.room < 1))
),
-- The starts under a topic's rate, noted as they are made (a data-modifying
-- CTE runs whether or not the statement reads it).
noted AS (
    INSERT INTO {schema}.rate_starts (topic, at)
    SELECT c.topic, COALESCE(%(now)s::timestamptz, now())
    FROM picked AS p JOIN candidates AS c ON c.seq = p.seq
    WHERE c.topic IN (SELECT l.name FROM limited AS l WHERE l.kind = 'rate')
)

-- Priority ageing (0022_ordering.sql): the topics in scope (%(scope)s: the
-- reservation's topics, NULL for any) that age, and are neither paused nor
-- full; the priorities their pending tasks have (levels, each found by one
-- probe of tasks_pending_by_topic: a loose scan of the index); and of each
-- priority, the first %(limit)s runnable tasks by turn and age, locked. A
-- priority's tasks are ranked together, by its priority raised by one for
-- every every_seconds the longest waiting of them has waited since it became
-- runnable (its run_at, or its last change: a retry, a release), at most
-- most: within a priority, tasks keep their order (turn, then age), and the
-- topics' backlogs are never read whole. Each level walks past the tasks of
-- its priority that cannot start, as the plain scan does.
-- fragment: ageing
aged AS MATERIALIZED (
    SELECT a.topic, a.every_seconds, a.most FROM {schema}.topic_ageing AS a
    WHERE (%(scope)s::text[] IS NULL OR a.topic = ANY (%(scope)s::text[]))
      AND NOT EXISTS (SELECT FROM {schema}.paused_topics AS p WHERE p.topic = a.topic)
      AND a.topic <> ALL (ARRAY({full_topics}))
),
levels (topic, priority) AS (
    SELECT a.topic, (SELECT max(t.priority) FROM {schema}.tasks AS t
                     WHERE t.status = 'pending' AND t.topic = a.topic)
    FROM aged AS a
    UNION ALL
    SELECT l.topic, (SELECT max(t.priority) FROM {schema}.tasks AS t
                     WHERE t.status = 'pending' AND t.topic = l.topic AND t.priority < l.priority)
    FROM levels AS l WHERE l.priority IS NOT NULL
),
ageing AS MATERIALIZED (
    SELECT o.seq,
           o.priority + (max(LEAST(a.most::float8, GREATEST(0, floor(extract(epoch FROM
               COALESCE(%(now)s::timestamptz, now()) - GREATEST(o.run_at, o.updated_at))
               / a.every_seconds)))) OVER (PARTITION BY o.topic, o.priority))::bigint AS rank,
           o.priority, o.fair_turn, o.topic, o.limit_key, o.limit_max, o.order_key
    FROM levels AS l
    JOIN aged AS a ON a.topic = l.topic
    CROSS JOIN LATERAL (
        SELECT seq, priority, fair_turn, topic, limit_key, limit_max, order_key, run_at,
               updated_at
        FROM {schema}.tasks
        WHERE status = 'pending' AND topic = l.topic AND priority = l.priority
          AND (run_at IS NULL OR run_at <= COALESCE(%(now)s::timestamptz, now()))
          AND tags <@ %(tags)s::text[]
          AND (expires_at IS NULL OR expires_at > COALESCE(%(now)s::timestamptz, now()))
          {within_limits}
        ORDER BY fair_turn, seq
        LIMIT %(limit)s::bigint
        FOR UPDATE SKIP LOCKED
    ) AS o
    WHERE l.priority IS NOT NULL
)

-- The rows offered: the first %(limit)s of those the plain scan took (rank:
-- their priority) and of the ageing topics', by rank, priority, turn, then age.
-- fragment: candidates
candidates AS MATERIALIZED (
    SELECT seq, rank, priority, fair_turn, topic, limit_key, limit_max, order_key FROM plain
    UNION ALL
    SELECT seq, rank, priority, fair_turn, topic, limit_key, limit_max, order_key FROM ageing
    ORDER BY rank DESC, priority DESC, fair_turn, seq
    LIMIT %(limit)s::bigint
)

-- Reserve: take the first %(limit)s runnable rows, highest priority first, then
-- by fair turn (0022_ordering.sql; 0 without a fair key), then oldest, walking
-- the partial index of pending rows. SKIP LOCKED: concurrent
-- reservers pass over each other's rows instead of queueing behind them. A
-- task's tags must all be among the worker's (<@: "is contained by").
--
-- The rows are offered in a MATERIALIZED CTE, run exactly once. Written as
-- "WHERE seq IN (SELECT ... LIMIT ... FOR UPDATE SKIP LOCKED)", the planner may
-- run the subquery once per row of the outer scan (a nested-loop semi-join),
-- and each run skips the rows the previous ones locked: one reservation then
-- takes far more than its limit. Rows offered but over a limit stay locked
-- only until the statement commits.
-- name: reserve_any
WITH RECURSIVE {ageing},
plain AS MATERIALIZED (
    SELECT seq, priority AS rank, priority, fair_turn, topic, limit_key, limit_max, order_key
    FROM {schema}.tasks
    WHERE status = 'pending'
      AND (run_at IS NULL OR run_at <= COALESCE(%(now)s::timestamptz, now()))
      AND tags <@ %(tags)s::text[]
      AND topic <> ALL (ARRAY(SELECT p.topic FROM {schema}.paused_topics AS p))
      AND topic <> ALL (ARRAY({full_topics}))
      AND topic <> ALL (ARRAY(SELECT a.topic FROM aged AS a))
      AND (expires_at IS NULL OR expires_at > COALESCE(%(now)s::timestamptz, now()))
      {within_limits}
    ORDER BY priority DESC, fair_turn, seq
    LIMIT %(limit)s::bigint
    FOR UPDATE SKIP LOCKED
),
{candidates},
{pick_within_limits}
UPDATE {schema}.tasks AS t
{lease_picked}
RETURNING {task_columns}, t.fair_turn, picked.rank;

-- One topic: its partial index yields pending rows in the order taken, so the
-- scan stops after :limit rows.
-- name: reserve_topic
WITH RECURSIVE {ageing},
plain AS MATERIALIZED (
    SELECT seq, priority AS rank, priority, fair_turn, topic, limit_key, limit_max, order_key
    FROM {schema}.tasks
    WHERE status = 'pending'
      AND (run_at IS NULL OR run_at <= COALESCE(%(now)s::timestamptz, now()))
      AND topic = %(topic)s::text
      AND tags <@ %(tags)s::text[]
      AND NOT EXISTS (SELECT 1 FROM {schema}.paused_topics AS p WHERE p.topic = %(topic)s::text)
      AND NOT EXISTS (SELECT 1 FROM aged AS a WHERE a.topic = %(topic)s::text)
      AND %(topic)s::text <> ALL (ARRAY({full_topics}))
      AND (expires_at IS NULL OR expires_at > COALESCE(%(now)s::timestamptz, now()))
      {within_limits}
    ORDER BY priority DESC, fair_turn, seq
    LIMIT %(limit)s::bigint
    FOR UPDATE SKIP LOCKED
),
{candidates},
{pick_within_limits}
UPDATE {schema}.tasks AS t
{lease_picked}
RETURNING {task_columns}, t.fair_turn, picked.rank;

-- Several topics: the first :limit rows of each topic's index, merged. (One
-- scan with topic = ANY(...) would read and sort every pending row of them.)
-- Rows a topic offers beyond the merged :limit stay locked only until this
-- statement commits.
-- name: reserve_topics
WITH RECURSIVE {ageing},
plain AS MATERIALIZED (
    SELECT offered.seq, offered.priority AS rank, offered.priority, offered.fair_turn,
           offered.topic, offered.limit_key, offered.limit_max, offered.order_key
    FROM (
        SELECT w.topic FROM unnest(%(topics)s::text[]) AS w(topic)
        WHERE NOT EXISTS (SELECT 1 FROM {schema}.paused_topics AS p WHERE p.topic = w.topic)
          AND w.topic <> ALL (ARRAY({full_topics}))
          AND w.topic <> ALL (ARRAY(SELECT a.topic FROM aged AS a))
    ) AS wanted
    CROSS JOIN LATERAL (
        SELECT seq, priority, fair_turn, topic, limit_key, limit_max, order_key FROM {schema}.tasks
        WHERE status = 'pending'
          AND (run_at IS NULL OR run_at <= COALESCE(%(now)s::timestamptz, now()))
          AND topic = wanted.topic
          AND tags <@ %(tags)s::text[]
          AND (expires_at IS NULL OR expires_at > COALESCE(%(now)s::timestamptz, now()))
          {within_limits}
        ORDER BY priority DESC, fair_turn, seq
        LIMIT %(limit)s::bigint
        FOR UPDATE SKIP LOCKED
    ) AS offered
    ORDER BY offered.priority DESC, offered.fair_turn, offered.seq
    LIMIT %(limit)s::bigint
),
{candidates},
{pick_within_limits}
UPDATE {schema}.tasks AS t
{lease_picked}
RETURNING {task_columns}, t.fair_turn, picked.rank;

-- Paused topics (0020_flow_control.sql): the reserve statements above take
-- no task of one. Pausing a paused topic keeps its first time.
-- name: topic_pause
INSERT INTO {schema}.paused_topics AS p (topic, paused_at)
VALUES (%(topic)s::text, COALESCE(%(now)s::timestamptz, now()))
ON CONFLICT (topic) DO UPDATE SET paused_at = p.paused_at
RETURNING topic, paused_at;

-- Tasks past their deadline (Task.expires) that never started end cancelled,
-- their error saying so, the oldest first, at most :limit. A retry that comes
-- due after the deadline is one of them: the deadline counts from creation.
-- (Picked in a MATERIALIZED CTE, as reserve's are: the planner may run an
-- "IN (SELECT ... LIMIT)" again per row, past its limit.)
-- name: expire_tasks
WITH picked AS MATERIALIZED (
    SELECT seq FROM {schema}.tasks
    WHERE status = 'pending' AND expires_at <= COALESCE(%(now)s::timestamptz, now())
    ORDER BY expires_at, seq
    LIMIT %(limit)s::bigint
    FOR UPDATE SKIP LOCKED
)
UPDATE {schema}.tasks AS t
SET status = 'cancelled',
    finished_at = COALESCE(%(now)s::timestamptz, now()),
    error = {schema}.tenure_stamped(%(error)s::json, t.attempts),
    record_ver = t.record_ver + 1,
    updated_at = COALESCE(%(now)s::timestamptz, now())
FROM picked
WHERE t.seq = picked.seq AND t.status = 'pending'
RETURNING t.id;

-- A resume wakes the workers that wait on the topic, as a new task would.
-- name: topic_resume
WITH resumed AS (
    DELETE FROM {schema}.paused_topics WHERE topic = %(topic)s::text RETURNING topic
)
SELECT topic, pg_notify('tenure_tasks', topic) AS told FROM resumed;

-- name: topics_paused
SELECT topic, paused_at FROM {schema}.paused_topics ORDER BY topic;

-- Topic limits (0021_limits.sql): at most max_running tasks of the topic run
-- at once, across every worker. Setting one wakes the workers that wait on
-- the topic, as does lifting it: either may leave room for more.
-- name: topic_limit_set
WITH set AS (
    INSERT INTO {schema}.topic_limits AS l (topic, max_running, set_at)
    VALUES (%(topic)s::text, %(max_running)s::bigint, COALESCE(%(now)s::timestamptz, now()))
    ON CONFLICT (topic) DO UPDATE SET max_running = EXCLUDED.max_running, set_at = EXCLUDED.set_at
    RETURNING l.topic, l.max_running, l.set_at
)
SELECT topic, max_running, set_at, pg_notify('tenure_tasks', topic) AS told FROM set;

-- name: topic_limit_clear
WITH cleared AS (
    DELETE FROM {schema}.topic_limits WHERE topic = %(topic)s::text RETURNING topic
)
SELECT topic, pg_notify('tenure_tasks', topic) AS told FROM cleared;

-- name: topic_limits
SELECT topic, max_running, set_at FROM {schema}.topic_limits ORDER BY topic;

-- Topic rates (0021_limits.sql): at most max_starts of the topic's tasks start
-- within any per_seconds, across every worker.
-- name: topic_rate_set
WITH set AS (
    INSERT INTO {schema}.topic_rates AS r (topic, max_starts, per_seconds, set_at)
    VALUES (%(topic)s::text, %(max_starts)s::bigint, %(per)s::float8,
            COALESCE(%(now)s::timestamptz, now()))
    ON CONFLICT (topic) DO UPDATE
    SET max_starts = EXCLUDED.max_starts, per_seconds = EXCLUDED.per_seconds,
        set_at = EXCLUDED.set_at
    RETURNING r.topic, r.max_starts, r.per_seconds, r.set_at
)
SELECT topic, max_starts, per_seconds, set_at, pg_notify('tenure_tasks', topic) AS told FROM set;

-- name: topic_rate_clear
WITH cleared AS (
    DELETE FROM {schema}.topic_rates WHERE topic = %(topic)s::text RETURNING topic
)
SELECT topic, pg_notify('tenure_tasks', topic) AS told FROM cleared;

-- name: topic_rates
SELECT topic, max_starts, per_seconds, set_at FROM {schema}.topic_rates ORDER BY topic;

-- Priority ageing (0022_ordering.sql). Setting or clearing it wakes the
-- waiting workers: the order of the topic's tasks changed.
-- name: topic_ageing_set
WITH set AS (
    INSERT INTO {schema}.topic_ageing AS a (topic, every_seconds, most, set_at)
    VALUES (%(topic)s::text, %(every)s::float8, %(most)s::bigint,
            COALESCE(%(now)s::timestamptz, now()))
    ON CONFLICT (topic) DO UPDATE
    SET every_seconds = EXCLUDED.every_seconds, most = EXCLUDED.most, set_at = EXCLUDED.set_at
    RETURNING a.topic, a.every_seconds, a.most, a.set_at
)
SELECT topic, every_seconds, most, set_at, pg_notify('tenure_tasks', topic) AS told FROM set;

-- name: topic_ageing_clear
WITH cleared AS (
    DELETE FROM {schema}.topic_ageing WHERE topic = %(topic)s::text RETURNING topic
)
SELECT topic, pg_notify('tenure_tasks', topic) AS told FROM cleared;

-- name: topic_ageings
SELECT topic, every_seconds, most, set_at FROM {schema}.topic_ageing ORDER BY topic;

-- The starts no rate's window holds any more (or of a topic without a rate).
-- name: prune_rate_starts
DELETE FROM {schema}.rate_starts AS s
WHERE NOT EXISTS (
    SELECT FROM {schema}.topic_rates AS r
    WHERE r.topic = s.topic
      AND s.at > COALESCE(%(now)s::timestamptz, now()) - make_interval(secs => r.per_seconds))
RETURNING s.id;

-- Holder writes: each row matches only while its task runs under the named
-- lease (task id, token, owner). The batch is "held"; the caller sends each
-- task id at most once per statement. Each answers with the whole task (a
-- single write) or, as <name>_brief, with its state (a batch).
-- fragment: held_by_lease
FROM unnest(%(ids)s::text[], %(tokens)s::bigint[], %(owners)s::text[])
     WITH ORDINALITY AS held(id, token, owner, ord)
WHERE t.id = held.id AND t.status = 'running' AND t.lease_token = held.token
  AND t.assignee = held.owner

-- Which of these leases are no longer held: their task not running under that
-- lease any more (cancelled, revoked, or ended). A read of the held tasks by
-- id alone, whatever the rest of the queue does.
-- name: leases_lost
SELECT held.id
FROM unnest(%(ids)s::text[], %(tokens)s::bigint[], %(owners)s::text[]) AS held(id, token, owner)
WHERE NOT EXISTS (
    SELECT 1 FROM {schema}.tasks AS t
    WHERE t.id = held.id AND t.status = 'running' AND t.lease_token = held.token
      AND t.assignee = held.owner
);

-- fragment: extend_leases_write
UPDATE {schema}.tasks AS t
SET lease_expires_at = COALESCE(%(now)s::timestamptz, now())
                       + make_interval(secs => %(lease_seconds)s::float8),
    lease_seconds = %(lease_seconds)s::float8,
    record_ver = t.record_ver + 1,
    updated_at = COALESCE(%(now)s::timestamptz, now())
{held_by_lease}
  AND t.lease_expires_at >= COALESCE(%(now)s::timestamptz, now())

-- name: extend_leases
{extend_leases_write}
RETURNING held.ord, {task_columns};

-- name: extend_leases_brief
{extend_leases_write}
RETURNING held.ord, {task_state};

-- fragment: complete_tasks_write
UPDATE {schema}.tasks AS t
SET status = 'done',
    result = held.result,
    finished_at = COALESCE(%(now)s::timestamptz, now()),
    duration = EXTRACT(EPOCH FROM COALESCE(%(now)s::timestamptz, now()) - t.started_at)::float8,
    lease_owner = NULL,
    lease_expires_at = NULL,
    record_ver = t.record_ver + 1,
    updated_at = COALESCE(%(now)s::timestamptz, now())
FROM unnest(%(ids)s::text[], %(tokens)s::bigint[], %(owners)s::text[], %(results)s::json[])
     WITH ORDINALITY AS held(id, token, owner, result, ord)
WHERE t.id = held.id AND t.status = 'running' AND t.lease_token = held.token
  AND t.assignee = held.owner

-- name: complete_tasks
{complete_tasks_write}
RETURNING held.ord, {task_columns};

-- name: complete_tasks_brief
{complete_tasks_write}
RETURNING held.ord, {task_state};

-- A retry is granted only while attempts remain; otherwise the task fails.
-- fragment: fail_tasks_write
UPDATE {schema}.tasks AS t
SET status = CASE WHEN held.retry_in IS NOT NULL AND t.attempts < t.max_attempts
                  THEN 'pending' ELSE 'failed' END,
    run_at = CASE WHEN held.retry_in IS NOT NULL AND t.attempts < t.max_attempts
                  THEN (CASE WHEN held.retry_in > 0
                             THEN COALESCE(%(now)s::timestamptz, now())
                                  + make_interval(secs => held.retry_in) END)
                  ELSE t.run_at END,
    priority = CASE WHEN held.retry_in IS NOT NULL AND t.attempts < t.max_attempts
                    THEN t.priority - held.priority_step ELSE t.priority END,
    finished_at = CASE WHEN held.retry_in IS NOT NULL AND t.attempts < t.max_attempts
                       THEN NULL ELSE COALESCE(%(now)s::timestamptz, now()) END,
    error = {schema}.tenure_stamped(held.error, t.attempts),
    duration = EXTRACT(EPOCH FROM COALESCE(%(now)s::timestamptz, now()) - t.started_at)::float8,
    lease_owner = NULL,
    lease_expires_at = NULL,
    record_ver = t.record_ver + 1,
    updated_at = COALESCE(%(now)s::timestamptz, now())
FROM unnest(%(ids)s::text[], %(tokens)s::bigint[], %(owners)s::text[], %(errors)s::json[],
            %(retry_ins)s::float8[], %(priority_steps)s::bigint[])
     WITH ORDINALITY AS held(id, token, owner, error, retry_in, priority_step, ord)
WHERE t.id = held.id AND t.status = 'running' AND t.lease_token = held.token
  AND t.assignee = held.owner

-- name: fail_tasks
{fail_tasks_write}
RETURNING held.ord, {task_columns};

-- name: fail_tasks_brief
{fail_tasks_write}
RETURNING held.ord, {task_state};

-- A snooze is a pause, not an attempt. lease_seconds holds the snooze length,
-- which the supervisor projects on its own monotonic clock; lease_expires_at
-- shows the wake-up time, for people only.
-- name: snooze_task
UPDATE {schema}.tasks AS t
SET status = 'snoozed',
    attempts = t.attempts - 1,
    lease_owner = NULL,
    lease_seconds = %(seconds)s::float8,
    lease_expires_at = COALESCE(%(now)s::timestamptz, now())
                       + make_interval(secs => %(seconds)s::float8),
    duration = EXTRACT(EPOCH FROM COALESCE(%(now)s::timestamptz, now()) - t.started_at)::float8,
    record_ver = t.record_ver + 1,
    updated_at = COALESCE(%(now)s::timestamptz, now())
{held_by_lease}
RETURNING held.ord, {task_columns};

-- A task that cancels itself (tenure.Cancel): cancelled at once, whatever
-- attempts remain, with the reason as its error.
-- name: cancel_held_task
UPDATE {schema}.tasks AS t
SET status = 'cancelled',
    finished_at = COALESCE(%(now)s::timestamptz, now()),
    error = {schema}.tenure_stamped(%(error)s::json, t.attempts),
    duration = EXTRACT(EPOCH FROM COALESCE(%(now)s::timestamptz, now()) - t.started_at)::float8,
    lease_owner = NULL,
    lease_expires_at = NULL,
    record_ver = t.record_ver + 1,
    updated_at = COALESCE(%(now)s::timestamptz, now())
{held_by_lease}
RETURNING held.ord, {task_columns};

-- A running task's progress (tenure.current().progress): a holder write like
-- the others, so a stale lease changes nothing; no event (not a transition).
-- A new attempt starts without progress (lease_picked clears it).
-- name: progress_task_brief
UPDATE {schema}.tasks AS t
SET progress = %(progress)s::float8,
    progress_note = %(note)s::text,
    record_ver = t.record_ver + 1,
    updated_at = COALESCE(%(now)s::timestamptz, now())
{held_by_lease}
RETURNING held.ord, {task_state};

-- name: release_task
UPDATE {schema}.tasks AS t
SET status = 'pending',
    attempts = t.attempts - 1,
    lease_owner = NULL,
    lease_expires_at = NULL,
    lease_seconds = NULL,
    record_ver = t.record_ver + 1,
    updated_at = COALESCE(%(now)s::timestamptz, now())
{held_by_lease}
RETURNING held.ord, {task_columns};

-- Revoke by compare-and-set on record_ver. A running task with no attempt left
-- fails (a task that kills its workers must not loop forever); otherwise it and
-- any snoozed task go back to pending. The lease token is cleared: the old
-- holder's writes are refused from now on. A running task taken from its holder
-- is told on tenure_leases (see lease_taken_notice).
-- name: revoke_task
UPDATE {schema}.tasks AS t
SET status = CASE WHEN t.status = 'running' AND t.attempts >= t.max_attempts
                  THEN 'failed' ELSE 'pending' END,
    error = CASE WHEN t.status = 'running' AND t.attempts >= t.max_attempts
                 THEN {schema}.tenure_stamped(%(lost_error)s::json, t.attempts)
                 ELSE t.error END,
    finished_at = CASE WHEN t.status = 'running' AND t.attempts >= t.max_attempts
                       THEN COALESCE(%(now)s::timestamptz, now()) ELSE t.finished_at END,
    lease_owner = NULL,
    lease_expires_at = NULL,
    lease_token = NULL,
    lease_seconds = NULL,
    record_ver = t.record_ver + 1,
    updated_at = COALESCE(%(now)s::timestamptz, now())
FROM {schema}.tasks AS was
WHERE t.id = %(id)s::text AND t.record_ver = %(record_ver)s::bigint
  AND t.status IN ('running', 'snoozed') AND was.id = t.id
RETURNING {task_columns}, {lease_taken_notice};

-- The holder of a task that was running when an administrator or the
-- supervisor took it learns of it within about a second (its worker listens on
-- tenure_leases, and then reads its leases: Store.leases_lost), not at its next
-- extension. Sent from these two statements alone, never from a trigger, so a
-- holder's own endings (the hot path) notify nothing. ``was`` is the row as the
-- statement's snapshot saw it: its record_ver one short of the new row's means
-- nothing changed it in between, and its status is the status taken; otherwise
-- (a concurrent reservation) the notice is sent to be safe.
-- fragment: lease_taken_notice
CASE WHEN was.status = 'running' OR was.record_ver <> t.record_ver - 1
     THEN pg_notify('tenure_leases', '') END AS told

-- name: cancel_task
UPDATE {schema}.tasks AS t
SET status = 'cancelled',
    finished_at = COALESCE(%(now)s::timestamptz, now()),
    lease_owner = NULL,
    lease_expires_at = NULL,
    lease_token = NULL,
    lease_seconds = NULL,
    record_ver = t.record_ver + 1,
    updated_at = COALESCE(%(now)s::timestamptz, now())
FROM {schema}.tasks AS was
WHERE t.id = %(id)s::text AND t.status = ANY(%(sources)s::text[]) AND was.id = t.id
RETURNING {task_columns}, {lease_taken_notice};

-- name: retry_task
UPDATE {schema}.tasks AS t
SET status = 'pending',
    attempts = 0,
    run_at = NULL,
    finished_at = NULL,
    lease_token = NULL,
    record_ver = record_ver + 1,
    updated_at = COALESCE(%(now)s::timestamptz, now())
WHERE id = %(id)s::text AND status = ANY(%(sources)s::text[])
RETURNING {task_columns};

-- name: count_tasks
SELECT count(*) AS count FROM {schema}.tasks WHERE true {index_filters} {row_filters};

-- The store's clock for schedules shared by many processes: the server's wall
-- time now (clock_timestamp(), not now(): a statement may begin a transaction
-- that is already old by the time a caller looks at it).
-- name: clock_now
SELECT clock_timestamp() AS now;

-- Retention: finished tasks and old events go in bounded batches, oldest first
-- (walking tasks_finished and events_by_time), picked once (see reserve). FOR
-- UPDATE re-checks a row changed since the statement began as it is now, so a
-- task a concurrent retry sent back to pending is never deleted; SKIP LOCKED
-- leaves rows being written alone, and lets concurrent pruners share the work
-- instead of queueing. Each returns one row: how many rows it deleted.
-- name: prune_tasks
WITH picked AS MATERIALIZED (
    SELECT seq FROM {schema}.tasks AS t
    WHERE status = ANY(%(statuses)s::text[])
      AND finished_at < COALESCE(%(now)s::timestamptz, now())
                        - make_interval(secs => %(older_than)s::float8)
      -- A member of a gate still closed stays: its outcome is read when it opens.
      AND (t.gate_out IS NULL OR NOT EXISTS (
          SELECT FROM {schema}.gates AS g
          WHERE g.id = t.gate_out AND g.opened_at IS NULL AND g.broken_at IS NULL))
    ORDER BY finished_at
    LIMIT %(limit)s::bigint
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM {schema}.tasks AS t USING picked WHERE t.seq = picked.seq
    RETURNING 1
), settled AS (
    -- With the tasks, in the same statement, the gates that opened or broke
    -- before the retention (their tasks no longer need them).
    DELETE FROM {schema}.gates WHERE id IN (
        SELECT id FROM {schema}.gates
        WHERE COALESCE(opened_at, broken_at) < COALESCE(%(now)s::timestamptz, now())
                                               - make_interval(secs => %(older_than)s::float8)
        LIMIT %(limit)s::bigint
    )
)
SELECT count(*) AS count FROM gone;

-- How many finished tasks and events are older than the retention, each
-- counted up to a cap: a bounded walk of tasks_finished and events_by_time.
-- name: retention_backlog
SELECT
    (SELECT count(*) FROM (
        SELECT 1 FROM {schema}.tasks
        WHERE status IN ('done', 'failed', 'cancelled')
          AND finished_at < COALESCE(%(now)s::timestamptz, now())
                            - make_interval(secs => %(older_than)s::float8)
        LIMIT %(cap)s::bigint
    ) AS t) AS tasks,
    (SELECT count(*) FROM (
        SELECT 1 FROM {schema}.events
        WHERE at < COALESCE(%(now)s::timestamptz, now())
                   - make_interval(secs => %(older_than)s::float8)
        LIMIT %(cap)s::bigint
    ) AS e) AS events;

-- name: prune_events
WITH picked AS MATERIALIZED (
    SELECT xid, id FROM {schema}.events
    WHERE at < COALESCE(%(now)s::timestamptz, now())
               - make_interval(secs => %(older_than)s::float8)
    ORDER BY at
    LIMIT %(limit)s::bigint
    FOR UPDATE SKIP LOCKED
), gone AS (
    DELETE FROM {schema}.events AS e USING picked WHERE (e.xid, e.id) = (picked.xid, picked.id)
    RETURNING e.xid, e.id
), newest AS (
    SELECT xid, id FROM gone ORDER BY xid DESC, id DESC LIMIT 1
), marked AS (
    INSERT INTO {schema}.event_log (pruned_xid, pruned_id)
    SELECT xid, id FROM newest
    ON CONFLICT (only_row) DO UPDATE
    SET pruned_xid = excluded.pruned_xid, pruned_id = excluded.pruned_id
    WHERE (excluded.pruned_xid, excluded.pruned_id) > (event_log.pruned_xid, event_log.pruned_id)
    RETURNING 1
)
SELECT count(*) AS count FROM gone;

-- Tables whose statistics are stale, where autovacuum is off (it would analyze
-- them itself otherwise): changed by more than a tenth since the last ANALYZE,
-- autovacuum's own rule. Identifiers cannot be parameters: one ANALYZE each.
-- name: stale_statistics
SELECT relname AS name
FROM pg_stat_user_tables
WHERE schemaname = {schema_name}
  AND relname IN ('tasks', 'events')
  AND n_mod_since_analyze > 50 + 0.1 * n_live_tup
  AND NOT current_setting('autovacuum')::boolean
ORDER BY relname;

-- name: analyze_tasks
ANALYZE {schema}.tasks;

-- name: analyze_events
ANALYZE {schema}.events;

-- The worker registry. A beat inserts the worker's row or updates it; the
-- first beat's started_at is kept.
-- name: worker_beat
INSERT INTO {schema}.workers (id, host, pid, topics, tags, pool, concurrency, held, started_at, last_seen)
VALUES (%(id)s::text, %(host)s::text, %(pid)s::bigint, %(topics)s::text[], %(tags)s::text[],
        %(pool)s::text, %(concurrency)s::bigint, %(held)s::bigint,
        COALESCE(%(now)s::timestamptz, now()), COALESCE(%(now)s::timestamptz, now()))
ON CONFLICT (id) DO UPDATE SET
    host = excluded.host, pid = excluded.pid, topics = excluded.topics,
    tags = excluded.tags, pool = excluded.pool, concurrency = excluded.concurrency,
    held = excluded.held, last_seen = excluded.last_seen
RETURNING id, host, pid, topics, tags, pool, concurrency, held, started_at, last_seen,
          scale_to;

-- name: worker_remove
DELETE FROM {schema}.workers WHERE id = %(id)s::text RETURNING id;

-- name: worker_list
SELECT id, host, pid, topics, tags, pool, concurrency, held, started_at, last_seen, scale_to
FROM {schema}.workers ORDER BY started_at, id;

-- An operator's new concurrency for a running worker, which its next
-- heartbeat reads back and takes.
-- name: worker_scale
UPDATE {schema}.workers SET scale_to = %(concurrency)s::bigint WHERE id = %(id)s::text
RETURNING id, host, pid, topics, tags, pool, concurrency, held, started_at, last_seen,
          scale_to;

-- name: worker_prune
WITH gone AS (
    DELETE FROM {schema}.workers
    WHERE last_seen < COALESCE(%(now)s::timestamptz, now())
                      - make_interval(secs => %(silent_for)s::float8)
    RETURNING 1
)
SELECT count(*) AS count FROM gone;

-- Leadership: acquire only a vacant (or never held) leadership. One statement
-- decides: among processes racing on a new name, one inserts and the others
-- find its row (ON CONFLICT waits for the inserter) held, and get no row; a
-- vacant row is taken with a token newer than every earlier one.
-- name: leader_acquire
INSERT INTO {schema}.leaders (name, owner, token, record_ver, lease_seconds, updated_at)
VALUES (%(name)s::text, %(owner)s::text, 1, 1, %(lease_seconds)s::float8, now())
ON CONFLICT (name) DO UPDATE SET
    owner = excluded.owner,
    token = leaders.record_ver + 1,
    record_ver = leaders.record_ver + 1,
    lease_seconds = excluded.lease_seconds,
    updated_at = excluded.updated_at
WHERE leaders.owner IS NULL
RETURNING name, owner, token;

-- name: leader_extend
UPDATE {schema}.leaders
SET record_ver = record_ver + 1, lease_seconds = %(lease_seconds)s::float8, updated_at = now()
WHERE name = %(name)s::text AND owner = %(owner)s::text AND token = %(token)s::bigint
RETURNING name, owner, token, record_ver, lease_seconds;

-- name: leader_get
SELECT name, owner, token, record_ver, lease_seconds FROM {schema}.leaders WHERE name = %(name)s::text;

-- Revoke by compare-and-set on record_ver, as revoke_task does for a task.
-- name: leader_revoke
UPDATE {schema}.leaders
SET owner = NULL, token = NULL, record_ver = record_ver + 1, updated_at = now()
WHERE name = %(name)s::text AND record_ver = %(record_ver)s::bigint AND owner IS NOT NULL
RETURNING name;

-- name: leader_resign
UPDATE {schema}.leaders
SET owner = NULL, token = NULL, record_ver = record_ver + 1, updated_at = now()
WHERE name = %(name)s::text AND owner = %(owner)s::text AND token = %(token)s::bigint
RETURNING name;

-- Wake-ups: the channels the triggers notify. tenure_tasks (0001_initial.sql):
-- a task became pending on the topic in the payload. tenure_events
-- (0006_follow_and_reports.sql): events were appended; only followers listen,
-- on a connection of their own, so workers are not woken by every transition.
-- name: listen
LISTEN tenure_tasks;
LISTEN tenure_leases;

-- name: listen_events
LISTEN tenure_events;

-- Registering an idle waiter, so that the triggers notify it
-- (0011_wake_only_waiters.sql). The exclusive lock waits for the transactions
-- checking for waiters or committing after a check; new ones queue behind it,
-- so the wait is bounded: a registration that cannot have the lock soon fails,
-- and its waiter polls.
-- name: wake_lock_timeout
SET LOCAL lock_timeout = '100ms';

-- name: wake_lock
SELECT pg_advisory_xact_lock(hashtext('tenure.wake'));

-- topics NULL: any topic. The registration lives ttl seconds from the start of
-- its transaction, on the server's clock, as the triggers read it.
-- name: wake_want
INSERT INTO {schema}.wake_wanted (waiter, topics, events, until)
VALUES (%(waiter)s::text, %(topics)s::text[], %(events)s::boolean,
        now() + make_interval(secs => %(ttl)s::float8))
ON CONFLICT (waiter) DO UPDATE
SET topics = EXCLUDED.topics, events = EXCLUDED.events, until = EXCLUDED.until;

-- Registrations of waiters that died: long expired, but a row each for the
-- triggers' check to skip. Deleted by every renewing process, on its own.
-- name: wake_tidy
DELETE FROM {schema}.wake_wanted WHERE until < now() - interval '1 minute';

-- Removing a registration needs no lock: a producer that still sees it only
-- notifies for nothing.
-- name: wake_drop
DELETE FROM {schema}.wake_wanted WHERE waiter = %(waiter)s::text;

-- Migrations. The advisory lock is held until the migrating transaction ends,
-- so processes migrating at once take turns: the later ones find the work done.

-- The isolation migrations need (see schema.migrate_connection), for a
-- migrating transaction that another opened (Django's). A no-op in a READ
-- COMMITTED transaction; PostgreSQL refuses it in one at another level that
-- has run a query already, where a migration could miss committed rows.
-- name: read_committed
SET TRANSACTION ISOLATION LEVEL READ COMMITTED;

-- name: lock_migrations
SELECT pg_advisory_xact_lock(hashtext('tenure.migrations'));

-- What a migration finds, in one read: whether the store's schema exists (it
-- is made by the first migration where it is missing, and only there: even
-- with IF NOT EXISTS, CREATE SCHEMA asks for the right to create schemas,
-- which a DBA who made the schema may not have given); and whether an install
-- made before tenure had a schema of its own waits in public (its ledger is
-- there and the store's schema has none) to be moved.
-- name: schema_state
SELECT to_regnamespace({schema_name}) IS NOT NULL AS schema_exists,
       to_regclass('public.tenure_migrations') IS NOT NULL
       AND to_regclass(quote_ident({schema_name}) || '.tenure_migrations') IS NULL
           AS in_public;

-- name: create_schema
CREATE SCHEMA IF NOT EXISTS {schema};

-- Within the migrating transaction only, the names the migration files leave
-- unqualified are made and found in the store's schema (pg_temp last, so that
-- no temporary table of the session stands in for one of tenure's).
-- name: migration_search_path
SET LOCAL search_path TO {schema}, pg_temp;

-- The search path a migration found, given back where the transaction goes on
-- with statements of someone else's (Django's migrations).
-- name: session_search_path
SELECT current_setting('search_path') AS path;

-- name: restore_search_path
SELECT set_config('search_path', %(path)s, true);

-- Moves such an install into the store's schema (current_schema(): the
-- migration's search path), in the migrating transaction. ALTER ... SET SCHEMA
-- changes the catalog only, whatever the tables hold; a table takes its
-- indexes, constraints, triggers and identity sequences with it, and every
-- row, lease and event cursor stays as it was. Each table is locked for the
-- rest of the transaction, milliseconds: the wait for a lock is bounded, so
-- that a long transaction on a table makes the move fail (to be run again)
-- rather than queue every worker behind it. The names are every object any
-- migration made (teardown.sql drops the same). A function made by 0016 or
-- later names the schema it was made in ("public"), and is made again naming
-- the new one.
--
-- A copy of the ledger stays in public: a process of an older version looks
-- for it there, and finding it current it makes no new tables beside the
-- moved ones (its statements fail instead, loudly, until it is upgraded).
-- Drop it once no such process runs.
-- name: move_from_public
DO $move$
DECLARE
    target text := current_schema();
    found record;
BEGIN
    PERFORM set_config('lock_timeout', '5s', true);
    FOR found IN
        SELECT c.relname FROM pg_class AS c
        WHERE c.relnamespace = 'public'::regnamespace AND c.relkind IN ('r', 'p')
          AND c.relname = ANY (ARRAY['tasks', 'events', 'event_log', 'leaders', 'workers',
                                     'reports', 'task_counts', 'task_transitions',
                                     'unique_locks', 'wake_wanted', 'tenure_migrations']
                               -- gates, schedules, paused_topics and the
                               -- limits' and ageing's tables are tenure's only where tenure
                               -- made them (a process pinned to schema=public
                               -- that went on to 0018 or later); else they may
                               -- be the application's own.
                               || CASE WHEN EXISTS (SELECT FROM public.tenure_migrations
                                                    WHERE version = 18)
                                       THEN ARRAY['gates'] ELSE ARRAY[]::text[] END
                               || CASE WHEN EXISTS (SELECT FROM public.tenure_migrations
                                                    WHERE version = 19)
                                       THEN ARRAY['schedules'] ELSE ARRAY[]::text[] END
                               || CASE WHEN EXISTS (SELECT FROM public.tenure_migrations
                                                    WHERE version = 20)
                                       THEN ARRAY['paused_topics'] ELSE ARRAY[]::text[] END
                               || CASE WHEN EXISTS (SELECT FROM public.tenure_migrations
                                                    WHERE version = 21)
                                       THEN ARRAY['topic_limits', 'topic_rates', 'rate_starts']
                                       ELSE ARRAY[]::text[] END
                               || CASE WHEN EXISTS (SELECT FROM public.tenure_migrations
                                                    WHERE version = 22)
                                       THEN ARRAY['topic_ageing'] ELSE ARRAY[]::text[] END)
    LOOP
        EXECUTE format('ALTER TABLE public.%I SET SCHEMA %I', found.relname, target);
    END LOOP;
    FOR found IN
        SELECT p.oid, p.proname, pg_get_function_identity_arguments(p.oid) AS arguments,
               p.prosrc LIKE '%"public".%' AS qualified
        FROM pg_proc AS p
        WHERE p.pronamespace = 'public'::regnamespace
          AND p.proname = ANY (ARRAY['tenure_created_wake', 'tenure_report_saved',
                'tenure_start_refused', 'tenure_task_created', 'tenure_task_transitioned',
                'tenure_tasks_created', 'tenure_tasks_tallied_created',
                'tenure_tasks_tallied_deleted', 'tenure_tasks_tallied_truncated',
                'tenure_tasks_tallied_updated', 'tenure_tasks_updated',
                'tenure_unique_refused', 'tenure_unique_transition', 'tenure_wake',
                'tenure_wake_checked', 'tenure_gate_passed', 'tenure_gate_broken',
                'tenure_stamped', 'tenure_error_kept', 'tenure_rooms'])
    LOOP
        EXECUTE format('ALTER FUNCTION public.%I(%s) SET SCHEMA %I',
                       found.proname, found.arguments, target);
        IF found.qualified THEN  -- made by 0016 or later, in public: it names public
            EXECUTE replace(pg_get_functiondef(found.oid), '"public".', '"' || target || '".');
        END IF;
    END LOOP;
    CREATE TABLE public.tenure_migrations (LIKE tenure_migrations INCLUDING ALL);
    INSERT INTO public.tenure_migrations SELECT * FROM tenure_migrations;
    EXECUTE format('COMMENT ON TABLE public.tenure_migrations IS %L', format(
        'tenure moved to schema %s: this copy of its ledger stops processes of an '
        'older version from making new tables here; drop it once none runs', target));
END
$move$;

-- name: create_migration_ledger
CREATE TABLE IF NOT EXISTS {schema}.tenure_migrations (
    version    integer     PRIMARY KEY,
    name       text        NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: applied_migrations
SELECT version FROM {schema}.tenure_migrations;

-- The ledger of an install in public, before it is moved.
-- name: applied_in_public
SELECT version FROM public.tenure_migrations;

-- name: record_migration
INSERT INTO {schema}.tenure_migrations (version, name) VALUES (%(version)s, %(name)s);

-- Unique locks taken at enqueue, in the creating transaction, for the tasks
-- just inserted (the caller passes the ids of those whose phase starts there).
-- A key is taken when free, expired, or this task's; the keys taken come back.
-- The lock lives until the scheduled time plus the task's time to live.
-- name: take_unique_locks
INSERT INTO {schema}.unique_locks AS held (key, task_id, lock, expires_at, created_at)
SELECT t.unique_key, t.id, t.unique_lock,
       COALESCE(t.run_at, t.created_at) + make_interval(secs => t.unique_ttl), t.created_at
FROM {schema}.tasks AS t
WHERE t.id = ANY(%(ids)s::text[])
ON CONFLICT (key) DO UPDATE SET
    task_id = EXCLUDED.task_id,
    lock = EXCLUDED.lock,
    expires_at = EXCLUDED.expires_at,
    created_at = EXCLUDED.created_at
WHERE held.expires_at <= EXCLUDED.created_at OR held.task_id = EXCLUDED.task_id
RETURNING held.key;

-- name: unique_lock_holders
SELECT key, task_id FROM {schema}.unique_locks WHERE key = ANY(%(keys)s::text[]);

-- name: list_unique_locks
SELECT key, task_id, lock, expires_at, created_at FROM {schema}.unique_locks
WHERE expires_at > COALESCE(%(now)s::timestamptz, now())
ORDER BY created_at, key
LIMIT %(limit)s::bigint;

-- name: prune_unique_locks
WITH gone AS (
    DELETE FROM {schema}.unique_locks WHERE expires_at <= COALESCE(%(now)s::timestamptz, now())
    RETURNING 1
)
SELECT count(*) AS count FROM gone;

-- The observer's reports (0006_follow_and_reports.sql). A run is saved only for
-- a slot later than the saved one, so of two schedulers running the same slot
-- one saves (and its trigger appends the report event) and the other gets no
-- row back.
-- name: report_save
INSERT INTO {schema}.reports (key, slot, run_at, owner, query, task_ids, total)
VALUES (%(key)s::text, %(slot)s::timestamptz, clock_timestamp(), %(owner)s::text,
        %(query)s::jsonb, %(task_ids)s::text[], %(total)s::bigint)
ON CONFLICT (key) DO UPDATE SET
    slot = excluded.slot, run_at = excluded.run_at, owner = excluded.owner,
    query = excluded.query, task_ids = excluded.task_ids, total = excluded.total
WHERE reports.slot < excluded.slot
RETURNING *;

-- name: report_get
SELECT * FROM {schema}.reports WHERE key = %(key)s::text;

-- name: report_list
SELECT * FROM {schema}.reports ORDER BY key;

-- Reports of queries no longer run (nothing saved within the retention).
-- name: prune_reports
WITH gone AS (
    DELETE FROM {schema}.reports
    WHERE run_at < COALESCE(%(now)s::timestamptz, now())
                   - make_interval(secs => %(older_than)s::float8)
    RETURNING 1
)
SELECT count(*) AS count FROM gone;

-- The newest events before a position, newest first (for a tail), below the
-- same horizon as list_events: everything after the newest one returned is yet
-- to be listed by list_events. Walks the events' key, (xid, id), backwards.
-- name: tail_events
WITH horizon AS (
    SELECT coalesce(min(running.xid), pg_snapshot_xmax(pg_current_snapshot())) AS xid
    FROM pg_snapshot_xip(pg_current_snapshot()) AS running (xid)
    WHERE NOT EXISTS (
        SELECT FROM pg_stat_activity AS other
        WHERE other.datid <> (SELECT oid FROM pg_database WHERE datname = current_database())
          AND other.backend_xid::text::bigint = running.xid::text::numeric %% 4294967296
    )
)
SELECT xid::text AS xid_text, id, task_id, topic, name, from_status, to_status, attempt,
       owner, at, error_type, error_message
FROM {schema}.events
WHERE (xid, id) < (%(before_xid)s::text::xid8, %(before_id)s::bigint)
  AND xid < (SELECT xid FROM horizon)
ORDER BY xid DESC, id DESC
LIMIT %(limit)s::bigint;

-- Operating: what the command line and the HTTP API show and do.
--
-- Ids that begin with :prefix (LIKE's own characters escaped by the caller), to
-- accept a unique prefix of an id; two are enough to say it is ambiguous. In
-- byte order (COLLATE "C"), whatever the database's collation, so the pattern
-- is a range of tasks_id_bytes.
-- name: find_task_ids
SELECT id FROM {schema}.tasks WHERE id COLLATE "C" LIKE %(pattern)s::text ESCAPE '\'
ORDER BY id COLLATE "C" LIMIT 2;

-- The greatest id, in byte order, that begins with :prefix (pattern as for
-- find_task_ids): one step back along tasks_id_bytes.
-- name: last_task_id
SELECT id FROM {schema}.tasks WHERE id COLLATE "C" LIKE %(pattern)s::text ESCAPE '\'
ORDER BY id COLLATE "C" DESC LIMIT 1;

-- One task's events, in the order they were written (walks events_by_task).
-- name: list_task_events
SELECT xid::text AS xid_text, id, task_id, topic, name, from_status, to_status, attempt,
       owner, at, error_type, error_message
FROM {schema}.events WHERE task_id = %(task_id)s::text ORDER BY id;

-- The statements of task_stats read one snapshot.
-- name: read_only_snapshot
SET TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY;

-- How many tasks each topic has in each status: the tallies kept by the
-- triggers of 0008_task_tallies.sql, summed (a few rows per key at most).
-- name: stats_counts
SELECT topic, status, sum(n)::bigint AS count
FROM {schema}.task_counts
GROUP BY topic, status
HAVING sum(n) <> 0;

-- Per topic with pending tasks, the longest wait among those runnable at :now:
-- the earliest time one became runnable (its run_at, or its creation if it had
-- no delay), among those that became runnable by :now. Walks
-- tasks_pending_since (0009_exact_tallies.sql): one index entry per topic.
-- name: stats_oldest_pending
SELECT waiting.topic, oldest.since
FROM (SELECT topic FROM {schema}.task_counts WHERE status = 'pending'
      GROUP BY topic HAVING sum(n) > 0) AS waiting
CROSS JOIN LATERAL (
    SELECT coalesce(run_at, created_at) AS since
    FROM {schema}.tasks
    WHERE status = 'pending' AND topic = waiting.topic
      AND coalesce(run_at, created_at) <= COALESCE(%(now)s::timestamptz, now())
    ORDER BY coalesce(run_at, created_at)
    LIMIT 1
) AS oldest;

-- How many tasks ended (done, failed, cancelled) since :since, by how, per topic:
-- the minutes after the one :since falls in from the tallies (each entry is
-- tallied in its event's minute), the rest of that minute from the events
-- themselves (walks events_by_time over less than a minute).
-- name: stats_endings
SELECT topic, status, sum(count)::bigint AS count
FROM (
    SELECT topic, status, sum(n) AS count
    FROM {schema}.task_transitions
    WHERE minute >= date_trunc('minute', %(since)s::timestamptz) + interval '1 minute'
      AND status IN ('done', 'failed', 'cancelled')
    GROUP BY topic, status
    UNION ALL
    SELECT topic, to_status, count(*)
    FROM {schema}.events
    WHERE at >= %(since)s::timestamptz
      AND at < date_trunc('minute', %(since)s::timestamptz) + interval '1 minute'
      AND to_status IN ('done', 'failed', 'cancelled')
    GROUP BY topic, to_status
) AS ended
GROUP BY topic, status;

-- Fold the tallies' delta rows: one row per key for the counts; one per key and
-- minute for each minute that is over. Writers only append, so folding never
-- waits on them, and a delta committed meanwhile is folded next time. Keys
-- already folded (one row, not zero) are left alone: an idle queue's fold
-- writes nothing.
-- name: fold_task_counts
WITH unfolded AS (
    SELECT topic, status FROM {schema}.task_counts
    GROUP BY topic, status HAVING count(*) > 1 OR bool_or(n = 0)
), gone AS (
    DELETE FROM {schema}.task_counts AS c USING unfolded
    WHERE c.topic = unfolded.topic AND c.status = unfolded.status
    RETURNING c.topic, c.status, c.n
)
INSERT INTO {schema}.task_counts (topic, status, n)
SELECT topic, status, sum(n) FROM gone GROUP BY topic, status HAVING sum(n) <> 0;

-- name: fold_task_transitions
WITH gone AS (
    DELETE FROM {schema}.task_transitions
    WHERE NOT folded AND minute < date_trunc('minute', now())
    RETURNING minute, topic, status, n
)
INSERT INTO {schema}.task_transitions (minute, topic, status, n, folded)
SELECT minute, topic, status, sum(n), true FROM gone GROUP BY minute, topic, status;

-- Minutes older than a day join the total since the start (minute NULL).
-- name: compact_task_transitions
WITH gone AS (
    DELETE FROM {schema}.task_transitions
    WHERE minute IS NULL OR minute < now() - interval '1 day'
    RETURNING topic, status, n
)
INSERT INTO {schema}.task_transitions (minute, topic, status, n, folded)
SELECT NULL, topic, status, sum(n), true FROM gone GROUP BY topic, status;

-- Per topic, the tasks that entered each status since the tallies began.
-- name: transition_totals
SELECT topic, status, sum(n)::bigint AS count FROM {schema}.task_transitions GROUP BY topic, status;

-- Listing, and what the dashboard reads.
--
-- A listing's filters: those an index narrows to (status, group), and those
-- checked on each row. text is a literal substring of the description: strpos
-- takes no pattern, and lower() in the "C" collation folds ASCII letters only,
-- as SQLite's lower() does, so both stores match the same tasks (and it costs
-- a third of what ILIKE does in a linguistic collation).
-- fragment: index_filters
AND (%(status)s::text IS NULL OR status = %(status)s::text)
  AND (%(group_id)s::text IS NULL OR group_id = %(group_id)s::text)

-- fragment: row_filters
AND (%(topic)s::text IS NULL OR topic = %(topic)s::text)
  AND (%(sub_topic)s::text IS NULL OR sub_topic = %(sub_topic)s::text)
  AND (%(name)s::text IS NULL OR name = %(name)s::text)
  AND (%(text)s::text IS NULL
       OR strpos(lower(description COLLATE "C"), lower(%(text)s::text COLLATE "C")) > 0)
  AND (%(created_from)s::timestamptz IS NULL OR created_at >= %(created_from)s::timestamptz)
  AND (%(created_to)s::timestamptz IS NULL OR created_at < %(created_to)s::timestamptz)
  AND (%(meta)s::jsonb IS NULL OR meta @> %(meta)s::jsonb)

-- A page whose work :scan bounds: the tasks examined are the first :scan past
-- the cursor among those of the status and group asked for, in the listing's
-- order (the inner LIMIT), and row_filters pick the page among them. Only the
-- columns row_filters read are taken from the examined rows, the whole task
-- from the page's: a third less work over 50,000 rows. examined_to, looked up
-- only when the page came out short, is the position of the last task
-- examined (NULL when fewer than :scan were left), where the next page starts:
-- the same walk in the same snapshot, over index entries alone. One row comes
-- back even for an empty page, to carry it.
--
-- A status is matched as a range, and sorted by: the CASE is the status when
-- one is asked for and a constant otherwise, folded away since each plan is
-- made for the values given. With "status = x" the planner may walk the
-- primary key instead and skip the other statuses' rows (four times the rows
-- when a quarter of the tasks are pending); sorted by (status, seq), the
-- examined tasks come from tasks_by_status, in order, and nothing is sorted.
-- Without a status they come from the primary key (or tasks_by_group).
-- fragment: scan_filters
AND (%(status)s::text IS NULL
       OR (status >= %(status)s::text AND status <= %(status)s::text))
  AND (%(group_id)s::text IS NULL OR group_id = %(group_id)s::text)

-- name: list_tasks_scan
WITH page AS (
    SELECT e.seq
    FROM (
        SELECT seq, status, topic, sub_topic, name, description, created_at, meta
        FROM {schema}.tasks
        WHERE seq > %(after)s::bigint {scan_filters}
        ORDER BY CASE WHEN %(status)s::text IS NULL THEN '' ELSE status END, seq
        LIMIT %(scan)s::bigint
    ) AS e
    WHERE true {row_filters}
    ORDER BY CASE WHEN %(status)s::text IS NULL THEN '' ELSE status END, seq
    LIMIT %(limit)s::bigint
)
SELECT {task_columns},
       CASE WHEN (SELECT count(*) FROM page) < %(limit)s::bigint THEN (
           SELECT seq FROM {schema}.tasks
           WHERE seq > %(after)s::bigint {scan_filters}
           ORDER BY CASE WHEN %(status)s::text IS NULL THEN '' ELSE status END, seq
           OFFSET %(scan)s::bigint - 1 LIMIT 1
       ) END AS examined_to
FROM (SELECT 1) AS one
LEFT JOIN page ON true
LEFT JOIN {schema}.tasks AS t ON t.seq = page.seq
ORDER BY t.seq;

-- The same, newest first: from the position before :before, backwards.
-- name: list_tasks_newest_scan
WITH page AS (
    SELECT e.seq
    FROM (
        SELECT seq, status, topic, sub_topic, name, description, created_at, meta
        FROM {schema}.tasks
        WHERE seq < %(before)s::bigint {scan_filters}
        ORDER BY CASE WHEN %(status)s::text IS NULL THEN '' ELSE status END DESC, seq DESC
        LIMIT %(scan)s::bigint
    ) AS e
    WHERE true {row_filters}
    ORDER BY CASE WHEN %(status)s::text IS NULL THEN '' ELSE status END DESC, seq DESC
    LIMIT %(limit)s::bigint
)
SELECT {task_columns},
       CASE WHEN (SELECT count(*) FROM page) < %(limit)s::bigint THEN (
           SELECT seq FROM {schema}.tasks
           WHERE seq < %(before)s::bigint {scan_filters}
           ORDER BY CASE WHEN %(status)s::text IS NULL THEN '' ELSE status END DESC, seq DESC
           OFFSET %(scan)s::bigint - 1 LIMIT 1
       ) END AS examined_to
FROM (SELECT 1) AS one
LEFT JOIN page ON true
LEFT JOIN {schema}.tasks AS t ON t.seq = page.seq
ORDER BY t.seq DESC;

-- How many tasks entered each status in each minute from :since to :until:
-- the tallies (0008_task_tallies.sql), delta rows not yet folded included,
-- found by task_transitions_by_minute. Their cost follows the minutes and
-- topics asked for, not the number of tasks.
-- name: task_rates
SELECT minute, status, sum(n)::bigint AS count
FROM {schema}.task_transitions
WHERE minute >= %(since)s::timestamptz AND minute < %(until)s::timestamptz
  AND (%(topic)s::text IS NULL OR topic = %(topic)s::text)
GROUP BY minute, status;

-- The groups with tasks among the newest :scan, the group of the newest task
-- first, at most :limit; each with its tasks per status and its earliest
-- creation, over all its tasks (walks tasks_by_group, per group). The newest
-- :scan tasks are those from the position of the :scan-th newest on (an
-- index-only walk of the primary key); their groups are found either by
-- walking the primary key from there or by tasks_by_group's entries alone,
-- whichever the planner finds cheaper. Run with JIT off (without_jit).
-- name: task_groups
WITH recent AS MATERIALIZED (
    SELECT group_id, max(seq) AS newest
    FROM {schema}.tasks
    WHERE group_id IS NOT NULL
      AND seq >= coalesce((SELECT seq FROM {schema}.tasks ORDER BY seq DESC
                           OFFSET %(scan)s::bigint - 1 LIMIT 1), 0)
    GROUP BY group_id
    ORDER BY newest DESC
    LIMIT %(limit)s::bigint
)
SELECT recent.group_id, counted.status, counted.count, counted.created_at
FROM recent
CROSS JOIN LATERAL (
    SELECT status, count(*) AS count, min(created_at) AS created_at
    FROM {schema}.tasks
    WHERE group_id = recent.group_id
    GROUP BY status
) AS counted
ORDER BY recent.newest DESC, counted.status;

-- JIT compiles a plan whose estimated cost passes jit_above_cost, as
-- task_groups' does once its groups are large (50 groups of 1,000 tasks): some
-- 80 ms of compiling to save a millisecond of running. Off for the one
-- transaction it is set in.
-- name: without_jit
SET LOCAL jit = off;

-- What tenure doctor reads. Run times: the newest finished tasks along
-- tasks_finished (its predicate implied, so the walk stops after the sample),
-- then per name the 99th percentile by nearest rank, counted in integers as
-- SQLite's twin does, and the shortest lease the runs were held under.
-- name: task_run_times
WITH recent AS (
    SELECT name, status, duration, lease_seconds
    FROM {schema}.tasks
    WHERE status IN ('done', 'failed', 'cancelled')
    ORDER BY finished_at DESC
    LIMIT %(sample)s::bigint
), ranked AS (
    SELECT name, duration, lease_seconds,
           row_number() OVER (PARTITION BY name ORDER BY duration) AS rank,
           count(*) OVER (PARTITION BY name) AS runs
    FROM recent
    WHERE status <> 'cancelled' AND duration IS NOT NULL
)
SELECT name, max(runs) AS runs,
       max(duration) FILTER (WHERE rank = (99 * runs + 99) / 100) AS p99,
       min(lease_seconds) AS lease
FROM ranked
GROUP BY name
ORDER BY name;

-- name: leader_silence
SELECT EXTRACT(EPOCH FROM clock_timestamp() - updated_at)::float8 AS silence
FROM {schema}.leaders
WHERE name = %(name)s::text AND owner IS NOT NULL;

-- name: database_settings
SELECT name, setting
FROM pg_settings
WHERE name IN ('fsync', 'synchronous_commit', 'max_connections',
               'superuser_reserved_connections', 'autovacuum')
ORDER BY name;

-- tenure's tables in the store's schema, with what a publication needs of
-- each, and whether autovacuum may vacuum it (no autovacuum_enabled=false
-- among its storage parameters). The names are every table the migrations
-- make (teardown.sql drops the same).
-- name: table_keys
SELECT n.nspname AS schema, c.relname AS name,
       NOT EXISTS (SELECT 1 FROM pg_options_to_table(c.reloptions) AS o
                   WHERE o.option_name = 'autovacuum_enabled' AND NOT o.option_value::boolean)
           AS autovacuum,
       EXISTS (SELECT 1 FROM pg_index AS i WHERE i.indrelid = c.oid AND i.indisprimary)
           AS primary_key,
       CASE c.relreplident WHEN 'd' THEN 'default' WHEN 'n' THEN 'nothing'
                           WHEN 'f' THEN 'full' ELSE 'index' END AS replica_identity
FROM unnest(ARRAY['tasks', 'events', 'event_log', 'leaders', 'workers', 'reports',
                  'task_counts', 'task_transitions', 'unique_locks', 'wake_wanted',
                  'tenure_migrations']) AS known(name)
JOIN pg_class AS c ON c.oid = to_regclass(quote_ident({schema_name}) || '.' || quote_ident(known.name))
JOIN pg_namespace AS n ON n.oid = c.relnamespace
ORDER BY c.relname;


-- Schedules (tenure.store.schedules): each periodic task declared in code or
-- added at run time, with the newest tick it enqueued.

-- A schedule declared in code: a new one starts from now; a stored one takes
-- the spec, and starts again from now if its timing changed. A name added at
-- run time is left alone. Rows that would not change are not written.
-- name: schedule_declare
INSERT INTO {schema}.schedules AS s
    (name, origin, task, cron, every, tz, args, kwargs, catch_up, last_tick,
     created_at, updated_at)
VALUES (%(name)s::text, 'code', %(task)s::text, %(cron)s::text, %(every)s::float8,
        %(tz)s::text, %(args)s::jsonb, %(kwargs)s::jsonb, %(catch_up)s::float8,
        COALESCE(%(now)s::timestamptz, now()), COALESCE(%(now)s::timestamptz, now()),
        COALESCE(%(now)s::timestamptz, now()))
ON CONFLICT (name) DO UPDATE SET
    task = excluded.task, cron = excluded.cron, every = excluded.every, tz = excluded.tz,
    args = excluded.args, kwargs = excluded.kwargs, catch_up = excluded.catch_up,
    last_tick = CASE WHEN (s.cron, s.every, s.tz)
                          IS NOT DISTINCT FROM (excluded.cron, excluded.every, excluded.tz)
                     THEN s.last_tick ELSE GREATEST(s.last_tick, excluded.last_tick) END,
    updated_at = excluded.updated_at
WHERE s.origin = 'code'
  AND (s.task, s.cron, s.every, s.tz, s.args, s.kwargs, s.catch_up)
      IS DISTINCT FROM (excluded.task, excluded.cron, excluded.every, excluded.tz,
                        excluded.args, excluded.kwargs, excluded.catch_up);

-- name: schedule_add
INSERT INTO {schema}.schedules
    (name, origin, task, cron, every, tz, args, kwargs, catch_up, last_tick,
     created_at, updated_at)
VALUES (%(name)s::text, 'store', %(task)s::text, %(cron)s::text, %(every)s::float8,
        %(tz)s::text, %(args)s::jsonb, %(kwargs)s::jsonb, %(catch_up)s::float8,
        COALESCE(%(now)s::timestamptz, now()), COALESCE(%(now)s::timestamptz, now()),
        COALESCE(%(now)s::timestamptz, now()))
ON CONFLICT (name) DO NOTHING
RETURNING *;

-- A new spec for a schedule added at run time; a new timing starts again from now.
-- name: schedule_replace
UPDATE {schema}.schedules AS s SET
    task = %(task)s::text, cron = %(cron)s::text, every = %(every)s::float8,
    tz = %(tz)s::text, args = %(args)s::jsonb, kwargs = %(kwargs)s::jsonb,
    catch_up = %(catch_up)s::float8,
    last_tick = CASE WHEN (s.cron, s.every, s.tz)
                          IS NOT DISTINCT FROM (%(cron)s::text, %(every)s::float8, %(tz)s::text)
                     THEN s.last_tick
                     ELSE GREATEST(s.last_tick, COALESCE(%(now)s::timestamptz, now())) END,
    updated_at = COALESCE(%(now)s::timestamptz, now())
WHERE s.name = %(name)s::text AND s.origin = 'store'
RETURNING *;

-- Pause (keeping the first pause's time), or resume from now: the ticks a
-- paused schedule missed are not enqueued.
-- name: schedule_pause
UPDATE {schema}.schedules AS s SET
    paused_at = CASE WHEN %(paused)s::boolean
                     THEN COALESCE(s.paused_at, COALESCE(%(now)s::timestamptz, now())) END,
    last_tick = CASE WHEN %(paused)s::boolean OR s.paused_at IS NULL THEN s.last_tick
                     ELSE GREATEST(s.last_tick, COALESCE(%(now)s::timestamptz, now())) END,
    updated_at = COALESCE(%(now)s::timestamptz, now())
WHERE s.name = %(name)s::text
RETURNING *;

-- name: schedule_remove
DELETE FROM {schema}.schedules WHERE name = %(name)s::text RETURNING name;

-- name: schedule_get
SELECT * FROM {schema}.schedules WHERE name = %(name)s::text;

-- name: schedule_list
SELECT * FROM {schema}.schedules ORDER BY name;

-- The compare-and-set that makes each tick enqueued once: the last tick moves
-- forward only, and only while the schedule runs. Its task is written in the
-- same transaction.
-- name: schedule_advance
UPDATE {schema}.schedules SET
    last_tick = %(tick)s::timestamptz,
    last_task_id = COALESCE(%(task_id)s::text, last_task_id)
WHERE name = %(name)s::text AND paused_at IS NULL AND last_tick < %(tick)s::timestamptz
RETURNING name;
