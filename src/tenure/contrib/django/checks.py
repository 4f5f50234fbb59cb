"""System checks (``manage.py check``): what is allowed but will fail later.

``tenure.W001``: the project's SQLite database is fine, but Django's test runner
will make the test database in memory, which tenure's threads and workers
cannot share; tests that enqueue then fail (tenure says why as the test
database is created). Naming a file for the test database fixes it.
"""

from __future__ import annotations

from typing import Any

from tenure.contrib.django.binding import bound


def check_test_database(app_configs: Any = None, **kwargs: Any) -> list[Any]:
    """``tenure.W001`` when the tasks live in a SQLite database whose test
    database will be in memory."""
    from django.core.checks import Warning as CheckWarning  # noqa: PLC0415
    from django.db import connections  # noqa: PLC0415

    settings = bound().settings
    if settings.url is not None:
        return []
    wrapper = connections[settings.database]
    if wrapper.vendor != "sqlite" or wrapper.is_in_memory_db():
        return []
    if wrapper.settings_dict.get("TEST", {}).get("NAME"):
        return []
    alias = settings.database
    return [
        CheckWarning(
            f"Django's test database for {alias!r} will be SQLite in memory, which "
            "tenure's workers and threads cannot share: tests that enqueue will fail.",
            hint=f"Name a file in DATABASES[{alias!r}]['TEST']['NAME'], "
            "e.g. BASE_DIR / 'test.sqlite3'.",
            id="tenure.W001",
        )
    ]
