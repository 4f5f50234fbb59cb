"""Concurrency limits, rates and ordered keys: topics' limits and rates
(``topic_limits``, ``topic_rates``, and the starts under a rate,
``rate_starts``), a task's limit key and its most (``limit_key``,
``limit_max``) and its order key (``order_key``), all read by the reserve
statements; and a worker's concurrency asked at run time (``scale_to``). Runs
PostgreSQL's 0021_limits.sql and SQLite's 0013_limits.sql."""

from django.db import migrations

from tenure.contrib.django.operations import RunTenureSQL


class Migration(migrations.Migration):  # type: ignore[misc] # Django ships no type hints
    dependencies: list[tuple[str, str]] = [("tenure", "0020_flow_control")]
    operations = [RunTenureSQL(postgresql="0021_limits", sqlite="0013_limits")]
