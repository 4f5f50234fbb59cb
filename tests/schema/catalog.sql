-- Catalog queries that dump a migrated store's schema in a stable order, for
-- the snapshots beside this file (tests/integration/test_schema_snapshot.py).
-- Each object sorts by kind, then table, then name: the output changes only
-- when the schema does.

-- name: sqlite_objects
SELECT type, name, sql FROM sqlite_master
WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite_%'
ORDER BY CASE type WHEN 'table' THEN 0 WHEN 'index' THEN 1 ELSE 2 END, tbl_name, name;

-- name: postgres_tables
SELECT c.relname AS table_name, array_to_string(c.reloptions, ', ') AS options
FROM pg_class AS c
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
ORDER BY c.relname;

-- name: postgres_columns
SELECT c.relname AS table_name, a.attname AS column_name,
       format_type(a.atttypid, a.atttypmod) AS column_type,
       a.attnotnull AS not_null, a.attidentity AS identity,
       pg_get_expr(d.adbin, d.adrelid) AS column_default
FROM pg_class AS c
JOIN pg_attribute AS a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
LEFT JOIN pg_attrdef AS d ON d.adrelid = c.oid AND d.adnum = a.attnum
WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p')
ORDER BY c.relname, a.attnum;

-- name: postgres_constraints
SELECT c.relname AS table_name, k.conname AS name, pg_get_constraintdef(k.oid) AS definition
FROM pg_constraint AS k
JOIN pg_class AS c ON c.oid = k.conrelid
WHERE c.relnamespace = current_schema()::regnamespace
ORDER BY c.relname, k.conname;

-- name: postgres_indexes
SELECT tablename AS table_name, indexname AS name, indexdef AS definition
FROM pg_indexes
WHERE schemaname = current_schema()
ORDER BY tablename, indexname;

-- name: postgres_functions
SELECT p.proname AS name, pg_get_function_identity_arguments(p.oid) AS arguments,
       pg_get_functiondef(p.oid) AS definition
FROM pg_proc AS p
WHERE p.pronamespace = current_schema()::regnamespace
ORDER BY p.proname, 2;

-- name: postgres_triggers
SELECT c.relname AS table_name, t.tgname AS name, pg_get_triggerdef(t.oid) AS definition
FROM pg_trigger AS t
JOIN pg_class AS c ON c.oid = t.tgrelid
WHERE c.relnamespace = current_schema()::regnamespace AND NOT t.tgisinternal
ORDER BY c.relname, t.tgname;

-- Every relation (table, view, index, sequence), function and type in the
-- schema: what a teardown must leave none of.
-- name: postgres_everything
SELECT 'relation' AS kind, c.relname AS name FROM pg_class AS c
WHERE c.relnamespace = current_schema()::regnamespace
UNION ALL
SELECT 'function', p.proname FROM pg_proc AS p
WHERE p.pronamespace = current_schema()::regnamespace
UNION ALL
SELECT 'type', t.typname FROM pg_type AS t
WHERE t.typnamespace = current_schema()::regnamespace
ORDER BY 1, 2;
