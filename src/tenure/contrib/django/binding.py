"""The project's tenure App, bound to Django: found from ``settings.TENURE``,
pointed at its store, and kept pointed at the right database while Django
creates, switches and drops databases around it.

``ready()`` of the app config calls :func:`bind`: it imports the App's module
(as Django's admin imports ``admin.py``), points the App at Django's database
(or at ``TENURE['URL']``) with :meth:`tenure.App.use`, adds
:class:`CloseOldConnections`, and (``TENURE['TRANSACTIONAL']``) makes a plain
enqueue inside an atomic block join Django's transaction (see
:mod:`tenure.contrib.django.atomic`). It runs no query: the store opens on
first use.

Django's test runner then replaces the database under the same alias (``NAME``
becomes ``test_<NAME>``) after ``ready()`` has run. :func:`follow`, a receiver
of ``connection_created``, re-points the App each time Django connects that
alias, so tenure uses the test database whenever Django does; and it closes
tenure's store when Django opens its maintenance connection to create or drop a
database, since PostgreSQL refuses to drop a database someone is connected to
(the store opens again on its next use). tenure's schema is made by Django's
migrations (see :mod:`tenure.contrib.django.operations`), in the test database
too; :func:`after_migrate`, a receiver of ``post_migrate``, migrates a store
they cannot reach (``TENURE['URL']`` of another database) and opens a SQLite
store once they are done.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from tenure.app import App
from tenure.contrib.django.atomic import JoinAtomicBlocks, joins_atomic_blocks
from tenure.contrib.django.conf import TenureSettings, tenure_settings
from tenure.contrib.django.databases import holds_store, store_url
from tenure.errors import ConfigError
from tenure.hooks import Middleware
from tenure.loading import find
from tenure.store.migrate import migrate_store
from tenure.store.url import describe_url, parse_url, redact, sqlite_parts
from tenure.task import Task

CONFIGURED = "tenure.contrib.django.configured:app"
"""The import path that sets Django up, then answers the bound App: what
``manage.py tenure_worker`` runs, and what process-pool children import."""

NO_DB_ALIAS = "__no_db__"
"""The alias of Django's maintenance connection (``django.db.backends.base.base``),
opened only to create, clone or drop a database."""


@dataclass(frozen=True, slots=True)
class Binding:
    """The App ``settings.TENURE`` names, and those settings."""

    app: App
    settings: TenureSettings


_binding: Binding | None = None
_lock = threading.Lock()


def bind() -> Binding:
    """Find ``settings.TENURE['APP']`` and point it at its store: Django's
    database, or ``TENURE['URL']``. Called by the app config's ``ready()``."""
    global _binding  # noqa: PLW0603 - one binding per process, like Django's settings
    config = tenure_settings()
    app = find(config.app, App)
    # Process-pool children import this path: it sets Django up before the App.
    app.import_path = CONFIGURED
    if not any(isinstance(each, CloseOldConnections) for each in app.middleware):
        app.add_middleware(CloseOldConnections())
    with _lock:
        _point(app, config.app, _current_url(config))
        _join_atomic_blocks(app, config)
        first = _binding is None
        _binding = Binding(app, config)
    if first:
        atexit.register(_close)
    return _binding


def bound() -> Binding:
    """The binding made by ``ready()``; a :class:`ConfigError` if Django has not
    loaded ``tenure.contrib.django``."""
    if _binding is None:
        raise ConfigError(
            "tenure.contrib.django is not set up: add 'tenure.contrib.django' to "
            "INSTALLED_APPS, and set Django up first (django.setup(), or run through manage.py)"
        )
    return _binding


def bound_app() -> App:
    """The project's tenure App (``settings.TENURE['APP']``), bound to its store."""
    return bound().app


def _current_url(config: TenureSettings) -> str:
    """The store URL the settings mean now (a test database once Django uses one)."""
    if config.url is not None:
        return config.url
    from django.db import connections  # noqa: PLC0415 - settings are configured by now

    return store_url(connections[config.database])


def _join_atomic_blocks(app: App, config: TenureSettings) -> None:
    """Set, or take back, the App's ``enqueue_connection`` as ``TRANSACTIONAL``
    says (a hook of the App's own is replaced only when joining)."""
    if joins_atomic_blocks(config):
        app.enqueue_connection = JoinAtomicBlocks(app, config.database)
    elif isinstance(app.enqueue_connection, JoinAtomicBlocks):
        app.enqueue_connection = None


