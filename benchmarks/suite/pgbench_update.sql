-- pgbench script: one transaction updating :size consecutive rows of
-- tenure_bench_rows, chosen at random, returning them (pass -D rows=... -D size=...).
-- Run with -M prepared, as tenure's statements run (psycopg prepares them).
\set first random(1, :rows - :size + 1)
\set last :first + :size - 1
UPDATE tenure_bench_rows SET n = n + 1 WHERE id BETWEEN :first AND :last RETURNING n;
