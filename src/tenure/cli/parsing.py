"""Reading the command line's values: durations (``7d``), moments (``2h`` ago or an
ISO time), JSON arguments, and the store a command is about, as people write
and read them. A bad value is a usage mistake: argparse's one line, exit 2."""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from tenure.errors import TenureError
from tenure.store import Store, open_store
from tenure.store.sqlite import is_memory_path
from tenure.store.url import describe_url, parse_url, resolve_url, sqlite_parts

UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$")


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's help, each default shown once: not for an option whose help
    already says its default, nor one without a default worth showing."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if "default" in text or action.default in (None, False, [], argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


def duration(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``15m``, ``12h``, ``7d`` or ``2w``."""
    found = _DURATION.match(text.lower())
    if found is None:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (e.g. 30s, 15m, 12h, 7d)")
    return float(found.group(1)) * UNITS[found.group(2) or "s"]


def positive(text: str) -> int:
    """A whole number, one or more."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"not a whole number, one or more: {text!r}")
    return int(text)


def moment(text: str) -> datetime:
    """A time: that long ago (``2h``, ``3d``) or an ISO 8601 time (UTC unless it
    says otherwise)."""
    if _DURATION.match(text.lower()):
        try:
            return datetime.now(UTC) - timedelta(seconds=duration(text))
        except OverflowError:
            raise argparse.ArgumentTypeError(f"too long ago: {text!r}") from None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"not a time: {text!r} (2h or 3d ago, or 2026-11-23T08:00:00)"
        ) from None
    return parsed if parsed.tzinfo is not None else parsed.replace(tzinfo=UTC)


def json_value(kind: type[list[Any]] | type[dict[str, Any]]) -> Callable[[str], Any]:
    """A converter for a JSON argument that must be a ``kind`` (array or object)."""
    what = "array" if kind is list else "object"

    def convert(text: str) -> Any:
        try:
            value = json.loads(text)
        except ValueError as exc:
            raise argparse.ArgumentTypeError(f"not valid JSON: {exc}") from None
        if not isinstance(value, kind):
            raise argparse.ArgumentTypeError(f"must be a JSON {what}, not {text!r}")
        return value

    convert.__name__ = f"JSON {what}"
    return convert


def where(args: argparse.Namespace) -> str:
    """The store a command used, as the user should read it (absolute SQLite path,
    no password): a relative SQLite URL names a different file in each folder."""
    return describe_url(resolve_url(args.url))


class NoStore(TenureError):
    """A command that only reads was pointed at a SQLite file that does not exist."""

    def __init__(self, path: str) -> None:
        super().__init__(
            f"no tenure store at {path} (run from your project's folder, set TENURE_URL, "
            "or `tenure migrate` to create one)"
        )
        self.path = path


def open_existing(url: str | None) -> Store:
    """The store ``url`` names, for a command that only reads: a SQLite file that
    does not exist is :class:`NoStore` (opening it would create and migrate it,
    in whatever folder the command ran), never created."""
    dialect, parsed = parse_url(resolve_url(url))
    if dialect == "sqlite":
        path, _ = sqlite_parts(parsed)
        if not is_memory_path(path) and not os.path.exists(path):
            raise NoStore(os.path.abspath(path))
    return open_store(url)
