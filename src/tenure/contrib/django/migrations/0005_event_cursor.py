"""tenure's schema: a cursor for the event log that never skips.

Runs PostgreSQL's 0005_event_cursor.sql; nothing on SQLite.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0004_statement_triggers")]
    operations = [RunTenureSQL(postgresql="0005_event_cursor")]
