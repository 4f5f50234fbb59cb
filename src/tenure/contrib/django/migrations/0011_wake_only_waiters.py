"""tenure's schema: wake-ups only while someone waits.

Runs PostgreSQL's 0011_wake_only_waiters.sql; nothing on SQLite.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0010_one_creation_trigger")]
    operations = [RunTenureSQL(postgresql="0011_wake_only_waiters")]
