"""The worker: reserves tasks, runs them in a pool, keeps their leases, reports endings.

Threads, each with one job:
- the fetch loop (the caller of ``run``) reserves up to the free slots in one
  call and hands tasks to the executor; when idle it waits for a slot to free,
  a store notification, the poll interval, or a stop;
- the completer writes endings in batches (see ``completer``);
- the keepalive extends leases and enforces timeouts, and its cancel watch
  brings a cancel to a running task within about a second (see ``keepalive``);
- the store's wake-ups (``Store.task_notify``: PostgreSQL's listener, SQLite's
  watch on its change counter) wake the fetch loop as soon as tasks are created;
- the heartbeat keeps the worker's registry row fresh;
- unless ``scheduler=False``, the scheduler stands by and runs the cycle when
  this worker is elected.

Shutdown (SIGTERM/SIGINT or ``stop()``): stop reserving, let running tasks
finish within ``grace`` seconds, then release what remains to pending at once so
another worker can start it; a second signal skips the wait.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterable
from types import FrameType
from typing import Protocol

from tenure import checks as check
from tenure.errors import ConfigError, StoreError, StoreUnavailable, TenureError
from tenure.ids import default_owner
from tenure.registry import Registry
from tenure.retry import Backoff
from tenure.store import ReserveParams, Store
from tenure.store.flowcontrol import EXPIRED
from tenure.store.types import WorkerInfo
from tenure.store.url import describe_url, open_patiently
from tenure.store.waking import Wakeups
from tenure.task import Lease, Task
from tenure.worker.completer import BATCH as ENDINGS_BATCH
from tenure.worker.completer import Completer
from tenure.worker.executors import Executor, make_executor
from tenure.worker.heartbeat import Heartbeat, this_host
from tenure.worker.held import Held, Holdings, past_deadline
from tenure.worker.keepalive import Keepalive
from tenure.worker.pausewatch import PauseWatch
from tenure.worker.prefetch import Prefetch
from tenure.worker.processes import recycle_for
from tenure.worker.progress import ProgressWriter
from tenure.worker.release import release
from tenure.worker.runner import Cancelled, Ending
from tenure.worker.serving import untakeable
from tenure.worker.telling import Teller, fields
from tenure.worker.unknown import DEFAULT_GRACE, UnknownNames


class Hosted(Protocol):
    """A scheduler a worker hosts: it runs until ``stop`` is set."""

    def run(self, stop: threading.Event) -> object: ...


log = logging.getLogger("tenure.worker")


POOLS = ("threads", "processes", "async")
RESERVE_RETRY_MAX = 5.0
"""Seconds between two reservations while the store fails, at most: a server
back after a long outage gets its workers back within this (and a log line
every few seconds is no flood)."""

HANDED_BACK = "task %s (attempt %d) reserved, but the answer took %.1fs, past its lease: not run"
"""The warning of each task handed back unrun (:meth:`Worker._hand_back`)."""


class Worker:
    """Runs the tasks of one App. ``run()`` blocks until stopped and returns 0."""

    _teller: Teller  # tells endings and runs hooks; made with the store, in run()

    def __init__(
        self,
        store: Store | Callable[[], Store],
        registry: Registry,
        *,
        scheduler: Callable[[str], Hosted] | None = None,
        store_url: str | None = None,
        topics: Iterable[str] | None = None,
        concurrency: int = 4,
        prefetch: int | None = None,
        pool: str = "threads",
        tags: Iterable[str] = (),
        lease: float = 30.0,
        grace: float = 30.0,
        poll_interval: float = 1.0,
        owner: str | None = None,
        heartbeat: float = 5.0,
        unknown_name_grace: float = DEFAULT_GRACE,
        max_tasks_per_child: int | None = None,
        max_memory_per_child: float | None = None,
    ) -> None:
        if pool not in POOLS:
            raise ConfigError(f"pool must be one of {', '.join(POOLS)}, not {pool!r}")
        self.recycle = recycle_for(pool, max_tasks_per_child, max_memory_per_child)
        # The store, or how to open it (waited for at start if it is down).
        self._store = store
        self.store_url = store_url
        self.registry = registry
        self.topics = self._topics(registry, topics)
        self.concurrency = check.integer(concurrency, "concurrency", minimum=1)
        # Reserved beyond the running ones, so the next tasks are at hand when
        # one ends and reservations come in batches; leased and kept alive
        # like the running ones. 0 takes only what can start at once; None
        # follows the work (see ``prefetch``).
        fixed = None if prefetch is None else check.integer(prefetch, "prefetch", minimum=0)
        self.prefetch = Prefetch(self.concurrency, fixed)
        self.pool = pool
        self.tags = frozenset(check.tag_set(tags, "tags"))
        self.lease = check.seconds(lease, "lease")
        self.grace = check.seconds(grace, "grace", allow_zero=True)
        self.poll_interval = check.seconds(poll_interval, "poll_interval")
        self.owner = owner or default_owner()
        # Makes the scheduler this worker hosts (it stands by unless elected).
        self.scheduler_factory = scheduler
        self.heartbeat_interval = check.seconds(heartbeat, "heartbeat")
        # A task of a name not registered here is given back for another worker
        # (a rolling deploy) until it waited this long, then failed (see ``unknown``).
        grace_seconds = check.seconds(unknown_name_grace, "unknown_name_grace", allow_zero=True)
        self.unknown_names = UnknownNames(registry, grace_seconds)
        self.holdings = Holdings()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._hurry = threading.Event()
        self._stop_reasons: list[str] = []
        self._reserve_failures = 0  # in a row
        self._reserve_pauses = Backoff(base=self.poll_interval, maximum=RESERVE_RETRY_MAX)
        # The fetch loop's last reckoning of its slots, and of the free ones it
        # waits for before it reserves while tasks wait at hand.
        self._slots, self._enough = self.concurrency, 1
        self.started = threading.Event()

    @staticmethod
    def _topics(registry: Registry, topics: Iterable[str] | None) -> list[str]:
        """The topics asked for, else those of the App's tasks: a worker never takes
        tasks it has no function for just because they share its store."""
        if topics is not None:
            chosen = sorted({check.text(t, "topics") for t in topics})
        else:
            chosen = registry.topics()
        if not chosen:
            raise ConfigError("the worker has no topics: declare tasks with @app.task first")
        return chosen

    def __repr__(self) -> str:
        return f"<Worker {self.owner} topics={self.topics} {self.pool}x{self.concurrency}>"

    # -- lifecycle --------------------------------------------------------------

    def stop(self, reason: str = "stop requested") -> None:
        """Stop gracefully; a second call stops without waiting for running tasks.

        Safe in a signal handler, even one that interrupts another call of its
        own: ``list.append`` is atomic, so two calls always see two reasons."""
        self._stop_reasons.append(reason)
        if len(self._stop_reasons) > 1:
            self._hurry.set()
        self._stopping.set()
        self._wake.set()

    def run(self) -> int:
        """Work until stopped; return the process exit code (0 on a clean stop)."""
        restore = self._install_signals()
        try:
            try:
                store = self._open_store()
                if store is not None:
                    self._work(store)
            finally:
                restore()
            log.info("worker %s stopped", self.owner)
        finally:
            flush_logs()
        return 0

    def _open_store(self) -> Store | None:
        """The App's store, waiting out an outage (``None`` if stopped meanwhile):
        a worker started before its database comes up waits for it. A permanent
        error (no such database, bad credentials) is raised at once."""
        store = self._store
        return store if isinstance(store, Store) else open_patiently(store, self._stopping, log)

    def _work(self, store: Store) -> None:
        # A result is checked where it is made against the limit the store will
        # apply: never one the store then refuses.
        limit = min(self.registry.max_payload_bytes, store.max_payload_bytes)
        self.registry.max_payload_bytes = limit
        teller = self._teller = Teller(store, self.registry.hooks, self.unknown_names.tell)
        self._pause_watch = PauseWatch(store, self.poll_interval)
        writer = ProgressWriter(store, self.holdings)
        executor = make_executor(self.pool, self.registry, self.concurrency, writer, self.recycle)
        completer = Completer(
            store, self.holdings, self.registry.backoff_of, give_up=self._hurry, teller=teller
        )
        completer.on_written = self._wake.set
        keepalive = Keepalive(
            store,
            self.holdings,
            self.lease,
            executor.abandon,
            completer.put,
            teller=teller,
            retries_timeout=self.registry.retries_timeout,
        )
        self._executor = executor
        heartbeat = Heartbeat(store, self.describe, self.heartbeat_interval, told=self._scaled)
        teller.start()
        completer.start()
        keepalive.start()
        heartbeat.start()
        scheduler = self._start_scheduler()
        # New tasks on the store wake the fetch loop as slots freeing do.
        subscription = store.task_notify(self.topics, self._wake)
        self._announce()
        self.started.set()
        try:
            self._fetch_loop(store, executor, completer, subscription)
            log.info("worker %s: %s, stopping", self.owner, self._stop_reasons[0])
        finally:
            subscription()
            self._shutdown(store, executor, completer, keepalive)
            scheduler()
            heartbeat.close(self.owner)

    def _announce(self) -> None:
        """One line that says what this worker is and where it looks for work, and
        a warning for each task of the App it can never take."""
        log.info(
            "worker %s started: store=%s tasks=%s topics=%s tags=%s pool=%s concurrency=%d",
            self.owner,
            describe_url(self.store_url) if self.store_url else repr(self._store),
            ",".join(sorted(self.registry)) or "-",
            ",".join(self.topics),
            ",".join(sorted(self.tags)) or "-",
            self.pool,
            self.concurrency,
        )
        for warning in untakeable(self.registry.values(), self.topics, self.tags):
            log.warning("%s", warning)

    def _fetch_loop(
        self, store: Store, executor: Executor, completer: Completer, subscription: Wakeups
    ) -> None:
        def deliver(held: Held, ending: Ending) -> None:
            if self.holdings.end(held):
                if held.running:  # not a task given back unrun
                    self.prefetch.ran(time.monotonic() - held.started)
                completer.put(held, ending)
                # A slot is free: the loop reserves while the ending is written,
                # if it would now; not woken for every ending while tasks wait.
                if self._reserve_now(self._slots - self.holdings.unfinished()):
                    self._wake.set()

        while not self._stopping.is_set():
            # Clear before looking: a wake-up (a slot freed, a task enqueued) that
            # comes after the look is kept for the wait below, never lost.
            self._wake.clear()
            paused = self._pause_watch.paused(self.holdings)
            release(store, executor, self.holdings, paused, "unbegun, its topic paused")
            slots = self.concurrency + self.prefetch.ahead
            self._slots, self._enough = slots, max(1, slots // 4)
            free = slots - self.holdings.unfinished()
            tasks: list[Task] = []
            # Never reserve while the store is slow to take the endings: work done
            # faster than it is recorded would pile up in memory.
            behind = self.holdings.unwritten() >= max(slots, ENDINGS_BATCH)
            if not behind and self._reserve_now(free):
                tasks, asked = self._reserve(store, free)
                self._start(tasks, asked, executor, deliver)
                # Wake-ups are wanted while the store runs short of work for this
                # worker. One made wanted after the look began may have missed a
                # task: look again before waiting.
                if len(tasks) >= free:
                    subscription.busy()
                elif not self._reserve_failures and subscription.idle(asked):
                    continue
            if not tasks or len(tasks) < free:
                self._wake.wait(self.poll_interval)

    def _reserve_now(self, free: int) -> bool:
        """Whether to reserve for ``free`` slots: while tasks wait at hand, only
        once a quarter of the slots is free, so that reservations are fewer and
        bigger instead of one per ending. Asked by the loop, and by each ending,
        which wakes the loop only then."""
        return free >= self._enough or (free > 0 and not self.holdings.waiting())

    def _reserve(self, store: Store, limit: int) -> tuple[list[Task], float]:
        """Reserve up to ``limit`` tasks, and say when they were asked for (their
        leases run from then, by this process's clock, whenever the answer
        comes). While the store fails, wait longer after each failure, up to
        :data:`RESERVE_RETRY_MAX` (one log line per step)."""
        began = time.monotonic()
        try:
            tasks = store.task_reserve(self._reserve_params(limit))
        except StoreError as exc:
            self._reserve_failures += 1
            pause = self._reserve_pauses.delay(self._reserve_failures)
            level = logging.WARNING if isinstance(exc, StoreUnavailable) else logging.ERROR
            log.log(level, "reserve failed (%s); retrying in %.1fs", exc, pause)
            self._stopping.wait(pause)
            return [], began
        if self._reserve_failures:
            log.info("reserve works again after %d failures", self._reserve_failures)
            self._reserve_failures = 0
        took = time.monotonic() - began
        if tasks and took >= self.lease:
            self._hand_back(store, tasks, took)
            return [], began
        self.prefetch.reserved(took)
        return tasks, began

    def _hand_back(self, store: Store, tasks: list[Task], took: float) -> None:
        """Tasks whose reservation was answered after their lease (a network cut,
        a pause, a long wait for SQLite's write lock) may run elsewhere already:
        never run here. Each is released, fenced by its lease: back to pending at
        once if the lease still holds, refused (and left to the supervisor) if not."""
        for task in tasks:
            log.warning(HANDED_BACK, task.id, task.attempts, took, extra=fields(task))
            with contextlib.suppress(TenureError):
                store.task_release(Lease(task.id, self.owner, task.lease_token or 0))

    def _reserve_params(self, limit: int) -> ReserveParams:
        return ReserveParams(
            owner=self.owner,
            topics=self.topics,
            limit=limit,
            lease_seconds=self.lease,
            tags=self.tags,
        )

    def _start(
        self,
        tasks: list[Task],
        asked: float,
        executor: Executor,
        deliver: Callable[[Held, Ending], None],
    ) -> None:
        """Hold a reservation's tasks (asked for at ``asked``), all at once, and
        hand each to the executor."""
        now, expires = time.monotonic(), asked + self.lease
        helds = [
            Held(task, Lease(task.id, self.owner, task.lease_token or 0), now, expires)
            for task in tasks
        ]
        self.holdings.add_all(helds)
        for held in helds:
            self._submit(held, executor, deliver)

    def _submit(
        self, held: Held, executor: Executor, deliver: Callable[[Held, Ending], None]
    ) -> None:
        unknown = self.unknown_names.ending(held.task)
        if unknown is not None:  # never runs here: no pool sees it
            deliver(held, unknown)
            return
        # The execution reports as this reservation, never by task id alone: an
        # older execution of the same task can neither start nor end this one.
        executor.submit(
            held.task,
            held.lease,
            lambda _, ending: deliver(held, ending),
            lambda _: self._claim(held, deliver),
        )

    def _claim(self, held: Held, deliver: Callable[[Held, Ending], None]) -> bool:
        """Let the execution of ``held`` begin, unless it was given up meanwhile,
        or its deadline passed while it waited in this worker (reserved ahead):
        then it ends cancelled, never started."""
        if past_deadline(held):
            if self.holdings.claim(held):
                deliver(held, Cancelled(EXPIRED))
            return False
        if not self.holdings.claim(held):
            return False
        self._teller.started(held)
        return True

    def _scaled(self, row: WorkerInfo) -> None:
        """Take the concurrency an operator set on this worker's row."""
        if row.scale_to is None or row.scale_to == self.concurrency:
            return
        log.info("worker %s: concurrency %d, was %d (scaled)", self.owner, row.scale_to,
                 self.concurrency)  # fmt: skip
        self.concurrency = self.prefetch.concurrency = row.scale_to
        self._executor.resize(row.scale_to)
        self._wake.set()

    def describe(self) -> WorkerInfo:
        """This worker as the registry shows it."""
        host, pid = this_host()
        return WorkerInfo(
            id=self.owner,
            host=host,
            pid=pid,
            topics=tuple(self.topics),
            tags=tuple(sorted(self.tags)),
            pool=self.pool,
            concurrency=self.concurrency,
            held=len(self.holdings),
        )

    def _start_scheduler(self) -> Callable[[], None]:
        """Host the scheduler (it stands by unless elected); returns its stopper."""
        if self.scheduler_factory is None:
            return lambda: None
        scheduler = self.scheduler_factory(self.owner)
        stop = threading.Event()
        thread = threading.Thread(
            target=scheduler.run, args=(stop,), name="tenure-scheduler", daemon=True
        )
        thread.start()

        def stop_scheduler() -> None:
            stop.set()
            thread.join()

        return stop_scheduler

    # -- shutdown ---------------------------------------------------------------

    def _shutdown(
        self, store: Store, executor: Executor, completer: Completer, keepalive: Keepalive
    ) -> None:
        # Tasks that never began go back to pending at once, not after the grace.
        unreleased = release(store, executor, self.holdings, self.holdings.end_waiting())
        self._tell_wait()
        deadline = time.monotonic() + self.grace
        while len(self.holdings) and not self._hurry.is_set():
            left = deadline - time.monotonic()
            if left <= 0 or self.holdings.wait_empty(min(left, 0.05)):
                break
        if self._hurry.is_set():
            log.info(
                "worker %s: %s, not waiting for running tasks", self.owner, self._stop_reasons[-1]
            )
        ended = [held for held in self.holdings if self.holdings.end(held)]
        unreleased += release(store, executor, self.holdings, ended, store_down=unreleased > 0)
        if unreleased:
            log.warning(
                "%d tasks left leased, the store being unreachable: the supervisor "
                "hands them back once their leases lapse",
                unreleased,
            )
        completer.close()
        keepalive.close()
        executor.close()
        self._teller.close()

    def _tell_wait(self) -> None:
        """Say, as the stop begins, what it waits for and how to cut it short."""
        running = len(self.holdings)
        if not running or self._hurry.is_set():
            return
        tasks = "1 running task" if running == 1 else f"{running} running tasks"
        log.info(
            "worker %s: waiting up to %s for %s (stop again, Ctrl-C or SIGTERM, to stop now: "
            "unfinished tasks go back to pending)",
            self.owner, _seconds(self.grace), tasks,
        )  # fmt: skip

    def _install_signals(self) -> Callable[[], None]:
        if threading.current_thread() is not threading.main_thread():
            return lambda: None

        # No logging here: a handler runs between any two bytecodes of the main
        # thread, also inside a write to the log stream, and a nested write
        # raises (reentrant call) and loses the signal. The main thread logs it.
        def on_signal(signum: int, _: FrameType | None) -> None:
            self.stop(f"{signal.Signals(signum).name} received")

        previous = {sig: signal.signal(sig, on_signal) for sig in (signal.SIGTERM, signal.SIGINT)}

        def restore() -> None:
            for sig, handler in previous.items():
                signal.signal(sig, handler)

        return restore


def flush_logs() -> None:
    """Write out what the log handlers hold (those of the ``tenure`` command queue
    records for a thread of their own): a worker's last lines, its shutdown line
    or the error that ends it, are out before anything its caller prints next."""
    for handler in logging.getLogger().handlers:
        with contextlib.suppress(OSError, ValueError):  # a closed stream: as logging's own
            handler.flush()


def _seconds(value: float) -> str:
    """A duration as people read it: ``30 s``, ``2.5 s``."""
    return f"{value:g} s"
