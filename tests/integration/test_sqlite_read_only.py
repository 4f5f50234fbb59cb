"""A SQLite store opened while its database file could not be opened for
writing (made immutable, on a read-only mount) refuses writes with a tenure
error, and writes again once the file is writable: it does not keep a
read-only connection for the rest of its life.

The file is made immutable with ``chattr +i`` (which binds root too) on a small
tmpfs of the test's own; where mounting or the flag is refused, the test is
skipped with the reason.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tenure.errors import StoreError
from tenure.store import NewTask, open_store

pytestmark = pytest.mark.slow


def immutable(path: Path, on: bool) -> None:
    flag = "+i" if on else "-i"
    # A fixed program with the test's own path.
    done = subprocess.run(["chattr", flag, str(path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        pytest.skip(f"chattr {flag} is refused here: {done.stderr.strip()}")


def test_a_store_opened_on_a_read_only_file_writes_once_it_is_writable(disk: Path) -> None:
    path = disk / "tenure.db"
    url = f"sqlite:///{path}"
    with open_store(url) as first:  # the database exists, its schema made
        first.task_create(NewTask("t", "before"))
    immutable(path, True)
    try:
        with open_store(url) as store:
            with pytest.raises(StoreError, match="readonly"):
                store.task_create(NewTask("t", "refused"))
            immutable(path, False)
            made = store.task_create(NewTask("t", "after"))
            assert store.task_get(made.id) is not None
            assert store.task_count() == 2
    finally:
        immutable(path, False)
