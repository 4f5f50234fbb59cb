"""``manage.py tenure_worker`` and ``manage.py tenure``: tenure's own command
line, run on the store Django's settings name.

The management commands do not re-implement ``tenure worker``: they run it, so
every option, default, setting layer (``TENURE_*``, ``[tool.tenure]``), log
line, signal and exit code is the one documented for ``tenure``. Run from a
shell, the command *becomes* ``python -m tenure …`` (``exec``): same process id,
so a process manager's SIGTERM reaches the worker itself. Its environment says
which store and which App: ``TENURE_URL`` is the bound App's store (Django's
database, or ``TENURE['URL']``) and ``TENURE_APP`` is
``tenure.contrib.django.configured:app``, which sets Django up before answering
the App (in the worker and in each process-pool child). The Python path and
``DJANGO_SETTINGS_MODULE`` (``--settings``, ``--pythonpath``) carry over.

The arguments are split here: Django's own options (``--settings``,
``--pythonpath``, ``--traceback``, ``--no-color``, ``--force-color``,
``--skip-checks``, ``-v``) stay Django's, everything else is tenure's.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence

from tenure.contrib.django.binding import CONFIGURED, bound_app

DJANGO_FLAGS = ("--traceback", "--no-color", "--force-color", "--skip-checks")
DJANGO_VALUED = ("--settings", "--pythonpath", "--verbosity", "-v")


def split_argv(
    arguments: Sequence[str], flags: Sequence[str] = DJANGO_FLAGS
) -> tuple[list[str], list[str]]:
    """Django's options (``flags`` and those taking a value) and tenure's
    arguments, in their order (all after a ``--`` are tenure's)."""
    django: list[str] = []
    tenure: list[str] = []
    rest = iter(arguments)
    for argument in rest:
        name = argument.partition("=")[0]
        if argument == "--":
            tenure.extend(rest)
        elif name in flags:
            django.append(argument)
        elif name in DJANGO_VALUED:
            django.append(argument)
            value = next(rest, None) if "=" not in argument else None
            if value is not None:
                django.append(value)
        elif argument.startswith("-v") and argument[2:].isdigit():
            django.append(argument)
        else:
            tenure.append(argument)
    return django, tenure


def tenure_command(arguments: Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """The argv and the environment of ``python -m tenure <arguments>`` on the
    bound App's store."""
    app = bound_app()
    path = [entry for entry in sys.path if entry]
    environment = {
        **os.environ,
        "TENURE_URL": app.url,
        "TENURE_APP": CONFIGURED,
        "PYTHONPATH": os.pathsep.join(path),
    }
    return [sys.executable, "-m", "tenure", *arguments], environment


def run_tenure(arguments: Sequence[str], *, replace: bool) -> int:
    """Run ``tenure <arguments>``: in place of this process (``replace``, from a
    shell), else as a child whose exit code is returned (``call_command``)."""
    from django.db import connections  # noqa: PLC0415

    argv, environment = tenure_command(arguments)
    connections.close_all()  # nothing of Django's is inherited open
    if not replace:
        return subprocess.run(argv, env=environment, check=False).returncode  # noqa: S603
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(sys.executable, argv, environment)  # noqa: S606 - the same interpreter
