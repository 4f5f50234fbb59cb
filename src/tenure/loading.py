"""Finds an App from a ``module:attribute`` path, as the CLI and child processes do.

The current directory is searched first, as ``python -m`` and ``python script.py``
do, so ``tenure worker --app tasks:app`` finds ``tasks.py`` where it runs. A wrong
path is answered with what was found instead (``did you mean tasks:app?``); an
error raised inside the user's module keeps its traceback.
"""

from __future__ import annotations

import difflib
import importlib
import os
import sys
import traceback
from types import ModuleType
from typing import TYPE_CHECKING

from tenure.errors import ConfigError

if TYPE_CHECKING:
    from tenure.app import App


class AppImportError(ConfigError):
    """The module named by ``--app`` raised while being imported; ``traceback`` is
    the text of that error's traceback, for the user to see where."""

    def __init__(self, message: str, trace: str) -> None:
        super().__init__(message)
        self.traceback = trace


def load_app(path: str) -> App:
    """Import ``module:attribute`` (``attribute`` defaults to ``app``) and check it."""
    from tenure.app import App  # noqa: PLC0415 - avoids an import cycle at module load

    module_name, _, attribute = path.partition(":")
    if not module_name or path.count(":") > 1:
        raise ConfigError(f"--app must be 'module:attribute' (like tasks:app), got {path!r}")
    module = _import(module_name)
    attribute = attribute or "app"
    app = getattr(module, attribute, None)
    if not isinstance(app, App):
        raise ConfigError(_not_an_app(module, module_name, attribute, app, App))
    app.import_path = f"{module_name}:{attribute}"
    return app


def _import(module_name: str) -> ModuleType:
    here = os.getcwd()
    if here not in sys.path and "" not in sys.path:
        sys.path.insert(0, here)
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name == module_name or module_name.startswith(f"{exc.name}."):
            raise ConfigError(
                f"cannot import {module_name!r}: no module {exc.name!r} in {here} or on the "
                "Python path (run from the folder that holds it, or set PYTHONPATH)"
            ) from None
        raise _raised_inside(module_name, exc) from exc
    except Exception as exc:
        raise _raised_inside(module_name, exc) from exc


def _raised_inside(module_name: str, exc: BaseException) -> AppImportError:
    trace = "".join(traceback.format_exception(exc))
    message = f"importing {module_name!r} raised {type(exc).__name__}: {exc} (traceback above)"
    return AppImportError(message, trace)


def _not_an_app(
    module: ModuleType, module_name: str, attribute: str, found: object, app_type: type
) -> str:
    apps = [name for name, value in vars(module).items() if isinstance(value, app_type)]
    if found is None and not hasattr(module, attribute):
        what = f"{module_name} has no attribute {attribute!r}"
    else:
        what = f"{module_name}:{attribute} is a {type(found).__name__}, not a tenure.App"
    if not apps:
        return f"{what}, and defines no tenure.App"
    close = difflib.get_close_matches(attribute, apps, n=1) or apps[:1]
    return f"{what}; did you mean {module_name}:{close[0]}?"
