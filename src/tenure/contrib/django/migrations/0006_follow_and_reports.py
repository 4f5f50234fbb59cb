"""tenure's schema: following the event log, and the observer's reports.

Runs PostgreSQL's 0006_follow_and_reports.sql; SQLite's 0004_follow_and_reports.sql.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0005_event_cursor")]
    operations = [
        RunTenureSQL(postgresql="0006_follow_and_reports", sqlite="0004_follow_and_reports")
    ]
