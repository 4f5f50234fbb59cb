"""``make soak``: tenure under a steady load for a long while, with a short
retention, sampled every few seconds, to show that its cost stays flat.

Producers enqueue at a fixed rate, workers drain, the scheduler prunes what
is older than the retention; every sample records the tables' size and dead
rows, what retention has yet to delete and how old the oldest finished task
and event are, enqueue and pickup latencies, the drain's rate and the
database server's processor time. A run writes its samples as JSON and a chart
(SVG) under ``benchmarks/results/``, and checks itself against the plateau it
promises (:mod:`benchmarks.soak.verdict`).
"""
