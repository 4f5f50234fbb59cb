"""The clock-skew scenario's checks (:data:`CHECKS`): the figures of its
clocks. Each change of a clock is a ``phase`` of the fault log named ``clock
WHO OFFSET`` (:data:`chaos.skew.CLOCK`); the executions in flight on a skewed
worker that was killed must run again elsewhere in time, which is I9's
(:mod:`chaos.checks.reruns`), and I8's on PostgreSQL.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chaos.skew import CLOCK
from chaos.verdict import Check

if TYPE_CHECKING:
    from chaos.evidence import Evidence
    from chaos.verdict import Bounds, Result


def clocks(ev: Evidence, _: Bounds, out: Result) -> None:
    """The clock changes of the run, for its figures."""
    out.figures.clocks = [name.removeprefix(CLOCK) for name, _ in changes(ev)]


def changes(ev: Evidence) -> list[tuple[str, float]]:
    """(name, mono) of each ``phase`` that changed a clock."""
    return [(name, at) for name, at in ev.phases if name.startswith(CLOCK)]


CHECKS = (Check("clocks", (), clocks),)
