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
from typing import TypeVar

from tenure.errors import ConfigError
from tenure.registry import Registry

T = TypeVar("T")


class _Holder(type):
    def __instancecheck__(cls, value: object) -> bool:
        return isinstance(getattr(value, "registry", None), Registry)


class _HasRegistry(metaclass=_Holder):
    """What a pool child looks for: anything with a task registry (an App), found
    without importing the App's module here."""

    registry: Registry


class AppImportError(ConfigError):
    """The module named by ``--app`` raised while being imported; ``traceback`` is
    the text of that error's traceback, for the user to see where."""

    def __init__(self, message: str, trace: str) -> None:
        super().__init__(message)
        self.traceback = trace


def find(path: str, kind: type[T], what: str = "tenure.App") -> T:
    """The ``kind`` object that ``module:attribute`` names (``attribute``
    defaults to ``app``), imported from the current directory first."""
    module_name, _, attribute = path.partition(":")
    if not module_name or path.count(":") > 1:
        raise ConfigError(f"--app must be 'module:attribute' (like tasks:app), got {path!r}")
    try:
        module = _import(module_name)
    except ConfigError as missing:
        dotted = _dotted(path, kind)
        if dotted is None or isinstance(missing, AppImportError):
            raise
        raise ConfigError(f"{missing}; did you mean {dotted}?") from None
    found = getattr(module, attribute or "app", None)
    if not isinstance(found, kind):
        raise ConfigError(_not_found(module, attribute or "app", kind, what))
    return found


def _dotted(path: str, kind: type) -> str | None:
    """``tasks:app`` for ``tasks.app`` written with a dot, when that one names a
    ``kind``: the colon is easy to miss."""
    if ":" in path or "." not in path:
        return None
    module_name, _, attribute = path.rpartition(".")
    try:
        found = getattr(_import(module_name), attribute, None)
    except ConfigError:
        return None
    return f"{module_name}:{attribute}" if isinstance(found, kind) else None


def load_registry(path: str) -> Registry:
    """The task registry of the App at ``path``, as a process-pool child finds it."""
    registry = find(path, _HasRegistry, "tenure.App").registry
    registry.import_path = path
    return registry


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


def _not_found(module: ModuleType, attribute: str, kind: type, what: str) -> str:
    module_name, found = module.__name__, getattr(module, attribute, None)
    apps = [name for name, value in vars(module).items() if isinstance(value, kind)]
    if found is None and not hasattr(module, attribute):
        wrong = f"{module_name} has no attribute {attribute!r}"
    else:
        wrong = f"{module_name}:{attribute} is a {type(found).__name__}, not a {what}"
    if not apps:
        return f"{wrong}, and defines no {what}"
    close = difflib.get_close_matches(attribute, apps, n=1) or apps[:1]
    return f"{wrong}; did you mean {module_name}:{close[0]}?"
