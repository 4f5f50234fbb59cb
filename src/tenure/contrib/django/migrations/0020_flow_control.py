"""Flow control: paused topics (an operator's stop on a topic's new starts)
and a task's deadline (``expires_at``), both read by the reserve statements.
Runs PostgreSQL's 0020_flow_control.sql and SQLite's 0012_flow_control.sql."""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0019_schedules_and_meta")]
    operations = [RunTenureSQL(postgresql="0020_flow_control", sqlite="0012_flow_control")]
