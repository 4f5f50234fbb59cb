-- The reverse of every migration in this folder at once: tenure's tables (and
-- with them their indexes and triggers), its view, and the migration ledger,
-- whichever migrations were applied. Run by the reverse of the Django
-- migration 0001_initial (`manage.py migrate tenure zero`).
--
-- Every object any migration ever made is named here, IF EXISTS, so that a
-- database at an older version is emptied as well as a current one
-- (tests/integration/test_schema_teardown.py checks each version).
DROP VIEW IF EXISTS next_event_id;
DROP TABLE IF EXISTS task_transition_totals;
DROP TABLE IF EXISTS reports;
DROP TABLE IF EXISTS unique_locks;
DROP TABLE IF EXISTS events;
DROP TABLE IF EXISTS event_log;
DROP TABLE IF EXISTS leaders;
DROP TABLE IF EXISTS workers;
DROP TABLE IF EXISTS tasks;
DROP TABLE IF EXISTS tenure_migrations;
