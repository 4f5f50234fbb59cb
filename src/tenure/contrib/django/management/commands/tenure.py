"""``python manage.py tenure <command> [options]``: any ``tenure`` command on the
store Django's settings name (``tenure tasks --status failed``, ``tenure stats``,
``tenure migrate --sql``, ``tenure serve``), the App being the one of
``settings.TENURE``. See :mod:`tenure.contrib.django.commandline`.
"""

from __future__ import annotations

from typing import Any, ClassVar

from django.core.management.base import BaseCommand, CommandError

from tenure.contrib.django.commandline import DJANGO_FLAGS, run_tenure, split_argv


class Command(BaseCommand):  # type: ignore[misc] # Django ships no type hints
    help = (
        "Run a tenure command (tasks, stats, migrate, serve, ...) on Django's database "
        "and settings.TENURE['APP'] (manage.py tenure --help lists them)."
    )
    requires_system_checks: ClassVar[list[str]] = []  # reading the queue needs none

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("args", nargs="*", metavar="ARGUMENT", help="a tenure command")

    def run_from_argv(self, argv: list[str]) -> None:
        flags = [flag for flag in DJANGO_FLAGS if flag != "--skip-checks"]  # none run here
        django, tenure = split_argv(argv[2:], flags)
        super().run_from_argv([*argv[:2], *django, "--", *tenure])

    def handle(self, *args: str, **options: Any) -> None:
        code = run_tenure(list(args), replace=self._called_from_command_line)
        if code:
            raise CommandError(f"tenure exited with code {code}", returncode=code)
