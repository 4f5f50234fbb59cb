"""The Django app config of ``tenure.contrib.django`` (``INSTALLED_APPS``).

``ready()`` binds the App that ``settings.TENURE['APP']`` names to Django's
database (see :mod:`tenure.contrib.django.binding`) and hooks tenure into
Django's signals; tenure's tables are made by this app's migrations (see
:mod:`tenure.contrib.django.operations`). It imports the App's module but runs
no query: Django warns against touching the database while apps load, and the
store opens on first use.
"""

from __future__ import annotations

from django.apps import AppConfig


class TenureConfig(AppConfig):  # type: ignore[misc] # Django ships no type hints
    name = "tenure.contrib.django"
    label = "tenure"
    verbose_name = "tenure"

    def ready(self) -> None:
        from django.core import checks  # noqa: PLC0415 - as Django's own apps do, in ready()
        from django.db.backends.signals import connection_created  # noqa: PLC0415
        from django.db.models.signals import post_migrate, pre_migrate  # noqa: PLC0415

        from tenure.contrib.django.binding import after_migrate, bind, follow  # noqa: PLC0415
        from tenure.contrib.django.checks import check_test_database  # noqa: PLC0415
        from tenure.contrib.django.operations import refuse_partial_reversal  # noqa: PLC0415

        bind()
        connection_created.connect(follow, dispatch_uid="tenure.contrib.django.follow")
        pre_migrate.connect(
            refuse_partial_reversal, sender=self, dispatch_uid="tenure.contrib.django.reversal"
        )
        post_migrate.connect(
            after_migrate, sender=self, dispatch_uid="tenure.contrib.django.after_migrate"
        )
        checks.register(check_test_database)
