"""tenure's schema: the worker registry, leaderships, and retention's indexes.

Runs PostgreSQL's 0002_workers_leaders_retention.sql; SQLite's 0002_workers_leaders_retention.sql.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0001_initial")]
    operations = [
        RunTenureSQL(
            postgresql="0002_workers_leaders_retention", sqlite="0002_workers_leaders_retention"
        )
    ]
