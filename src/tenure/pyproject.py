"""Reads ``[tool.tenure]`` from the nearest ``pyproject.toml``: the one settings file
that both the ``tenure`` command and an ``App()`` without a URL consult, so a web
process and its workers, started in the same project, find the same store."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from tenure.errors import ConfigError


def find_pyproject(start: Path | None = None) -> Path | None:
    """The nearest ``pyproject.toml`` at or above ``start`` (the working directory)."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def tenure_table(path: Path | None) -> dict[str, Any]:
    """The ``[tool.tenure]`` table of ``path`` (none: ``{}``), keys spelt as the
    command's options are in Python (``log-level`` becomes ``log_level``)."""
    if path is None:
        return {}
    try:
        document = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"cannot read {path}: {exc}") from None
    table = document.get("tool", {})
    table = table.get("tenure", {}) if isinstance(table, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"[tool.tenure] in {path} must be a table")
    return {key.replace("-", "_"): value for key, value in table.items()}


def configured_url() -> str | None:
    """``url`` in ``[tool.tenure]`` of the nearest pyproject.toml, if any."""
    source = find_pyproject()
    url = tenure_table(source).get("url")
    if url is not None and not isinstance(url, str):
        raise ConfigError(f"url in [tool.tenure] of {source} must be a string")
    return url
