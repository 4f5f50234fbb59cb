"""Schedules kept in the store: each periodic task's last enqueued tick, and
the schedules added at run time. Runs PostgreSQL's 0019_schedules.sql and
SQLite's 0011_schedules.sql."""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0018_flows_and_errors")]
    operations = [RunTenureSQL(postgresql="0019_schedules", sqlite="0011_schedules")]
