"""tenure's Django migrations cannot drift from its SQL migrations: they form
one chain, each runs one :class:`RunTenureSQL`, and read along the chain they
name every SQL migration of each dialect exactly once, in order. A new
``NNNN_name.sql`` fails here until a Django migration runs it.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import pytest

from tenure.contrib.django import migrations as django_migrations
from tenure.contrib.django.operations import FIRST, RunTenureSQL
from tenure.store.sqlfile import migrations
from tenure.store.url import DIALECT_PACKAGES


def chain() -> list[tuple[str, Any]]:
    """``(name, Migration)`` of each of tenure's Django migrations, each after
    the one it depends on."""
    found = {
        info.name: importlib.import_module(f"{django_migrations.__name__}.{info.name}").Migration
        for info in pkgutil.iter_modules(django_migrations.__path__)
    }
    ordered: list[tuple[str, Any]] = []
    previous: list[tuple[str, str]] = []
    while found:
        following = [name for name, m in found.items() if list(m.dependencies) == previous]
        assert len(following) == 1, f"after {previous}: {following or 'none'} (one chain)"
        name = following[0]
        ordered.append((name, found.pop(name)))
        previous = [("tenure", name)]
    return ordered


def test_the_django_migrations_are_one_numbered_chain() -> None:
    names = [name for name, _ in chain()]

    assert names[0] == FIRST
    assert [int(name[:4]) for name in names] == list(range(1, len(names) + 1))


@pytest.mark.parametrize("dialect", ["postgresql", "sqlite"])
def test_every_sql_migration_has_its_django_migration_in_order(dialect: str) -> None:
    named = []
    for name, migration in chain():
        operations = list(migration.operations)
        assert len(operations) == 1 and isinstance(operations[0], RunTenureSQL), name
        if file := operations[0].files().get(dialect):
            named.append(file)

    sql = [f"{version:04d}_{name}" for version, name, _ in migrations(DIALECT_PACKAGES[dialect])]
    assert named == sql, (
        f"each {dialect} SQL migration needs a Django migration that runs it, after those "
        "of the migrations before it: add one to tenure/contrib/django/migrations/"
    )


def test_the_first_django_migration_runs_each_dialects_first() -> None:
    first = chain()[0][1].operations[0]

    assert first.files() == {"postgresql": "0001_initial", "sqlite": "0001_initial"}
