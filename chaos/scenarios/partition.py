"""The partition scenario (see :mod:`chaos.scenarios`; PostgreSQL, on a private
cluster): three worker hosts, each a network namespace of its own
(:mod:`chaos.netns`), share the work; one host in the middle of a task is cut
off from the store for three leases, then healed. Its tasks must run elsewhere
within lease + cycle, nothing it writes for them may be accepted, and it must
take work again by itself (:mod:`chaos.checks.partition` checks it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path

from chaos import ChaosError
from chaos.checker import CORE
from chaos.checks import partition as cut
from chaos.checks import reruns
from chaos.harness import Harness
from chaos.journal import monotonic
from chaos.netns import Network, NetworkCluster
from chaos.scenarios.base import SHORT, Context, Plan, Scenario, found, tasks

HOSTS = 3
READY = 60.0
"""Seconds every host's worker gets to start its first task."""
DATABASE = "tenure_chaos"


@contextmanager
def target(_: str, __: Path, ___: str | None) -> Iterator[tuple[str, NetworkCluster]]:
    """The hosts' network and a private cluster on it: the database's URL (at
    the bridge's address, which the harness reaches too) and the cluster."""
    with Network(HOSTS) as network:
        cluster = NetworkCluster(network)
        with cluster:
            yield cluster.create_database(DATABASE), cluster


def partition(harness: Harness, context: Context) -> None:
    cluster = context.cluster
    if not isinstance(cluster, NetworkCluster):
        raise ChaosError("partition runs on a private cluster of its own network only")
    network = cluster.network
    hosts = {harness.spawn("worker", network.place(k)): k for k in range(HOSTS)}
    harness.wait_for(
        lambda: all(network.inside(pid, k) and _worker(pid) for pid, k in hosts.items()),
        "every worker running inside its host's namespace",
        30,
    )
    stop = harness.setup.folder / "stop-producers"  # work goes on until the last heal
    harness.produce(replace(w, until=str(stop)) for w in context.plan.workloads)
    try:
        began = monotonic()
        harness.wait_for(
            lambda: set(hosts) <= harness.started_since(began), "every host starting a task", READY
        )
        for _ in range(context.plan.faults):
            context.interval()
            busy = found(harness, lambda: harness.holders(left=0.5))
            if not busy:
                raise ChaosError("no host in the middle of a task: nothing to cut off")
            _cut(harness, context, network, busy[0])
    finally:
        stop.touch()


def _cut(harness: Harness, context: Context, network: Network, pid: int) -> None:
    """Cut the host of worker ``pid`` off for three leases, heal it, and wait
    until the worker starts a task again (the checker holds the bound)."""
    host = _host_of(network, pid)
    harness.faults.write("phase", name=f"cut {pid}", host=host)
    network.cut(host)
    try:
        context.wait(3 * context.plan.lease)
    finally:
        harness.faults.write("phase", name=f"heal {pid}", host=host)
        network.heal(host)
    healed = monotonic()
    harness.wait_for(
        lambda: pid in harness.started_since(healed),
        "the healed host taking a task again",
        30,
        fail=False,
    )


def _host_of(network: Network, pid: int) -> int:
    for host in range(len(network.hosts)):
        if network.inside(pid, host):
            return host
    raise ChaosError(f"worker pid {pid} runs in none of the hosts' namespaces")


def _worker(pid: int) -> bool:
    """Whether ``pid`` is the worker itself (``ip netns exec`` has exec'd it)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as cmdline:
            return b"tenure\0worker" in cmdline.read()
    except OSError:
        return False


LONG = {"durations": (3.0, 3.0), "batch": 1, "flaky": 0, "doomed": 0}
"""Tasks of a lease and a half, so a host is cut off in the middle of one."""
PARTITION = {
    "full": Plan(
        workers=0,
        concurrency=8,
        workloads=(tasks(5000, 51, durations=SHORT, rate=15), tasks(100, 52, rate=0.4, **LONG)),
        faults=3,
        every=(4.0, 8.0),
    ),
    "quick": Plan(
        workers=0,
        concurrency=8,
        workloads=(tasks(1000, 51, durations=SHORT, rate=15), tasks(30, 52, rate=0.6, **LONG)),
        faults=1,
        every=(1.0, 2.0),
        drain=120,
    ),
}
"""Producers go on until the last host is healed and working again: counts
are at most. Workers start in their hosts (``workers=0``: the harness's own would run on
the store's side of the partition). Two hosts have room for all the work, so a
task taken back from the cut-off one runs again at once: I9 is measured up to
its run elsewhere, with no queue to wait in."""
SCENARIO = Scenario(
    "partition",
    PARTITION,
    partition,
    stores=("postgres",),
    target=target,
    checks=(*CORE, *reruns.CHECKS, *cut.CHECKS),
)
