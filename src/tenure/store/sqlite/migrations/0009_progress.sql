-- A running task's progress, written by its holder (tenure.current().progress):
-- a fraction from 0 to 1 and a short note. Adding a nullable column rewrites no
-- row.
ALTER TABLE tenure_tasks ADD COLUMN progress REAL;
ALTER TABLE tenure_tasks ADD COLUMN progress_note TEXT;
