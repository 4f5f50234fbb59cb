-- The reverse of every migration in this folder at once: tenure's tables (and
-- with them their indexes and triggers), its view, and the migration ledger,
-- whichever migrations were applied. Run by the reverse of the Django
-- migration 0001_initial (`manage.py migrate tenure zero`).
--
-- Every object any migration ever made is named here, IF EXISTS, so that a
-- database at an older version is emptied as well as a current one
-- (tests/integration/test_schema_teardown.py checks each version).
--
-- The names without the tenure_ prefix are tenure's only in a database from
-- before 0008_prefixed_names; from it on they may be an application's own
-- tables, so the statements that drop them are left out for a database that
-- recorded 0008 (tenure.store.sqlite.schema.teardown_statements).
DROP VIEW IF EXISTS tenure_next_event_id;
DROP TABLE IF EXISTS tenure_task_transition_totals;
DROP TABLE IF EXISTS tenure_reports;
DROP TABLE IF EXISTS tenure_unique_locks;
DROP TABLE IF EXISTS tenure_events;
DROP TABLE IF EXISTS tenure_event_log;
DROP TABLE IF EXISTS tenure_leaders;
DROP TABLE IF EXISTS tenure_workers;
DROP TABLE IF EXISTS tenure_tasks;
DROP TABLE IF EXISTS tenure_gates;
DROP TABLE IF EXISTS tenure_schedules;
DROP TABLE IF EXISTS tenure_paused_topics;
DROP TABLE IF EXISTS tenure_topic_limits;
DROP TABLE IF EXISTS tenure_topic_rates;
DROP TABLE IF EXISTS tenure_topic_ageing;
DROP TABLE IF EXISTS tenure_rate_starts;
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
