"""What the long-running commands share (``tenure worker``, ``tenure scheduler``,
``tenure serve``): the App they load, how they log, and the store they refuse."""

from __future__ import annotations

import argparse
import inspect
from collections.abc import Callable
from typing import Any

from tenure import logs
from tenure.app import App, load_app
from tenure.cli.settings import Option
from tenure.errors import ConfigError
from tenure.store.url import is_private

RUNNING = (
    Option("--app", "module:attribute of your tenure.App, e.g. tasks:app", required=True),
    Option(
        "--log-level",
        "least severe log records shown",
        default="info",
        type=str.lower,
        choices=logs.LEVELS,
    ),
    Option(
        "--log-format",
        "text lines, or one JSON object per line for log pipelines",
        default="text",
        type=str.lower,
        choices=logs.FORMATS,
    ),
)
"""The options of every long-running command."""


def default_of(api: Callable[..., Any], name: str) -> Any:
    """The default of ``api``'s parameter ``name``: a command's option shows and
    uses the Python API's own default, never a copy of it."""
    return inspect.signature(api).parameters[name].default


def csv(text: str) -> list[str]:
    """``a, b,c`` as ``["a", "b", "c"]``."""
    return [part.strip() for part in text.split(",") if part.strip()]


def served_app(args: argparse.Namespace, role: str) -> App:
    """The App of ``--app``, logging as asked, on ``--url`` when given."""
    logs.configure(args.log_level, args.log_format)
    app = load_app(args.app)
    app.role = role
    if args.url:
        app.use(args.url)
    refuse_private(app.url)
    return app


def refuse_private(url: str) -> None:
    """A command's store must be one other processes can see: a private one
    (``sqlite:///:memory:``, for tests) would take work that vanishes with it."""
    if is_private(url):
        raise ConfigError(
            f"{url} is private to one process and gone when it ends: "
            "give the command a file (sqlite:///tenure.db) or a PostgreSQL URL"
        )
