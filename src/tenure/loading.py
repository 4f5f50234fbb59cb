"""Finds an App from a ``module:attribute`` path, as the CLI and child processes do."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

from tenure.errors import ConfigError

if TYPE_CHECKING:
    from tenure.app import App


def load_app(path: str) -> App:
    """Import ``module:attribute`` (``attribute`` defaults to ``app``) and check it."""
    from tenure.app import App  # noqa: PLC0415 - avoids an import cycle at module load

    module_name, _, attribute = path.partition(":")
    if not module_name:
        raise ConfigError(f"--app must be 'module:attribute', got {path!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigError(f"cannot import {module_name!r}: {exc}") from exc
    app = getattr(module, attribute or "app", None)
    if not isinstance(app, App):
        raise ConfigError(f"{path!r} is not a tenure.App (got {type(app).__name__})")
    app.import_path = path
    return app
