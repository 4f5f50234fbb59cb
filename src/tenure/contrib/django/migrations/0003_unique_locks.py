"""tenure's schema: unique tasks' rules and locks.

Runs PostgreSQL's 0003_unique_locks.sql; SQLite's 0003_unique_locks.sql.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0002_workers_leaders_retention")]
    operations = [RunTenureSQL(postgresql="0003_unique_locks", sqlite="0003_unique_locks")]
