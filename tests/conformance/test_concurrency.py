"""Several OS processes reserving from one store never receive the same task twice.

A barrier after each process's first reservation makes the contention certain: every
process has claimed a batch before any claims a second, so a store that lets one
writer starve the others cannot make the test vacuous.
"""

from __future__ import annotations

import json
import multiprocessing
from multiprocessing.synchronize import Barrier
from pathlib import Path

import pytest

from tenure import Lease, Status, Store, open_store
from tenure.store import Completion, ReserveParams, TaskFilter
from tests.conformance.support import new

TASKS = 3000
PROCESSES = 4


def reserve_until_empty(url: str, owner: str, out: str, first_round: Barrier) -> None:
    """In a child process: reserve in batches, complete, record every id taken."""
    store = open_store(url)
    first_round.wait()
    taken: list[str] = []
    rounds = empty_rounds = 0
    while empty_rounds < 3:
        tasks = store.task_reserve(ReserveParams(owner=owner, limit=25))
        rounds += 1
        if rounds == 1:
            first_round.wait()  # everyone holds a first batch before anyone takes a second
        if not tasks:
            empty_rounds += 1
            continue
        empty_rounds = 0
        taken.extend(t.id for t in tasks)
        leases = [Lease(t.id, owner, t.lease_token or 0) for t in tasks]
        store.task_complete_many([Completion(lease, owner) for lease in leases])
    store.close()
    Path(out).write_text(json.dumps(taken))


@pytest.mark.slow
def test_processes_never_reserve_the_same_task_twice(
    store: Store, store_url: str, tmp_path: Path
) -> None:
    for _ in range(TASKS // 500):
        store.task_create_many([new() for _ in range(500)])
    ctx = multiprocessing.get_context("spawn")
    first_round = ctx.Barrier(PROCESSES, timeout=120)
    outs = [tmp_path / f"taken-{i}.json" for i in range(PROCESSES)]
    procs = [
        ctx.Process(target=reserve_until_empty, args=(store_url, f"w{i}", str(out), first_round))
        for i, out in enumerate(outs)
    ]
    for proc in procs:
        proc.start()
    try:
        for proc in procs:
            proc.join(timeout=240)
            assert proc.exitcode == 0, f"reserver exited with {proc.exitcode}"
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
    taken = [json.loads(out.read_text()) for out in outs]
    every = [task_id for ids in taken for task_id in ids]
    assert len(every) == len(set(every)) == TASKS
    assert all(taken), "a process got no work: contention was not tested"
    done = store.task_list(TaskFilter(status=Status.DONE), limit=10_000).tasks
    assert len(done) == TASKS
    owners = {task.id: task.result for task in done}
    for i, ids in enumerate(taken):
        assert all(owners[task_id] == f"w{i}" for task_id in ids)
