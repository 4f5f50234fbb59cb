"""Prometheus metrics: the queue as the store tallies it, and a worker's own work.

:class:`StoreCollector` reads the store at scrape time (``/metrics`` of
``tenure serve``): tasks per topic and status, queue depth and the oldest
runnable task's wait per topic, the tasks that entered each status (a counter,
for ``rate()``), and the workers alive. On PostgreSQL these come from the tallies
the triggers keep, so a scrape costs a few milliseconds with millions of tasks.
``tenure_store_up`` says whether the store answered: while it does not, a
scrape still succeeds with that gauge at 0 (and nothing else), so the target
stays up and an alert on the gauge fires, rather than the scrape failing.

:class:`WorkerMetrics` counts what one worker process does, from its hooks:
task durations per task name and outcome (a histogram), outcomes per name (a
task given back unrun for a name the worker does not know counts as
``snoozed``, which is what the store shows: no failure), leases lost and tasks
revoked by the scheduler it hosts. ``tenure worker --metrics-port P`` serves
them (prometheus_client's own HTTP server).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from tenure.errors import StoreError
from tenure.hooks import HOOK_KINDS, Hooks, Outcome
from tenure.store import Store
from tenure.store.types import Backlog
from tenure.task import Status

DURATION_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900)
"""Seconds: from a no-op task to a quarter of an hour."""

ENDINGS = ("succeeded", "retrying", "failed", "snoozed", "cancelled")

log = logging.getLogger("tenure.metrics")


class StoreCollector(Collector):
    """The queue's figures, read from the store at each scrape."""

    def __init__(self, store: Callable[[], Store]) -> None:
        self._store = store

    def collect(self) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        up = GaugeMetricFamily("tenure_store_up", "1 if the store answered this scrape, else 0.")
        try:
            families = list(self._figures(self._store()))
        except StoreError as exc:
            log.warning("metrics: the store did not answer: %s", exc)
            up.add_metric([], 0)
            yield up
            return
        up.add_metric([], 1)
        yield up
        yield from families

    def _figures(self, store: Store) -> Iterator[GaugeMetricFamily | CounterMetricFamily]:
        stats = store.task_stats()
        tasks = GaugeMetricFamily(
            "tenure_tasks", "Tasks in the store, per topic and status.", labels=["topic", "status"]
        )
        depth = GaugeMetricFamily(
            "tenure_queue_depth", "Pending tasks per topic.", labels=["topic"]
        )
        for topic, per_status in sorted(stats.counts.items()):
            for status in Status:
                tasks.add_metric([topic, status.value], per_status.get(status, 0))
            depth.add_metric([topic], per_status.get(Status.PENDING, 0))
        oldest = GaugeMetricFamily(
            "tenure_oldest_pending_seconds",
            "How long the oldest runnable pending task of each topic has waited.",
            labels=["topic"],
        )
        for topic, since in sorted(stats.oldest_pending.items()):
            oldest.add_metric([topic], max(0.0, (stats.at - since).total_seconds()))
        yield from (tasks, depth, oldest, self._transitions(store), self._workers(store))

    def _transitions(self, store: Store) -> CounterMetricFamily:
        entered = CounterMetricFamily(
            "tenure_transitions",
            "Tasks that entered each status (a creation enters its first), per topic.",
            labels=["topic", "status"],
        )
        for topic, per_status in sorted(store.task_transition_totals().items()):
            for status, count in sorted(per_status.items()):
                entered.add_metric([topic, status.value], count)
        return entered

    def _workers(self, store: Store) -> GaugeMetricFamily:
        alive = GaugeMetricFamily("tenure_workers_alive", "Workers whose heartbeat is recent.")
        alive.add_metric([], len(store.worker_list()))
        return alive


def store_registry(store: Callable[[], Store]) -> CollectorRegistry:
    """A registry with only the store's figures (what ``/metrics`` serves)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(StoreCollector(store))
    return registry


class WorkerMetrics:
    """One worker process's own metrics, fed by its App's hooks."""

    def __init__(self, registry: CollectorRegistry | None = None) -> None:
        self.registry = registry or CollectorRegistry()
        self.duration = Histogram(
            "tenure_task_duration_seconds",
            "Run time of each execution, per task name and outcome.",
            ["name", "outcome"],
            buckets=DURATION_BUCKETS,
            registry=self.registry,
        )
        self.outcomes = Counter(
            "tenure_task_outcomes",
            "Executions per task name and outcome.",
            ["name", "outcome"],
            registry=self.registry,
        )
        self.revoked = Counter(
            "tenure_leases_revoked",
            "Tasks the hosted scheduler took back from silent workers.",
            registry=self.registry,
        )

        self.backlog = Gauge(
            "tenure_retention_backlog",
            "Rows older than the retention left by the hosted scheduler's last prune, "
            "per kind (tasks, events), counted up to a cap.",
            ["kind"],
            registry=self.registry,
        )

    def retention(self, backlog: Backlog) -> None:
        """What the hosted scheduler's last prune left."""
        self.backlog.labels("tasks").set(backlog.tasks)
        self.backlog.labels("events").set(backlog.events)

    def hook_into(self, hooks: Hooks) -> None:
        """Count every ending the worker's hooks are told of."""
        for kind in HOOK_KINDS:
            if kind in ENDINGS:
                hooks.add(kind, self.observe)

    def observe(self, outcome: Outcome) -> None:
        self.outcomes.labels(outcome.task.name, outcome.kind).inc()
        if outcome.duration is not None:
            self.duration.labels(outcome.task.name, outcome.kind).observe(outcome.duration)
