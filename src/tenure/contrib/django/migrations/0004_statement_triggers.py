"""tenure's schema: events and wake-ups written once per statement.

Runs PostgreSQL's 0004_statement_triggers.sql; nothing on SQLite.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0003_unique_locks")]
    operations = [RunTenureSQL(postgresql="0004_statement_triggers")]
