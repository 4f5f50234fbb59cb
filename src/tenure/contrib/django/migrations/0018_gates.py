"""Workflows: gates between tasks (a group's callback, a chain's links), their
table, three columns of the tasks table and its new status, waiting. Runs
PostgreSQL's 0018_gates.sql and SQLite's 0010_gates.sql."""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0017_progress")]
    operations = [RunTenureSQL(postgresql="0018_gates", sqlite="0010_gates")]
