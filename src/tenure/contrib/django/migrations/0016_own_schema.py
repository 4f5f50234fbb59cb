"""tenure's schema: names of its own.

Runs SQLite's 0008_prefixed_names.sql: every table, view, index and trigger of
tenure's is named tenure_*, so an application's own tables can share the file.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0015_tally_keys")]
    operations = [RunTenureSQL(sqlite="0008_prefixed_names")]
