"""Fairness across tenants: a task's fair key and turn (``fair_key``,
``fair_turn``), the pending indexes rebuilt to take tasks by priority, turn,
then age, and the function that gives a new task its turn. Runs PostgreSQL's
0022_fairness.sql and SQLite's 0014_fairness.sql."""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0021_limits")]
    operations = [RunTenureSQL(postgresql="0022_fairness", sqlite="0014_fairness")]
