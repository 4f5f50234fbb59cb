-- tenure in a schema of its own (default "tenure", set with ?schema=NAME in
-- the store URL or TENURE_SCHEMA), so that an application's database can hold
-- it beside its own tables, a "tasks" table of its own included.
--
-- Every migration runs with the search path set to the store's schema, so the
-- names the migration files leave unqualified are made, and found, there; the
-- store's queries name the schema themselves. An install made before this
-- migration, in "public", is moved into the schema first, in the same
-- transaction (see move_from_public in queries.sql): ALTER ... SET SCHEMA
-- changes the catalog only, however large the tables, and every row, lease
-- and event cursor stays as it was.
--
-- What this file adds: the trigger functions find tenure's tables through the
-- search path, and a trigger fires in whatever session writes the row, an
-- application's connection enqueuing in its own transaction with its own
-- search path included. Each function now carries the store's schema as its
-- own search path (FROM CURRENT: the migration's), pg_temp last, so no
-- session's objects can stand in for tenure's. A function a later migration
-- makes says SET search_path FROM CURRENT itself.
ALTER FUNCTION tenure_created_wake() SET search_path FROM CURRENT;
ALTER FUNCTION tenure_report_saved() SET search_path FROM CURRENT;
ALTER FUNCTION tenure_start_refused(text, text, bigint, bigint) SET search_path FROM CURRENT;
ALTER FUNCTION tenure_tasks_created() SET search_path FROM CURRENT;
ALTER FUNCTION tenure_tasks_tallied_deleted() SET search_path FROM CURRENT;
ALTER FUNCTION tenure_tasks_tallied_truncated() SET search_path FROM CURRENT;
ALTER FUNCTION tenure_tasks_updated() SET search_path FROM CURRENT;
ALTER FUNCTION tenure_unique_refused(tasks, text) SET search_path FROM CURRENT;
ALTER FUNCTION tenure_unique_transition() SET search_path FROM CURRENT;
ALTER FUNCTION tenure_wake(text[], boolean) SET search_path FROM CURRENT;
ALTER FUNCTION tenure_wake_checked() SET search_path FROM CURRENT;
