"""tenure's schema: exact tallies, and totals of transitions.

Runs PostgreSQL's 0009_exact_tallies.sql; SQLite's 0006_transition_totals.sql.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0008_task_tallies")]
    operations = [RunTenureSQL(postgresql="0009_exact_tallies", sqlite="0006_transition_totals")]
