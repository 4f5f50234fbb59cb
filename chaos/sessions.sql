-- Named queries of the connection-kills scenario (chaos.sessions), run on the
-- scenario's own database. Parameters are bound, never spliced in.

-- name: tenure_sessions
-- tenure's sessions on this database (application_name tenure-<role>), but the
-- one asking: their backend pid, name, state, what they run and their port.
SELECT pid, application_name, state, left(query, 80) AS query, client_port
FROM pg_stat_activity
WHERE datname = current_database()
  AND application_name LIKE %(prefix)s
  AND pid <> pg_backend_pid()

-- name: terminate
-- End one backend of this database that is still one of tenure's sessions.
SELECT pg_terminate_backend(pid) AS ended
FROM pg_stat_activity
WHERE pid = %(pid)s
  AND datname = current_database()
  AND application_name LIKE %(prefix)s
