-- The reverse of every migration in this folder at once: tenure's tables (and
-- with them their indexes, triggers and sequences), its functions, and the
-- migration ledger, whichever migrations were applied. Run by the reverse of
-- the Django migration 0001_initial (`manage.py migrate tenure zero`).
--
-- Every object any migration ever made is named here, IF EXISTS, so that a
-- database at an older version is emptied as well as a current one
-- (tests/integration/test_schema_teardown.py checks each version). Nothing
-- CASCADEs: a view or a foreign key of yours on a tenure table stops the drop,
-- and the error names it, rather than being dropped with it.
--
-- The order is the dependencies': first the functions no trigger calls (one
-- takes the row type of tasks, which cannot be dropped before it), then the
-- tables with their triggers, then the trigger functions.
DROP FUNCTION IF EXISTS
    tenure_unique_refused, tenure_start_refused, tenure_wake, tenure_wake_checked,
    tenure_gate_passed, tenure_gate_broken, tenure_stamped, tenure_rooms;

DROP TABLE IF EXISTS
    tasks, events, event_log, leaders, workers, reports, task_counts,
    task_transitions, unique_locks, wake_wanted, gates, schedules, paused_topics,
    topic_limits, topic_rates, rate_starts, topic_ageing, tenure_migrations;

DROP FUNCTION IF EXISTS
    tenure_created_wake, tenure_report_saved, tenure_task_created,
    tenure_task_transitioned, tenure_tasks_created, tenure_tasks_tallied_created,
    tenure_tasks_tallied_deleted, tenure_tasks_tallied_truncated,
    tenure_tasks_tallied_updated, tenure_tasks_updated, tenure_unique_transition,
    tenure_error_kept;

-- Last, the schema itself (never public) when nothing of anyone else's is
-- left in it, and the copy of the ledger that the move out of public left
-- there for processes of older versions (see move_from_public in queries.sql).
DO $drop$
BEGIN
    IF obj_description(to_regclass('public.tenure_migrations'), 'pg_class')
       LIKE 'tenure moved to schema %' THEN
        DROP TABLE public.tenure_migrations;
    END IF;
    IF current_schema() <> 'public' THEN
        BEGIN
            EXECUTE format('DROP SCHEMA %I', current_schema());
        EXCEPTION WHEN dependent_objects_still_exist THEN
            NULL;  -- something else lives in it: it stays
        END;
    END IF;
END
$drop$;
