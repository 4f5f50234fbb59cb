"""The ``TENURE`` setting of a Django project, read and checked in one place.

::

    TENURE = {
        "APP": "shop.tasks:app",   # required: module:attribute of your tenure.App
        "DATABASE": "default",     # the alias of DATABASES whose database holds the tasks
        "URL": None,               # a store URL instead (a database of its own)
        "TRANSACTIONAL": True,     # a plain enqueue in an atomic block joins it
    }

Without ``URL``, tenure's tables live in the database of ``DATABASE``, so a task
can be written in the transaction Django opened there, and with
``TRANSACTIONAL`` (the default) every enqueue inside an atomic block of that
alias is. :func:`tenure_settings` reads the setting when asked, never at
import; the binding asks once, when Django starts (the app config's
``ready()``), so settings changed later (``override_settings``) do not re-bind
the App. A mistake is a :class:`~tenure.errors.ConfigError` naming the key and
what would be right.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tenure.errors import ConfigError
from tenure.store.url import parse_url, redact

SETTING = "TENURE"
KEYS = ("APP", "DATABASE", "URL", "TRANSACTIONAL")
EXAMPLE = "TENURE = {'APP': 'shop.tasks:app'}"


@dataclass(frozen=True, slots=True)
class TenureSettings:
    """``settings.TENURE``, checked."""

    app: str
    """``module:attribute`` of the project's tenure App."""
    database: str = "default"
    """The Django database alias whose transactions tasks can join."""
    url: str | None = None
    """A store URL of its own; ``None``: the store is ``database``'s database."""
    transactional: bool | None = None
    """Whether an enqueue without ``connection=`` inside an atomic block of
    ``database`` is written in that block's transaction. ``None`` (not set):
    yes when the store is that database, no when ``url`` puts it elsewhere;
    ``True`` insists (a store elsewhere is then an error); ``False``: never."""


def tenure_settings() -> TenureSettings:
    """``settings.TENURE`` of the running Django project, checked."""
    from django.conf import settings  # noqa: PLC0415 - read when asked, not at import

    raw = getattr(settings, SETTING, None)
    return read(raw, aliases=list(settings.DATABASES))


def read(raw: object, aliases: list[str]) -> TenureSettings:
    """``raw`` (the value of ``settings.TENURE``) as :class:`TenureSettings`;
    ``aliases`` are the keys of ``settings.DATABASES``."""
    if raw is None:
        raise ConfigError(
            f"settings.{SETTING} is missing: name your tenure App in it, e.g. {EXAMPLE}"
        )
    if not isinstance(raw, Mapping):
        raise ConfigError(f"settings.{SETTING} must be a dict, like {EXAMPLE}")
    _refuse_unknown(raw)
    return TenureSettings(
        app=_app(raw.get("APP")),
        database=_database(raw.get("DATABASE", "default"), aliases),
        url=_url(raw.get("URL")),
        transactional=_transactional(raw.get("TRANSACTIONAL")),
    )


def _refuse_unknown(raw: Mapping[Any, Any]) -> None:
    for key in raw:
        if key not in KEYS:
            close = difflib.get_close_matches(str(key), KEYS, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"the keys are {', '.join(KEYS)}"
            raise ConfigError(f"unknown key {key!r} in settings.{SETTING}: {hint}")


def _app(value: object) -> str:
    if value is None:
        raise ConfigError(f"settings.{SETTING}['APP'] is missing: {EXAMPLE}")
    module, colon, attribute = value.partition(":") if isinstance(value, str) else ("", "", "")
    if not (module and colon and attribute) or ":" in attribute:
        raise ConfigError(
            f"settings.{SETTING}['APP'] must be 'module:attribute' naming your tenure App, "
            f"like 'shop.tasks:app', not {value!r}"
        )
    return str(value)


def _database(value: object, aliases: list[str]) -> str:
    if not isinstance(value, str) or value not in aliases:
        known = ", ".join(repr(alias) for alias in aliases) or "none"
        raise ConfigError(
            f"settings.{SETTING}['DATABASE'] must be an alias of settings.DATABASES "
            f"({known}), not {value!r}"
        )
    return value


def _url(value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"settings.{SETTING}['URL'] must be a store URL, not {value!r}")
    try:
        parse_url(value)
    except ConfigError as exc:
        raise ConfigError(f"settings.{SETTING}['URL']: {exc}") from None
    return value


def _transactional(value: object) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise ConfigError(f"settings.{SETTING}['TRANSACTIONAL'] must be True or False, not {value!r}")


def describe(settings: TenureSettings) -> str:
    """Where the settings put the store, for messages (no password)."""
    if settings.url is None:
        return f"DATABASES[{settings.database!r}]"
    return f"settings.{SETTING}['URL'] ({redact(settings.url)})"