def _point(app: App, path: str, url: str) -> None:
    if app.url == url:
        return
    _remove_stale_wal(url)
    try:
        app.use(url)
    except ConfigError:
        raise ConfigError(
            f"the tenure App {path} opened its store ({redact(app.url)}) before Django "
            f"pointed it at {redact(url)}: do not enqueue or read tasks while modules are "
            "being imported, only once Django is set up"
        ) from None


def follow(sender: object, connection: Any, **_: object) -> None:
    """``connection_created``: keep the App on the database Django uses."""
    binding = _binding
    if binding is None:
        return
    if connection.alias == NO_DB_ALIAS:
        # Django is about to create or drop a database (tests): let go of it.
        binding.app.close()
        return
    if connection.alias != binding.settings.database or binding.settings.url is not None:
        return
    with _lock:
        _point(binding.app, binding.settings.app, store_url(connection))


def after_migrate(
    sender: Any, using: str, verbosity: int = 1, plan: Any = None, **kwargs: Any
) -> None:
    """``post_migrate`` on the alias of tenure's tasks (unless the App was made
    with ``migrate=False``: then the schema is ``tenure migrate``'s to keep):
    bring a store outside Django's database up to date, as Django's migrations
    apply tenure's schema only in that database; open a SQLite store there.
    After ``migrate tenure zero``, nothing: opening the store would make the
    schema again."""
    binding = _binding
    if binding is None or using != binding.settings.database or not binding.app.migrate:
        return
    if any(back and m.app_label == sender.label for m, back in plan or ()):
        return
    from django.db import connections  # noqa: PLC0415 - Django is set up by now

    with _lock:
        _point(binding.app, binding.settings.app, _current_url(binding.settings))
    url = binding.app.url
    if not holds_store(binding.settings.url, connections[using]):
        applied = migrate_store(url)
        if applied and verbosity >= 1:
            out = kwargs.get("stdout") or sys.stdout
            out.write(f"  tenure: applied {', '.join(applied)} to {describe_url(url)}\n")
    if parse_url(url)[0] == "sqlite":
        # Open the store now, while nothing holds the file: opening takes SQLite's
        # write lock, which a TestCase's transaction holds once its test wrote, and
        # a first enqueue there (in that transaction) would wait for it in vain.
        _ = binding.app.store


def _close() -> None:
    """At exit: close the store, and remove what SQLite leaves of a database
    Django deleted under it (its test database): a ``-wal`` file outliving its
    database would be read into the next one of that name."""
    binding = _binding
    if binding is None:
        return
    binding.app.close()
    _remove_stale_wal(binding.app.url)


def _remove_stale_wal(url: str) -> None:
    """Remove the ``-wal`` and ``-shm`` files of a SQLite database that is gone
    or empty (a database Django just made, where an old one of that name was):
    they belong to no database there is."""
    dialect, parsed = parse_url(url)
    if dialect != "sqlite":
        return
    path = sqlite_parts(parsed)[0]
    if os.path.exists(path) and os.path.getsize(path) > 0:
        return
    for leftover in (f"{path}-wal", f"{path}-shm"):
        if os.path.exists(leftover):
            os.remove(leftover)


class CloseOldConnections(Middleware):
    """Django's connections around each task as around each request: before and
    after it runs, a connection that is broken, left in a transaction, or older
    than ``CONN_MAX_AGE`` (0 by default: every one) is closed, as Django's
    request handler does. Without it a worker thread would keep its connection
    for ever, through database restarts."""

    @contextmanager
    def execute(self, task: Task) -> Iterator[None]:
        _close_old_connections()
        try:
            yield
        finally:
            _close_old_connections()


def _close_old_connections() -> None:
    """Django's ``close_old_connections()``, sparing a connection in an atomic
    block: a worker's thread never is in one between tasks, but
    ``tenure.testing.run_until_empty`` runs tasks in the caller's thread, which
    may be (a test's transaction). Closing it there would break that
    transaction (Django refuses to reconnect inside it), as Django's test
    client knows: it turns ``close_old_connections`` off around its requests."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:  # a thread of its own: the ORM is usable here
        from django.db import connections  # noqa: PLC0415

        for connection in connections.all(initialized_only=True):
            if not connection.in_atomic_block:
                connection.close_if_unusable_or_obsolete()
    # On the event loop (an async def task) Django refuses sync database calls,
    # closing included: the task's database work runs in sync_to_async's thread.
