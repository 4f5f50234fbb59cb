"""tenure's schema: on PostgreSQL, tenure's objects move into a schema of their
own (``tenure``, or the store URL's ``schema=``); on SQLite, its names take a
``tenure_`` prefix. Either way an application's own ``tasks`` table can live in
the same database.

Runs PostgreSQL's 0016_own_schema.sql (after moving an install found in
``public``: see ``tenure.store.postgres.schema``) and SQLite's
0008_prefixed_names.sql.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0015_tally_keys")]
    operations = [RunTenureSQL(postgresql="0016_own_schema", sqlite="0008_prefixed_names")]
