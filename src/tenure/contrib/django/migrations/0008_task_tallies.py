"""tenure's schema: tallies of tasks per topic and status.

Runs PostgreSQL's 0008_task_tallies.sql; nothing on SQLite.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0007_task_history")]
    operations = [RunTenureSQL(postgresql="0008_task_tallies")]
