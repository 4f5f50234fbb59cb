"""``tenure.contrib.django.configured:app``: the project's tenure App, with Django
set up first.

A worker, and each child of its process pool, imports the App by its
``module:attribute`` path. The App's module imports your models, which Django
refuses before ``django.setup()``; so the bound App is found through this
module instead: reading ``app`` here sets Django up from
``DJANGO_SETTINGS_MODULE`` (when nothing has yet), which runs the app config's
``ready()`` that binds the App, and answers it. ``manage.py tenure_worker``
runs ``tenure worker --app tenure.contrib.django.configured:app``, and the
bound App's import path is this one, so pool children set Django up too.
"""

from __future__ import annotations

import logging
import os
import traceback

from tenure.app import App
from tenure.contrib.django.binding import bound_app
from tenure.errors import ConfigError, TenureError
from tenure.loading import AppImportError


def __getattr__(name: str) -> App:
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return configured_app()


def configured_app() -> App:
    """The bound App, once Django is set up (here, if it was not yet)."""
    from django.apps import apps  # noqa: PLC0415 - Django is the caller's to have installed

    if not apps.ready:
        _setup()
    return bound_app()


def _setup() -> None:
    import django  # noqa: PLC0415
    from django.conf import settings  # noqa: PLC0415

    module = os.environ.get("DJANGO_SETTINGS_MODULE")
    if not module and not settings.configured:
        raise ConfigError(
            "DJANGO_SETTINGS_MODULE is not set: run `python manage.py tenure_worker`, or "
            "set it to your settings module (e.g. DJANGO_SETTINGS_MODULE=shop.settings)"
        )
    try:
        django.setup()
    except TenureError:
        raise  # tenure's own setting checks, already in one line
    except Exception as exc:
        raised = f"{type(exc).__name__}: {exc}"
        message = f"setting Django up ({module}) raised {raised} (traceback above)"
        raise AppImportError(message, "".join(traceback.format_exception(exc))) from exc
    _enable_tenure_loggers()


def _enable_tenure_loggers() -> None:
    """Undo ``disable_existing_loggers`` (the default of a ``LOGGING`` dict that
    does not say) for tenure's loggers: they exist before Django configures
    logging here, and a worker that cannot log is blind."""
    for name, logger in logging.Logger.manager.loggerDict.items():
        if (name == "tenure" or name.startswith("tenure.")) and isinstance(logger, logging.Logger):
            logger.disabled = False
