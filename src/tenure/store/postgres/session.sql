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

-- The server process of this session: through a pooler, not the one the
-- start-up's cancel key names.
-- name: backend_pid
SELECT pg_backend_pid() AS pid;
