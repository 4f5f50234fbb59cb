"""Every attempt's error kept on its task, and each error's type and message
on the event that wrote it. Runs PostgreSQL's 0019_attempt_errors.sql and
SQLite's 0011_attempt_errors.sql."""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0018_gates")]
    operations = [RunTenureSQL(postgresql="0019_attempt_errors", sqlite="0011_attempt_errors")]
