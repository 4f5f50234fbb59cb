-- Named queries of a PostgreSQL session's set-up, apart from the store's
-- queries.sql: they serve every connection tenure makes, before any store (see
-- driver.py's set_up and pooler.py). Each starts with "-- name: <name>".

-- The session's time zone: times come back in UTC as they are stored, with no
-- conversion per value. Set after connecting rather than in the start-up
-- packet's options, which PgBouncer refuses; TimeZone is one of the settings
-- PgBouncer follows for each client (the server reports it as it changes) and
-- sets again on whichever server session it lends, so it holds in every
-- transaction.
-- name: session_setup
SELECT set_config('TimeZone', 'UTC', false) AS time_zone;

-- No JIT compiling for tenure's own sessions, on a direct connection only
-- (through a pooler a setting would stay on a server session that other
-- clients borrow; there, the reservations turn it off per transaction, with
-- queries.sql's without_jit). PostgreSQL compiles a plan whose estimated cost
-- passes jit_above_cost: a reservation's is estimated so when the statistics
-- are older than a burst of new tasks (most of the table done when last
-- analyzed), and compiling it took 90 to 115 ms of the 150 ms each
-- reservation then took, against 1 ms to run it: a drain fell from 15,000
-- tasks/s to 1,000. tenure's statements are short and index-driven, and gain
-- nothing from JIT.
-- name: without_jit
SELECT set_config('jit', 'off', false) AS jit;

-- The server process of this session: through a pooler, not the one the
-- start-up's cancel key names.
-- name: backend_pid
SELECT pg_backend_pid() AS pid;
