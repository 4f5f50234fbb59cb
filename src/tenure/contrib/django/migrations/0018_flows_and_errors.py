"""Workflows (gates between tasks, the waiting status) and every attempt's
error kept on its task, with each error on its event. Runs PostgreSQL's
0018_flows_and_errors.sql and SQLite's 0010_flows_and_errors.sql."""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0017_progress")]
    operations = [RunTenureSQL(postgresql="0018_flows_and_errors", sqlite="0010_flows_and_errors")]
