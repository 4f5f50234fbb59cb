"""A tenure App whose task writes a row of its own (table ``ledger``, in the
store's own database: PostgreSQL's, or SQLite's file) and its ending in one
transaction, with ``tenure.current().complete_in``. How the first attempt goes
is the test's to choose: committed, rolled back after the ending was written,
or held until the test has revoked its lease. Its store URL comes from
$TENURE_URL."""

from __future__ import annotations

import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import psycopg

import tenure
from tenure.retry import Backoff

app = tenure.App()


@app.task(topic="own", retries=3, backoff=Backoff(base=0.05, maximum=0.1))
def books(label: str, first: str, folder: str) -> str:
    """Books ``label`` with its ending. ``first``: how the first attempt ends,
    ``commit``, ``rollback`` (after complete_in, then returns as if all went
    well) or ``held`` (waits for ``folder/go`` before it writes). An attempt
    whose write is refused names the refusal in ``folder/refused-ATTEMPT``."""
    current = tenure.current()
    how = first if current.attempt == 1 else "commit"
    if how == "held":
        _mark(folder, "started")
        _wait_for(Path(folder) / "go")
    conn = _begin(app.url)
    try:
        _book(conn, label, current.attempt)
        current.complete_in(conn, {"label": label, "attempt": current.attempt})
        # Once written, progress is not: the task's transaction holds the row.
        current.progress(0.9, "booked")
        conn.rollback() if how == "rollback" else conn.commit()
    except BaseException as exc:
        conn.rollback()
        (Path(folder) / f"refused-{current.attempt}").write_text(type(exc).__name__)
        raise
    finally:
        conn.close()
    return "not stored: the ending was written by complete_in"


def _begin(url: str) -> Any:
    """A connection of the task's own with a transaction open."""
    if url.startswith("sqlite"):
        conn = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=30)
        conn.execute("BEGIN IMMEDIATE")
        return conn
    return psycopg.connect(url)  # a transaction begins with the first statement


def _book(conn: Any, label: str, attempt: int) -> None:
    if isinstance(conn, sqlite3.Connection):
        conn.execute("INSERT INTO ledger (label, attempt) VALUES (?, ?)", (label, attempt))
    else:
        conn.execute("INSERT INTO ledger (label, attempt) VALUES (%s, %s)", (label, attempt))


def _mark(folder: str, name: str) -> None:
    partial = Path(folder) / f".{name}"
    partial.write_text(repr(time.time()))
    os.replace(partial, Path(folder) / name)


def _wait_for(path: Path, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} never came")
        time.sleep(0.01)
