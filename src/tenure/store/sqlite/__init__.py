"""The embedded store: one SQLite file shared by the processes of one machine.

``backend`` holds the store; ``connections`` keeps one connection per thread
and turns sqlite3's errors into tenure's; ``rows`` converts between rows and tasks;
``unique`` takes unique locks inside the creating and reserving transactions;
``schema`` applies the numbered migrations. All SQL lives in ``queries.sql``
and ``migrations/``.
"""

from __future__ import annotations


def is_memory_path(path: str) -> bool:
    """Whether a SQLite path names a database private to the store that opens it
    (``:memory:``), not a file others can open."""
    return path in ("", ":memory:") or path.startswith("file::memory:")
