-- A task's history: its events by task, for `tenure show`, the HTTP API and the
-- dashboard's timeline, without reading the whole log.
CREATE INDEX events_by_task ON events (task_id, id);
