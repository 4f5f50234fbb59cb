"""tenure's schema: the event log's new keys.

Runs PostgreSQL's 0013_events_keyed_by_cursor.sql;
SQLite's 0007_event_ids_without_a_sequence.sql.
"""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0012_one_update_trigger")]
    operations = [
        RunTenureSQL(
            postgresql="0013_events_keyed_by_cursor", sqlite="0007_event_ids_without_a_sequence"
        )
    ]
