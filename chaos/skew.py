"""Wall clocks moved on purpose, for the clock-skew scenario
(:mod:`chaos.scenarios.skew`; its checks: :mod:`chaos.checks.skew`).

A skewed process runs with libfaketime preloaded into the process itself
(``LD_PRELOAD``; never the ``faketime`` wrapper, which forks, so the harness's
signals would reach the wrapper and not the worker), its monotonic clock left
real (``FAKETIME_DONT_FAKE_MONOTONIC``), and its offset read from a file of its
own (``FAKETIME_TIMESTAMP_FILE``) at most a second old
(``FAKETIME_CACHE_DURATION``): rewriting the file moves the clock of the running
process, a jump, and of every process started again in its place. Python's
``time.sleep`` fails under libfaketime with a real monotonic clock; the shim of
``tests/faketime_shim`` replaces it (on ``PYTHONPATH``).

Each change of a clock is a ``phase`` of the fault log named ``clock WHO
OFFSET`` (e.g. ``clock worker-0 -2h``): the figures list them.

"""

from __future__ import annotations

import os
from pathlib import Path

from chaos import ROOT, CannotRunHere
from chaos.harness import Placement

LIBRARY = next(
    iter(sorted(Path("/usr/lib").glob("*/faketime/libfaketime.so.1"))),
    Path("/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1"),
)
"""Debian's libfaketime, wherever the machine's multiarch folder is."""
SHIM = ROOT / "tests" / "faketime_shim"
CLOCK = "clock "
"""The prefix of the fault log's phases that change a clock."""


class FaketimeUnavailable(CannotRunHere):
    """libfaketime is not installed; the message says which package brings it."""


class Clocks:
    """The clocks of a scenario's skewed processes: one offset file per name, in
    ``folder``."""

    def __init__(self, folder: Path) -> None:
        if not LIBRARY.exists():
            raise FaketimeUnavailable(
                f"libfaketime not found ({LIBRARY}): apt-get install libfaketime"
            )
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)

    def place(self, name: str, offset: str) -> Placement:
        """Where a process whose clock ``name`` starts ``offset`` (``-2h``) off runs."""
        self.move(name, offset)
        path = os.pathsep.join(filter(None, [str(SHIM), str(ROOT), os.environ.get("PYTHONPATH")]))
        env = {
            "LD_PRELOAD": str(LIBRARY),
            "FAKETIME_TIMESTAMP_FILE": str(self._file(name)),
            "FAKETIME_DONT_FAKE_MONOTONIC": "1",
            "FAKETIME_CACHE_DURATION": "1",
            "PYTHONPATH": path,
        }
        return Placement(env=tuple(env.items()))

    def move(self, name: str, offset: str) -> None:
        """Set clock ``name`` to ``offset``: running processes see it within a second."""
        staged = self._file(name).with_suffix(".new")
        staged.write_text(offset + "\n")
        staged.replace(self._file(name))  # a reader never sees a half-written file

    def _file(self, name: str) -> Path:
        return self.folder / f"{name}.faketime"


def skewed(pid: int) -> bool:
    """Whether process ``pid`` has libfaketime loaded (its clock is the file's)."""
    try:
        return "libfaketime" in Path(f"/proc/{pid}/maps").read_text()
    except OSError:
        return False
