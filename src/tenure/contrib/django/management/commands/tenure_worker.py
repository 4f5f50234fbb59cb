"""``python manage.py tenure_worker [options]``: ``tenure worker`` for the App of
``settings.TENURE``, on the store Django's settings name, with Django set up in
the worker and in every process-pool child.

Every option is ``tenure worker``'s (``--concurrency 8``, ``--pool processes``,
``--topics a,b``, ``--help`` lists them); Django's ``--settings``,
``--pythonpath`` and ``--skip-checks`` work as for any command. Django's system
checks run first. See :mod:`tenure.contrib.django.commandline`.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError

from tenure.contrib.django.commandline import run_tenure, split_argv


class Command(BaseCommand):  # type: ignore[misc] # Django ships no type hints
    help = (
        "Run a tenure worker for settings.TENURE['APP'] on Django's database: "
        "tenure worker's options (manage.py tenure_worker --help lists them)."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("args", nargs="*", metavar="OPTION", help="an option of tenure worker")

    def run_from_argv(self, argv: list[str]) -> None:
        django, tenure = split_argv(argv[2:])
        super().run_from_argv([*argv[:2], *django, "--", *tenure])

    def handle(self, *args: str, **options: Any) -> None:
        code = run_tenure(["worker", *args], replace=self._called_from_command_line)
        if code:
            raise CommandError(f"tenure worker exited with code {code}", returncode=code)
