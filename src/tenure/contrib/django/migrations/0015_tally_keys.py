"""tenure's schema: primary keys for the tallies, for logical replication.

Runs PostgreSQL's 0015_tally_keys.sql; SQLite keeps no tallies of this kind.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0014_id_prefixes")]
    operations = [RunTenureSQL(postgresql="0015_tally_keys")]
