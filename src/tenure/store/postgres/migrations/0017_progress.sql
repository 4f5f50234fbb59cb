-- A running task's progress, written by its holder (tenure.current().progress):
-- a fraction from 0 to 1 and a short note. Nullable columns without a default:
-- adding them rewrites no row and holds the table's lock for a moment only.
ALTER TABLE tasks ADD COLUMN progress double precision, ADD COLUMN progress_note text;
