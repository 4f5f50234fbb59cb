-- Every table has a primary key. A database published for logical
-- replication (CREATE PUBLICATION ... FOR ALL TABLES: change data capture, a
-- managed database's replica or its upgrade tooling) refuses deletes and
-- updates on a table without a replica identity, and the scheduler's folding
-- of the tallies failed there every cycle ("cannot delete from table
-- task_counts because it does not have a replica identity"). The tallies are
-- rows of deltas, many for one topic and status until folded, so each gets a
-- number of its own.
ALTER TABLE task_counts ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY;
ALTER TABLE task_transitions ADD COLUMN id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY;
