"""The PostgreSQL store: many machines sharing one queue (``tenure[postgres]``).

``backend`` holds the store; ``statements`` runs its SQL (batches, savepoints
on a caller's connection); ``schema`` applies the numbered migrations;
``notify`` turns LISTEN/NOTIFY into :meth:`~tenure.store.base.Store.task_wait`
wake-ups; ``driver`` turns psycopg's errors into tenure's; ``pooling`` keeps
reconnecting often while the server is away; ``copying`` streams large batches
of new tasks with ``COPY``; ``rows`` converts between rows and tasks;
``pooler`` finds a pooler in transaction mode (PgBouncer) in between and keeps
the store right through it, with a direct ``listen=`` URL for the listeners.
All SQL lives in ``queries.sql``, ``session.sql`` and ``migrations/``.
"""
