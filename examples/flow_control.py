"""Flow control on one App, runnable: the recipes of
``docs/how-to/flow-control.md``, which the test suite runs as they are here
(``tests/integration/test_flow_control_example.py``).

Start two workers (each also stands for election as the scheduler, which
stores the limits, rate and ageing declared below), then enqueue::

    tenure worker --app examples.flow_control:app --concurrency 4 &
    tenure worker --app examples.flow_control:app --concurrency 4 &
    python -m examples.flow_control

The store is ``TENURE_URL`` (a ``tenure.db`` in the working directory if it
is not set); ``tenure tasks``, ``tenure limits``, ``tenure rates`` and
``tenure aged`` show what happened.
"""

from __future__ import annotations

import importlib
import time

import tenure

app = tenure.App()

# At most two exports run at once across every worker, and at most one per
# tenant; tenants take turns, so one tenant's backlog does not hold another's.
app.limit("exports", max_running=2)


@app.task(
    topic="exports",
    fair_key=lambda tenant, **_: tenant,
    concurrency=tenure.Limit(key=lambda tenant, **_: tenant, max_running=1),
)
def export(tenant: str, report: str) -> str:
    time.sleep(0.05)
    return f"{tenant}/{report}.csv"


# A ledger's entries post one at a time per account, in the order enqueued,
# a retry keeping its place; accounts post in parallel.
@app.task(topic="ledger", ordered_by=lambda account, **_: account, retries=5)
def post_entry(account: str, cents: int) -> int:
    time.sleep(0.01)
    return cents


# A partner's API takes at most ten calls a second, from every worker together.
app.rate("partner-api", max_starts=10, per=1)


@app.task(topic="partner-api", retries=3)
def call_partner(n: int) -> int:
    return n


# Reports are low priority, but one waiting a minute passes a fresh task one
# priority above it: a steady flow of urgent reports never starves the rest.
app.ageing("reports", every=60, most=10)


@app.task(topic="reports", priority=-5)
def report(name: str) -> str:
    return name


def enqueue() -> list[tenure.TaskHandle[object]]:
    """A little of everything; the handles, to wait on."""
    handles = [export.enqueue("acme", f"r{n}") for n in range(6)]
    handles.append(export.enqueue("globex", "r0"))
    handles += [post_entry.enqueue(account, cents) for cents in range(5) for account in "ab"]
    handles += [call_partner.enqueue(n) for n in range(12)]
    handles += [report.enqueue("weekly"), report.options(priority=0).enqueue("urgent")]
    return handles


if __name__ == "__main__":
    # Run as a script, this file is __main__, and its tasks' names would begin
    # with it: enqueue through the module the workers import instead.
    recipes = importlib.import_module("examples.flow_control")
    for handle in recipes.enqueue():
        print(handle.id, handle.wait(timeout=60))
