"""The ``tenure`` command (also ``python -m tenure``): run workers and the
scheduler, and look at and manage the tasks of a store from a shell.

Every command takes ``--url`` (default ``$TENURE_URL``, then ``url`` in
``[tool.tenure]`` of pyproject.toml, else ``sqlite:///tenure.db``). A mistake gets
one line on stderr and exit code 2; a failure (the store unreachable, a task
not found, an error raised importing the App's module) one line and exit code 1.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from typing import NoReturn, cast

from tenure import __version__
from tenure.admin import TaskAdmin
from tenure.cli import (
    commands,
    doctor,
    periodic,
    running,
    scheduler,
    serve,
    settings,
    tasks,
    worker,
)
from tenure.cli import events as event_commands
from tenure.cli.output import console, error, task_table
from tenure.cli.parsing import HelpFormatter, open_existing
from tenure.errors import ConfigError, InvalidInput, ScheduleConflict, TenureError
from tenure.loading import AppImportError
from tenure.shapes import task_json
from tenure.store import open_store, resolve_url

__all__ = ["console", "main", "task_json", "task_table"]

USAGE, FAILURE = 2, 1


class Parser(argparse.ArgumentParser):
    """argparse, answering a mistake with one line (and a suggestion) instead of
    the usage text, pointing to the help of the command it was made in."""

    given: Sequence[str] = ()

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        self.given = list(sys.argv[1:] if args is None else args)
        return super().parse_args(args, namespace)

    def error(self, message: str) -> NoReturn:
        hint = _suggestion(message) or f"see {self._command()} --help"
        error(f"{self.prog}: {message}", hint)
        raise SystemExit(USAGE)

    def _command(self) -> str:
        """The command a mistake was made in: argparse reports an unknown
        argument from the top parser, whatever command it followed."""
        words, parser = [self.prog], cast("argparse.ArgumentParser", self)
        for word in self.given:  # options and their values are passed over
            found = _subcommands(parser).get(word)
            if found is not None:
                words.append(word)
                parser = found
        return " ".join(words)


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _suggestion(message: str) -> str | None:
    """``did you mean …?`` for an invalid choice close to a valid one."""
    found = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if found is None:
        return None
    choices = re.findall(r"'([^']*)'", found.group(2))
    close = difflib.get_close_matches(found.group(1), choices, n=1)
    return f"did you mean {close[0]!r}?" if close else None


DESCRIPTION = (
    "tenure: a durable task queue. Run workers and the scheduler, serve the "
    "dashboard and the HTTP API, and look at and steer the tasks of a store. "
    "Every command takes --url (else $TENURE_URL, else url in [tool.tenure] of "
    "pyproject.toml, else sqlite:///tenure.db). For every option of worker and "
    "scheduler a flag beats its $TENURE_ variable, which beats [tool.tenure], "
    "which beats the default shown."
)
"""The top of ``tenure --help``: plain text, whole (the module's docstring is
for the reference, in reStructuredText)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the process exit code. ``tenure`` alone
    prints the help."""
    arguments = sys.argv[1:] if argv is None else list(argv)
    try:
        parser = build_parser()  # reads the environment and pyproject.toml: may refuse
        if not arguments:
            parser.print_help()
            return 0
        return _dispatch(parser.parse_args(arguments))
    except SystemExit as exc:  # argparse: --help and --version (0), a mistake (2)
        return exc.code if isinstance(exc.code, int) else 0 if exc.code is None else USAGE
    except TenureError as exc:
        return _report(exc)
    except KeyboardInterrupt:
        return 130


def _dispatch(args: argparse.Namespace) -> int:
    running.refuse_private(resolve_url(args.url))
    if args.run is None:  # these commands open their store (or their App's) themselves
        return int(args.serve(args))
    opened = open_existing(args.url) if getattr(args, "reads", False) else open_store(args.url)
    with opened as store:
        return int(args.run(TaskAdmin(store), args))


def _report(exc: TenureError) -> int:
    """One line for ``exc`` (after the traceback of an error in the user's module);
    the exit code: 2 for a mistake in the command or its settings, 1 otherwise."""
    if isinstance(exc, AppImportError):  # the user's module is broken: a failure
        print(exc.traceback, end="", file=sys.stderr)
        error(str(exc))
        return FAILURE
    error(str(exc))
    mistake = ConfigError | InvalidInput | ScheduleConflict
    return USAGE if isinstance(exc, mistake) else FAILURE


def build_parser(*, layered: bool = True) -> Parser:
    """The whole command line, its defaults layered from the environment and
    ``[tool.tenure]`` (see :mod:`tenure.cli.settings`) unless ``layered`` is
    false (the reference shows the built-in defaults)."""
    parser = Parser(
        prog="tenure",
        description=DESCRIPTION,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"tenure {__version__}")
    parser.add_argument("--url", help="store URL (default: $TENURE_URL, else sqlite:///tenure.db)")
    # Subcommands are Parsers too (argparse makes them of the parent's class).
    subcommands = cast(
        "argparse._SubParsersAction[argparse.ArgumentParser]",
        parser.add_subparsers(required=True, metavar="COMMAND"),
    )
    # --url is accepted after the command too (tenure worker --app m:app --url ...).
    url_too = argparse.ArgumentParser(add_help=False)
    url_too.add_argument("--url", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    layers = settings.layered(worker.OPTIONS) if layered else {}
    worker.add(subcommands, url_too, layers)
    scheduler.add(subcommands, url_too, layers)
    commands.add(subcommands, url_too)
    periodic.add(subcommands, url_too)
    tasks.add(subcommands, url_too)
    event_commands.add(subcommands, url_too)
    serve.add(subcommands, url_too)
    doctor.add(subcommands, url_too, layers)
    _add_completion(subcommands, parser)
    return parser


def _add_completion(
    subcommands: argparse._SubParsersAction[argparse.ArgumentParser],
    parser: argparse.ArgumentParser,
) -> None:
    completion = subcommands.add_parser(
        "completion",
        help="print a shell completion script",
        description='Print a completion script: eval "$(tenure completion bash)", or '
        "tenure completion zsh > ~/.zfunc/_tenure.",
    )
    completion.add_argument(
        "shell", choices=("bash", "zsh", "tcsh"), type=str.lower, help="the shell to complete in"
    )

    def print_script(args: argparse.Namespace) -> int:
        import shtab  # noqa: PLC0415 - only this command needs it

        print(shtab.complete(parser, shell=args.shell))
        return 0

    completion.set_defaults(run=None, serve=print_script)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
