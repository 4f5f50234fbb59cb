"""tenure's schema: a creation's rows written by one trigger.

Runs PostgreSQL's 0010_one_creation_trigger.sql; nothing on SQLite.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0009_exact_tallies")]
    operations = [RunTenureSQL(postgresql="0010_one_creation_trigger")]
