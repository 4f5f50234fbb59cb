"""Recovery time: SIGKILL a worker holding tasks; how long until another starts them?

For each store: worker B (no scheduler) takes tasks that block until a gate
file exists; worker A hosts the scheduler; B is killed with SIGKILL; the time
from the kill to the moment each task starts again on A is read from the event
log (the store's clock). The lease is 2 s and the scheduler cycle 1 s, so the
target is at most lease + cycle = 3 s.

    python -m benchmarks.recovery [--trials 5] [--postgres URL]
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tenure import Status, Store, open_store
from tests.apps import basic

ROOT = Path(__file__).resolve().parents[1]
LEASE = 2.0


def worker(url: str, *options: str) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "tenure", "worker", "--app", "tests.apps.basic:app"]
    command += ["--url", url, "--lease", str(LEASE), "--poll", "0.05", "--log-level", "WARNING"]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    # The argv is this interpreter and fixed options: nothing from outside reaches it.
    return subprocess.Popen(  # noqa: S603
        [*command, *options], cwd=ROOT, env=env, stderr=subprocess.DEVNULL
    )


def wait(store: Store, ids: list[str], status: Status, limit: float = 30) -> None:
    deadline = time.monotonic() + limit
    while any((t := store.task_get(i)) is None or t.status is not status for i in ids):
        if time.monotonic() > deadline:
            raise RuntimeError(f"tasks did not reach {status}")
        time.sleep(0.01)


def trial(url: str, gate: Path) -> list[float]:
    """Seconds from the kill to each task's restart, for one kill."""
    store = open_store(url)
    victim = worker(url, "--no-scheduler", "--concurrency", "4")
    ids = [store.task_create(basic.holds.new_task((str(gate),), {})).id for _ in range(4)]
    wait(store, ids, Status.RUNNING)
    rescuer = worker(url)
    time.sleep(1.5)  # let the rescuer start and be elected before the kill
    killed_at = store.clock_now()
    victim.send_signal(signal.SIGKILL)
    victim.wait()
    gate.touch()
    wait(store, ids, Status.DONE)
    rescuer.send_signal(signal.SIGTERM)
    rescuer.wait(30)
    restarts = [
        (e.at - killed_at).total_seconds()
        for e in store.event_list(limit=10_000)
        if e.task_id in ids and e.to_status is Status.RUNNING and e.at > killed_at
    ]
    gate.unlink()
    store.close()
    return restarts


def measure(name: str, url: str, trials: int, gate: Path) -> dict[str, float]:
    samples = [s for _ in range(trials) for s in trial(url, gate)]
    result = {
        "min": min(samples),
        "median": statistics.median(samples),
        "max": max(samples),
        "n": len(samples),
    }
    print(
        f"{name:10} recovery after SIGKILL: median {result['median']:.2f} s, "
        f"min {result['min']:.2f} s, max {result['max']:.2f} s over {len(samples)} tasks "
        f"(lease {LEASE:.0f} s + cycle 1 s = target {LEASE + 1:.0f} s)"
    )
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=3)
    parser.add_argument("--postgres", default=os.environ.get("TENURE_BENCH_POSTGRES_URL"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        gate = Path(folder) / "gate"
        measure("sqlite", f"sqlite:///{folder}/recovery.db", args.trials, gate)
        if args.postgres:
            measure("postgresql", args.postgres, args.trials, gate)


if __name__ == "__main__":
    main()
