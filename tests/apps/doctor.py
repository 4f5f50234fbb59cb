"""An App for ``tenure doctor --app``: one unique task whose timeout outlives
its lock, and others declared as they should be."""

from __future__ import annotations

import tenure

app = tenure.App(unique_ttl=30.0)


@app.task(timeout=60.0, unique=tenure.Unique(lock="while_executing"))
def outlives_its_lock() -> None:
    """Its lock (the App's 30 s) can expire while it runs its 60 s."""


@app.task(timeout=60.0, unique=tenure.Unique(lock="until_executed", ttl=120.0))
def within_its_lock() -> None:
    """Its own ttl covers its timeout."""


@app.task(timeout=60.0, unique=tenure.Unique(lock="until_executing"))
def unlocked_at_start() -> None:
    """Its lock ends when it starts: the timeout does not matter to it."""
