"""Where the command's settings come from, besides its flags.

Every option of ``tenure worker`` and ``tenure scheduler`` (and ``--url``,
``--app``, ``--log-level``, ``--log-format``) can also be set by an environment
variable ``TENURE_<OPTION>`` (``TENURE_CONCURRENCY=8``, ``TENURE_NO_SCHEDULER=1``)
or in the ``[tool.tenure]`` table of the nearest ``pyproject.toml`` from the
current directory upwards (``concurrency = 8``, ``topics = ["a", "b"]``). A flag
beats the environment, which beats the file, which beats the built-in default.
The store URL follows the same order, resolved by the store itself (so an
``App()`` without a URL agrees with the command): ``--url`` only overrides it.
The layered values become the parser's defaults, so ``--help`` shows what
applies here and each value is checked as its flag's would be.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from tenure.errors import ConfigError
from tenure.pyproject import find_pyproject, tenure_table

ENV_PREFIX = "TENURE_"
OWN_LAYERS = {"url"}
"""Settings the store resolves itself, in the same order (see ``resolve_url``), so
that an ``App()`` in a web process finds the store its workers use."""
NOT_SETTINGS = {"help", "version"}
TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off", ""}


def env_settings(names: Iterable[str], environ: Mapping[str, str]) -> dict[str, str]:
    """``TENURE_<NAME>`` for each known setting name that is set."""
    found = {}
    for name in names:
        value = environ.get(ENV_PREFIX + name.upper())
        if value is not None:
            found[name] = value
    return found


def apply(
    parsers: Iterable[argparse.ArgumentParser],
    environ: Mapping[str, str] | None = None,
    pyproject: Path | None = None,
) -> None:
    """Make the environment's and the file's values the defaults of ``parsers``'
    options; unknown keys in the file, and values a flag would refuse, raise
    :class:`ConfigError` naming where they came from."""
    environ = os.environ if environ is None else environ
    actions = {a.dest: a for p in parsers for a in p._actions if a.option_strings}
    for name in NOT_SETTINGS:
        actions.pop(name, None)
    source = pyproject if pyproject is not None else find_pyproject()
    from_file = tenure_table(source)
    unknown = sorted(set(from_file) - set(actions))
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r} in [tool.tenure] of {source}")
    layered = {
        **{k: (v, f"{k} in [tool.tenure] of {source}") for k, v in from_file.items()},
        **{k: (v, ENV_PREFIX + k.upper()) for k, v in env_settings(actions, environ).items()},
    }
    for name in OWN_LAYERS:
        layered.pop(name, None)
    for parser in parsers:
        for action in parser._actions:
            # A default of SUPPRESS marks an option shared by every subcommand
            # (--url after the command): it must keep saying "not given here".
            if action.dest in layered and action.default is not argparse.SUPPRESS:
                value, origin = layered[action.dest]
                action.default = _converted(action, value, origin)
                action.required = False


def _converted(action: argparse.Action, value: Any, origin: str) -> Any:
    """``value`` as the flag would have produced it."""
    if isinstance(action, argparse._StoreTrueAction | argparse._StoreFalseAction):
        return _boolean(value, origin)
    if isinstance(value, list):
        value = ",".join(str(item) for item in value)
    text = str(value)
    try:
        converted = action.type(text) if callable(action.type) else text
    except (TypeError, ValueError, argparse.ArgumentTypeError) as exc:
        raise ConfigError(f"{origin}: invalid value {text!r} ({exc})") from None
    if action.choices is not None and converted not in action.choices:
        choices = ", ".join(map(str, action.choices))
        raise ConfigError(f"{origin}: {text!r} is not one of {choices}")
    return converted


def _boolean(value: Any, origin: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE | FALSE:
        return text in TRUE
    raise ConfigError(f"{origin}: expected true or false, got {value!r}")
