"""The App of the election scenario (``chaos.election:app``): the probe's task,
and the same task enqueued every :data:`SLOT` seconds by whichever of the
scheduler candidates is elected (a short, healthy probe call per slot).

Each slot's task has an id made of the periodic's name and the slot's time, so
the checker finds every slot the schedulers enqueued in the store.
"""

from __future__ import annotations

from datetime import datetime

import tenure
from chaos.probe import declare

SLOT = 1.0
"""Seconds between two slots of the periodic task (tenure's smallest interval)."""
PERIODIC = "chaos.tick"
PREFIX = f"periodic:{PERIODIC}:"
"""What the id of each slot's task begins with (then the slot's ISO time)."""
APP = "chaos.election:app"

app = tenure.App()
task = declare(app)
app.periodic(SLOT, args=(0.05, 0), name=PERIODIC)(task)


def slot_of(task_id: str) -> float | None:
    """The slot (seconds since the epoch) a periodic task's id names, else None."""
    if not task_id.startswith(PREFIX):
        return None
    return datetime.fromisoformat(task_id.removeprefix(PREFIX)).timestamp()
