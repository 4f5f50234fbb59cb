"""Django integration: tenure's tasks in your Django database, enqueued in
Django's transactions, and workers started with ``manage.py``.

``pip install 'tenure[django,postgres]'``, then in ``settings.py``::

    INSTALLED_APPS = [..., "tenure.contrib.django"]
    TENURE = {"APP": "shop.tasks:app"}     # module:attribute of your tenure.App

and in your code::

    from django.db import transaction

    with transaction.atomic():
        order = Order.objects.create(...)
        send_receipt.enqueue(order.pk)   # in Django's transaction: exists iff it commits

- Inside an atomic block (or a view under ``ATOMIC_REQUESTS``) of the tasks'
  alias, an enqueue is written in Django's transaction, a nested ``atomic()``
  being a savepoint that takes its tasks with it; outside one, or from another
  thread, it is committed at once. ``TENURE["TRANSACTIONAL"] = False`` turns
  this off (see :mod:`tenure.contrib.django.atomic`); ``transactional(task)``
  asks for it explicitly, one enqueue at a time.
- The App's store is Django's database (``DATABASES["default"]``, or the alias
  ``TENURE["DATABASE"]``; PostgreSQL with psycopg 3, or SQLite), followed to
  the test database under Django's test runner; ``TENURE["URL"]`` puts it
  elsewhere. ``manage.py migrate`` creates tenure's tables, through Django
  migrations of the app ``tenure`` that run tenure's SQL migrations (see
  :mod:`tenure.contrib.django.operations`).
- ``python manage.py tenure_worker [options]`` runs ``tenure worker`` with Django
  set up (in process-pool children too); ``python manage.py tenure <command>``
  runs any other ``tenure`` command on the same store.
- Workers close Django's stale database connections around each task, as
  Django does around each request.

The guide is docs/how-to/django.md; the example project is
examples/django_project.
"""

from __future__ import annotations

from tenure.contrib.django.binding import bound_app
from tenure.contrib.django.conf import TenureSettings, tenure_settings
from tenure.contrib.django.transactions import django_connection, transactional

__all__ = [
    "TenureSettings",
    "bound_app",
    "django_connection",
    "tenure_settings",
    "transactional",
]
