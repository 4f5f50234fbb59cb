"""tenure's schema: an index of ids in byte order, for lookups by prefix.

Runs PostgreSQL's 0014_id_prefixes.sql; SQLite's id index needs nothing.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0013_events_keyed_by_cursor")]
    operations = [RunTenureSQL(postgresql="0014_id_prefixes")]
