-- A cursor for the event log that never skips an event. Identity ids are drawn
-- when a row is inserted, not when its transaction commits, so a follower that
-- pages by id can pass an id whose transaction commits later and miss that
-- event forever. Each event now records the transaction that wrote it (the
-- top-level xid8, the same for every event of a transaction, savepoints
-- included), and list_events pages by (xid, id), returning only events whose
-- transaction is older than every transaction still open: no event can appear
-- behind a follower's cursor any more.
--
-- Events written before this migration get xid 0, which sorts before every
-- real transaction. A constant default adds the column without rewriting the
-- table; the default for new rows is set afterwards.
ALTER TABLE events ADD COLUMN xid xid8 NOT NULL DEFAULT '0'::xid8;
ALTER TABLE events ALTER COLUMN xid SET DEFAULT pg_current_xact_id();

CREATE INDEX events_by_xid ON events (xid, id);
