"""tenure's schema: the task table, its event log, and their triggers.

Runs PostgreSQL's 0001_initial.sql; SQLite's 0001_initial.sql.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    initial = True
    dependencies: list[tuple[str, str]] = []
    operations = [RunTenureSQL(postgresql="0001_initial", sqlite="0001_initial")]
