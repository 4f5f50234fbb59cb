"""Enqueue in the transaction Django has open: a task that exists if and only if
Django commits.

Django's connection is, underneath, a driver connection (``psycopg.Connection``
for PostgreSQL with psycopg 3, ``sqlite3.Connection`` for SQLite); tenure
writes a task on a caller's driver connection, in its open transaction
(``task.options(connection=...)``). :func:`transactional` joins the two: in a
``transaction.atomic()`` block, or a view under ``ATOMIC_REQUESTS``, the task is
written in Django's transaction, rolled back with it, and committed with it. A
nested ``atomic()`` is a savepoint, and the task goes with it too. Outside any
atomic block Django's connection is in autocommit, and the task is committed at
once, as any enqueue is.

With ``settings.TENURE['TRANSACTIONAL']`` (the default) a plain enqueue does the
same inside an atomic block of ``TENURE['DATABASE']``
(:mod:`tenure.contrib.django.atomic`): :func:`transactional` is then the
explicit form, and what joins a transaction that setting does not: one opened
on another alias of the same database (``using=``), or any once it is off.

The store must be that database: without ``settings.TENURE['URL']`` it is, by
construction; with one, a task Django's connection wrote would land where
tenure's workers never look, which is refused here with a ConfigError. For a
store in another database, enqueue from ``transaction.on_commit`` instead.
"""

from __future__ import annotations

from typing import Any, ParamSpec, TypeVar

from tenure.app import App
from tenure.contrib.django.binding import bound
from tenure.contrib.django.conf import describe
from tenure.contrib.django.databases import driver_connection, mismatch, same_database
from tenure.errors import ConfigError
from tenure.function import TaskFunction

P = ParamSpec("P")
R = TypeVar("R")


def transactional(task: TaskFunction[P, R], *, using: str | None = None) -> TaskFunction[P, R]:
    """``task``, enqueueing in the transaction of Django's connection ``using``
    (``settings.TENURE['DATABASE']`` by default)::

        with transaction.atomic():
            order = Order.objects.create(...)
            transactional(send_receipt).enqueue(order.pk)
        # committed here: the order and its task, or neither

    It composes with the other options, in any order:
    ``transactional(send_receipt.options(delay=60))``. Call it where you
    enqueue: it takes the connection of the calling thread as it is now (Django's
    connections are per thread, and closed between requests).
    """
    app = task.app if isinstance(task.app, App) else None
    return task.options(connection=django_connection(using, app=app))


def django_connection(using: str | None = None, *, app: App | None = None) -> Any:
    """The driver connection under Django's connection ``using``
    (``settings.TENURE['DATABASE']`` by default), connected: what
    ``task.options(connection=...)`` takes. Checked to be the database of
    ``app``'s store (the bound App's by default); a :class:`ConfigError` if it
    is not, or if tenure cannot write on it (psycopg2, an in-memory SQLite
    database, another vendor)."""
    from django.db import connections  # noqa: PLC0415 - settings are configured by now
    from django.utils.connection import ConnectionDoesNotExist  # noqa: PLC0415

    binding = bound()
    alias = using or binding.settings.database
    try:
        wrapper = connections[alias]
    except ConnectionDoesNotExist:
        raise ConfigError(f"no database {alias!r} in settings.DATABASES") from None
    store = app or binding.app
    if not same_database(store.url, wrapper):
        where = describe(binding.settings) if store is binding.app else "its App's URL"
        raise mismatch(store.url, wrapper, where)
    return driver_connection(wrapper)
