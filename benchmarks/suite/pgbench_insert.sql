-- pgbench script: one transaction inserting one row of a task's size into
-- tenure_bench_inserts (postgres.sql's limit_insert_setup makes it).
INSERT INTO tenure_bench_inserts (data) VALUES ('{"args": [], "kwargs": {}}');
