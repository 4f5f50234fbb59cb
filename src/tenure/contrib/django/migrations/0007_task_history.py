"""tenure's schema: a task's history, by task.

Runs PostgreSQL's 0007_task_history.sql; SQLite's 0005_task_history.sql.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0006_follow_and_reports")]
    operations = [RunTenureSQL(postgresql="0007_task_history", sqlite="0005_task_history")]
