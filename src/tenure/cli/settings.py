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

Each such option is declared once, as an :class:`Option`: the parser's
argument is made from it, and the environment's and the file's values are read
and checked by it, so the layers need nothing of argparse's internals.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tenure.errors import ConfigError
from tenure.pyproject import find_pyproject, tenure_table

ENV_PREFIX = "TENURE_"
OWN_LAYERS = {"url"}
"""Settings the store resolves itself, in the same order (see ``resolve_url``), so
that an ``App()`` in a web process finds the store its workers use."""
TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off", ""}

Layers = Mapping[str, Any]
"""Option name → the value the environment or the file gives it, converted."""


@dataclass(frozen=True, slots=True)
class Option:
    """One option of a command: its flag, help, default and how its text is
    read. ``switch`` options take no value (``--no-scheduler``)."""

    flag: str
    help: str
    default: Any = None
    type: Callable[[str], Any] = str
    choices: Sequence[Any] | None = None
    switch: bool = False
    required: bool = False

    @property
    def name(self) -> str:
        """The option's name in Python, the environment and the file (``log_level``)."""
        return self.flag.removeprefix("--").replace("-", "_")

    @property
    def sources(self) -> str:
        """Where else it is set, as its help says it."""
        return f"${ENV_PREFIX}{self.name.upper()}, or {self.name} in [tool.tenure]"

    def add_to(self, parser: argparse.ArgumentParser, layers: Layers) -> None:
        """Add the option to ``parser``, defaulting to what ``layers`` gives it."""
        default = layers.get(self.name, self.default)
        helptext = f"{self.help} ({self.sources})"
        if self.switch:
            parser.add_argument(self.flag, action="store_true", default=default, help=helptext)
            return
        parser.add_argument(
            self.flag,
            type=self.type,
            choices=self.choices,
            default=default,
            required=self.required and self.name not in layers,
            help=helptext,
        )

    def convert(self, value: Any, origin: str) -> Any:
        """``value`` (from ``origin``) as the flag would have produced it."""
        if self.switch:
            return _boolean(value, origin)
        if isinstance(value, list):
            value = ",".join(str(item) for item in value)
        text = str(value)
        try:
            converted = self.type(text)
        except (TypeError, ValueError, argparse.ArgumentTypeError) as exc:
            raise ConfigError(f"{origin}: invalid value {text!r} ({exc})") from None
        if self.choices is not None and converted not in self.choices:
            choices = ", ".join(map(str, self.choices))
            raise ConfigError(f"{origin}: {text!r} is not one of {choices}")
        return converted


def add_options(
    parser: argparse.ArgumentParser, options: Iterable[Option], layers: Layers
) -> argparse.ArgumentParser:
    """Add ``options`` to ``parser``; returns it."""
    for option in options:
        option.add_to(parser, layers)
    return parser


def env_settings(names: Iterable[str], environ: Mapping[str, str]) -> dict[str, str]:
    """``TENURE_<NAME>`` for each known setting name that is set."""
    found = {}
    for name in names:
        value = environ.get(ENV_PREFIX + name.upper())
        if value is not None:
            found[name] = value
    return found


def layered(
    options: Iterable[Option],
    environ: Mapping[str, str] | None = None,
    pyproject: Path | None = None,
) -> dict[str, Any]:
    """The environment's and the file's values of ``options``, the environment's
    first, each converted as its flag's would be; unknown keys in the file, and
    values a flag would refuse, raise :class:`ConfigError` naming where they came
    from."""
    environ = os.environ if environ is None else environ
    known = {option.name: option for option in options}
    source = pyproject if pyproject is not None else find_pyproject()
    from_file = tenure_table(source)
    unknown = sorted(set(from_file) - set(known) - OWN_LAYERS)
    if unknown:
        raise ConfigError(f"unknown setting {unknown[0]!r} in [tool.tenure] of {source}")
    given = {
        **{k: (v, f"{k} in [tool.tenure] of {source}") for k, v in from_file.items()},
        **{k: (v, ENV_PREFIX + k.upper()) for k, v in env_settings(known, environ).items()},
    }
    return {
        name: known[name].convert(value, origin)
        for name, (value, origin) in given.items()
        if name in known
    }


def _boolean(value: Any, origin: str) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in TRUE | FALSE:
        return text in TRUE
    raise ConfigError(f"{origin}: expected true or false, got {value!r}")
