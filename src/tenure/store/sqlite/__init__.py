"""The embedded store: one SQLite file shared by the processes of one machine.

``backend`` holds the store; ``rows`` converts between rows and tasks;
``unique`` takes unique locks inside the creating and reserving transactions;
``schema`` applies the numbered migrations. All SQL lives in ``queries.sql``
and ``migrations/``.
"""
