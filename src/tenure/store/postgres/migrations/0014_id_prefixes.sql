-- Ids are also looked up by their beginning: the unique prefix a person typed
-- (the command line, the API, the dashboard), the last tick of a periodic
-- task. tasks_id_key orders ids by the database's collation, where LIKE
-- 'prefix%' cannot be a range (a linguistic collation does not keep the ids
-- beginning with a prefix together), so each lookup read the whole index.
-- This index orders them by their bytes, whatever the collation: a prefix is a
-- range of it, and the greatest id of a prefix one step back.
CREATE INDEX tasks_id_bytes ON tasks (id COLLATE "C");
