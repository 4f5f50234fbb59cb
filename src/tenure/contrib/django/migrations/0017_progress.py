"""A running task's progress (``tenure.current().progress``): two columns of the
tasks table. Runs PostgreSQL's 0017_progress.sql and SQLite's 0009_progress.sql."""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0016_own_schema")]
    operations = [RunTenureSQL(postgresql="0017_progress", sqlite="0009_progress")]
