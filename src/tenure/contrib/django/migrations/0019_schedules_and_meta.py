"""Schedules kept in the store (each periodic task's last enqueued tick, and
the schedules added at run time), and a task's meta, to find it by. Runs
PostgreSQL's 0019_schedules_and_meta.sql and SQLite's
0011_schedules_and_meta.sql."""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0018_flows_and_errors")]
    operations = [
        RunTenureSQL(postgresql="0019_schedules_and_meta", sqlite="0011_schedules_and_meta")
    ]
