"""The order tasks are taken in: fairness across keys (a task's ``fair_key``
and ``fair_turn``, the pending indexes rebuilt to take tasks by priority,
turn, then age) and priority ageing per topic (``topic_ageing``). Runs
PostgreSQL's 0022_ordering.sql and SQLite's 0014_ordering.sql."""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0021_limits")]
    operations = [RunTenureSQL(postgresql="0022_ordering", sqlite="0014_ordering")]
