"""tenure's schema: a status change's rows written by one trigger.

Runs PostgreSQL's 0012_one_update_trigger.sql; nothing on SQLite.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0011_wake_only_waiters")]
    operations = [RunTenureSQL(postgresql="0012_one_update_trigger")]
