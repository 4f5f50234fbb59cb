"""Automatic transactional enqueue: a plain ``task.enqueue()`` inside Django's
``transaction.atomic()`` (or a view under ``ATOMIC_REQUESTS``) is written in
that transaction, as ``transactional(task).enqueue()`` is.

A task enqueued on tenure's own connection is committed at once: a worker may
run it before the rows it is about are committed (``Order.DoesNotExist``), and
it survives a rollback of them. Inside an atomic block that is almost never
what the code means, and nothing in ``send_receipt.enqueue(order.pk)`` says so;
so with ``settings.TENURE['TRANSACTIONAL']`` (on by default when the store is
Django's database) the bound App's ``enqueue_connection`` is
:class:`JoinAtomicBlocks`, which answers the driver connection of the alias
``TENURE['DATABASE']`` whenever the calling thread's connection of that alias
is in an atomic block, and ``None`` (tenure's own connection, committed at
once) otherwise.

"The calling thread's": Django's connections are per thread, so an enqueue
from another thread (a thread of your own, or ``aenqueue`` without a
connection, which enqueues in a thread of asyncio's) sees that thread's
connection, in no atomic block, and commits at once. On a running event loop
Django refuses its sync connections (``SynchronousOnlyOperation``), so a sync
enqueue there joins nothing either: it commits at once, as it would without
Django (async code enqueues in a transaction by running the transaction, and
the enqueue, in a sync function through ``sync_to_async``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tenure.contrib.django.databases import driver_connection, same_database
from tenure.errors import ConfigError

if TYPE_CHECKING:
    from tenure.app import App
    from tenure.contrib.django.conf import TenureSettings


class JoinAtomicBlocks:
    """``App.enqueue_connection`` of the bound App under ``TRANSACTIONAL``: the
    driver connection of Django's connection ``alias`` while the calling thread
    is in an atomic block on it, else ``None``."""

    __slots__ = ("_checked", "alias", "app")

    def __init__(self, app: App, alias: str) -> None:
        self.app = app
        self.alias = alias
        self._checked: tuple[tuple[str, str], bool] | None = None
        """The last answer of :meth:`_same_database`, and what it was asked of."""

    def __call__(self) -> Any:
        from django.core.exceptions import SynchronousOnlyOperation  # noqa: PLC0415
        from django.db import connections  # noqa: PLC0415 - Django is set up by now

        wrapper = connections[self.alias]
        if not wrapper.in_atomic_block:
            return None
        if not self._same_database(wrapper):
            # The App was pointed elsewhere since it was bound (a test's
            # tenure.testing.isolated(), App.use()): its store is not this
            # database, and a task written here would reach no worker of it.
            return None
        try:
            return driver_connection(wrapper)
        except SynchronousOnlyOperation:  # on an event loop: see the module's docstring
            return None

    def _same_database(self, wrapper: Any) -> bool:
        """:func:`same_database` of the App's store and ``wrapper``, remembered
        while neither changes (it parses connection strings: tens of
        microseconds, on every enqueue in a transaction otherwise)."""
        asked = (self.app.url, repr(wrapper.settings_dict))
        checked = self._checked
        if checked is not None and checked[0] == asked:
            return checked[1]
        same = same_database(self.app.url, wrapper)
        self._checked = (asked, same)
        return same

    def __repr__(self) -> str:
        return f"JoinAtomicBlocks(alias={self.alias!r})"


def joins_atomic_blocks(settings: TenureSettings) -> bool:
    """Whether the bound App should join Django's atomic blocks: ``TRANSACTIONAL``
    unless set to False, and only where the store is the database of the alias.
    A :class:`ConfigError` when ``TRANSACTIONAL`` is True and ``URL`` puts the
    store in another database, or in one tenure cannot share (MySQL): no
    transaction of Django's could hold the task there."""
    if settings.transactional is False:
        return False
    if settings.url is None:
        return True  # the store is the alias's database (checked as it was bound)
    from django.db import connections  # noqa: PLC0415 - Django is set up by now

    wrapper = connections[settings.database]
    try:
        same = same_database(settings.url, wrapper)
    except ConfigError as exc:
        if settings.transactional is None:
            return False  # a store of its own beside a database tenure cannot share
        raise ConfigError(f"settings.TENURE['TRANSACTIONAL'] is True, but {exc}") from None
    if not same and settings.transactional:
        raise ConfigError(
            "settings.TENURE['TRANSACTIONAL'] is True, but settings.TENURE['URL'] names "
            f"another database than DATABASES[{settings.database!r}]: a task written in "
            "Django's transaction would never reach a worker; leave 'URL' unset to keep "
            "the tasks in that database, or set 'TRANSACTIONAL' to False and enqueue "
            "from transaction.on_commit"
        )
    return same
