"""``tenure doctor``: what will hurt later, found before it does.

A queue that works today can still be set up to fail in a month: retention
that cannot keep pace, no scheduler to wake snoozed tasks, a database that
loses acknowledged writes at a power cut, more connections than the server
gives, tables whose dead rows nothing reclaims. Each check here reads the
store (and, given one, an App's declarations) and returns findings, each with
what is wrong and a one-line fix. Checks are small functions of a
:class:`Subject`, listed in :data:`CHECKS`; one that cannot run (a permission
refused, a table missing) is reported as unchecked and the others still run.

Nothing here writes: the store is read as it is (the command opens it
without migrating it).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from tenure.errors import TenureError
from tenure.maintenance.leader import SCHEDULER
from tenure.maintenance.retention import BEHIND_AFTER
from tenure.maintenance.scheduler import DEFAULT_RETENTION
from tenure.registry import Registry
from tenure.store import Store
from tenure.store.migrate import pending_migrations
from tenure.store.types import TableKey
from tenure.task import LockPhase

SILENT_LEASES = 2.0
"""A scheduler silent for this many of its leader leases is gone: a live one
extends every cycle, and a standby takes over one lease after a leader dies."""
WORKER_ALIVE = 60.0
"""Seconds since a worker's last beat (every 5 s) within which it is counted."""
CONNECTION_MARGIN = 10
"""Connections left for everyone but the workers: psql, backups, monitoring,
migrations, the application that enqueues."""


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing that will hurt: a stable ``code``, what is wrong, and the fix."""

    code: str
    what: str
    fix: str


@dataclass(frozen=True, slots=True)
class Unchecked:
    """A check that did not run, and why: one that failed (not a clean bill),
    or one skipped for having nothing to look at here."""

    check: str
    why: str


@dataclass(slots=True)
class Diagnosis:
    """What the checks found, and which they could not run."""

    checks: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    unchecked: list[Unchecked] = field(default_factory=list)
    skipped: list[Unchecked] = field(default_factory=list)
    """Checks with nothing to look at here (a PostgreSQL setting on SQLite,
    declarations without an App): no fault of the store's."""

    @property
    def clean(self) -> bool:
        """Every check ran and found nothing."""
        return not self.findings and not self.unchecked


class NotApplicable(Exception):
    """Raised by a check that has nothing to look at here, saying why: it is
    skipped, which leaves the diagnosis clean."""


@dataclass(frozen=True, slots=True)
class Subject:
    """What the checks look at: the store's URL, the store opened on it
    (``None`` when it could not be opened without changing it), the App's
    registry when one was given, and the retention its scheduler keeps."""

    url: str
    store: Store | None
    registry: Registry | None = None
    retention: float = DEFAULT_RETENTION
    _read: dict[str, Any] = field(default_factory=dict, repr=False, compare=False)
    """What several checks read, read once (the settings, the tables' keys)."""

    def opened(self) -> Store:
        """The store; a check that needs it is skipped without one (the schema
        check has reported why)."""
        if self.store is None:
            raise NotApplicable("the store was not opened: its schema is out of date")
        return self.store

    def table_keys(self) -> list[TableKey]:
        """tenure's tables, read once for every check that looks at them."""
        if "table_keys" not in self._read:
            self._read["table_keys"] = self.opened().table_keys()
        keys: list[TableKey] = self._read["table_keys"]
        return keys

    def settings(self, dialect_key: str, dialect: str) -> dict[str, str]:
        """The database's settings (read once); a check of another dialect's
        is skipped."""
        if "settings" not in self._read:
            self._read["settings"] = self.opened().database_settings()
        settings: dict[str, str] = self._read["settings"]
        if dialect_key not in settings:
            raise NotApplicable(f"not a {dialect} store")
        return settings


Check = Callable[[Subject], list[Finding]]


def diagnose(subject: Subject, checks: Sequence[Check] | None = None) -> Diagnosis:
    """Run ``checks`` (default: all of :data:`CHECKS`) on ``subject``: each
    one's findings, and the error of each that could not run."""
    diagnosis = Diagnosis()
    for check in CHECKS if checks is None else checks:
        name = check_name(check)
        try:
            found = check(subject)
        except NotApplicable as exc:
            diagnosis.skipped.append(Unchecked(name, str(exc)))
            continue
        except (TenureError, LookupError, ValueError) as exc:  # a refusal, a value unread
            diagnosis.unchecked.append(Unchecked(name, str(exc).splitlines()[0] or repr(exc)))
            continue
        diagnosis.checks.append(name)
        diagnosis.findings.extend(found)
    return diagnosis


def check_name(check: Check) -> str:
    """``schema`` for ``check_schema``."""
    return check.__name__.removeprefix("check_").replace("_", "-")


# -- the store's schema and upkeep ------------------------------------------------------


def check_schema(subject: Subject) -> list[Finding]:
    """Migrations the store lacks: workers of this version would fail on it."""
    missing = pending_migrations(subject.url)
    if not missing:
        return []
    return [
        Finding(
            "schema-out-of-date",
            f"the store's schema lacks {len(missing)} migration(s) of this version: "
            f"{', '.join(missing)}",
            "run `tenure migrate` (or have a DBA run `tenure migrate --sql`) "
            "before starting this version's workers",
        )
    ]


def check_retention(subject: Subject) -> list[Finding]:
    """Finished tasks and events kept well past the retention: pruning is not
    keeping pace (or not running), and the tables grow without end."""
    late = subject.retention + BEHIND_AFTER
    backlog = subject.opened().retention_backlog(late)
    if not backlog.rows:
        return []
    plus = "+" if max(backlog.tasks, backlog.events) >= backlog.cap else ""
    return [
        Finding(
            "retention-behind",
            f"retention is falling behind: {backlog.tasks}{plus} finished tasks and "
            f"{backlog.events}{plus} events are older than the retention "
            f"({subject.retention:g} s) by more than {BEHIND_AFTER:g} s",
            "keep a scheduler running, and give it a larger --prune-budget so that it "
            "deletes as fast as tasks finish",
        )
    ]


def check_scheduler(subject: Subject) -> list[Finding]:
    """No scheduler leads: nothing wakes snoozed tasks, enqueues periodic ones,
    hands back a dead worker's tasks or prunes."""
    store = subject.opened()
    state = store.leader_get(SCHEDULER)
    silence = store.leader_silence(SCHEDULER)
    if state is not None and silence is not None:
        if silence <= SILENT_LEASES * state.lease_seconds:
            return []
        why = f"its last leader went silent {silence:.0f} s ago"
    elif state is None:
        why = "none ever ran on this store"
    else:
        why = "the last one stopped and none took over"
    return [
        Finding(
            "no-scheduler",
            f"no scheduler is alive ({why}): snoozed tasks never wake, periodic tasks "
            "never run, a dead worker's tasks are never handed back, nothing is pruned",
            "run `tenure scheduler --app MODULE:APP` on this store, or workers without "
            "--no-scheduler",
        )
    ]


# -- the database -------------------------------------------------------------------------


def check_primary_keys(subject: Subject) -> list[Finding]:
    """tenure's tables that a publication cannot carry updates and deletes of
    (logical replication, change capture, a managed database's upgrades):
    with one, the scheduler's steps on them fail every cycle."""
    return [
        Finding(
            "no-primary-key",
            f"table {table.schema}.{table.name} has no primary key and replica identity "
            f"{table.replica_identity}: a publication FOR ALL TABLES makes every update "
            "and delete of it fail, and the scheduler's steps with them",
            f"ALTER TABLE {table.schema}.{table.name} REPLICA IDENTITY FULL "
            "(or run `tenure migrate` after an upgrade that gives it a key)",
        )
        for table in subject.table_keys()
        if not table.replicable
    ]


def check_public_schema(subject: Subject) -> list[Finding]:
    """tenure's tables in ``public`` (a store URL with ``schema=public``): the
    generic names (``tasks``, ``events``, ``workers``) collide with the first
    table of an application's named alike."""
    ours = [table for table in subject.table_keys() if table.schema == "public"]
    if not ours:
        return []
    return [
        Finding(
            "public-schema",
            f"tenure's {len(ours)} tables are in schema public, where an application's "
            "table named like one of them (tasks, events, workers …) cannot be created",
            "take schema=public out of the store URL (and TENURE_SCHEMA): the next "
            "`tenure migrate` moves them, in place, into a schema of their own",
        )
    ]


def check_sqlite_durability(subject: Subject) -> list[Finding]:
    """A SQLite file outside WAL, or written without waiting for the disk."""
    settings = subject.settings("journal_mode", "SQLite")
    found = []
    journal = settings["journal_mode"]
    if journal != "wal":
        found.append(
            Finding(
                "sqlite-not-wal",
                f"the SQLite database is in journal mode {journal}, not WAL: every "
                "write blocks every reader, and workers wait on each other",
                "keep the file on a local disk (WAL needs shared memory, which network "
                "file systems lack) and let nothing switch its journal mode",
            )
        )
    if settings.get("synchronous") in ("off", "normal"):
        found.append(
            Finding(
                "sqlite-synchronous",
                f"SQLite synchronous is {settings['synchronous']}, below FULL: a power "
                "cut can lose writes already acknowledged (tasks enqueued, results saved)",
                "drop synchronous= from the store's URL (FULL is the default)",
            )
        )
    return found


def check_postgres_durability(subject: Subject) -> list[Finding]:
    """A PostgreSQL server that acknowledges commits it may lose."""
    settings = subject.settings("fsync", "PostgreSQL")
    found = []
    if settings["fsync"] == "off":
        found.append(
            Finding(
                "postgres-fsync-off",
                "PostgreSQL runs with fsync=off: a crash of its machine can lose recent "
                "commits and corrupt the database beyond repair",
                "set fsync = on in postgresql.conf and reload the server",
            )
        )
    if settings.get("synchronous_commit") == "off":
        found.append(
            Finding(
                "postgres-synchronous-commit-off",
                "PostgreSQL's synchronous_commit is off for tenure's sessions: a server "
                "crash loses the last commits, tasks enqueued and endings reported",
                "set synchronous_commit = on (postgresql.conf, or ALTER DATABASE / "
                "ALTER ROLE … SET, wherever it was turned off)",
            )
        )
    return found


def check_postgres_autovacuum(subject: Subject) -> list[Finding]:
    """Autovacuum off, for the server or for tenure's tables: every finished
    task, retried attempt and pruned row leaves dead rows behind, and only
    VACUUM makes their space reusable. A queue updates and deletes all day, so
    without it the tables grow without end (a soak at 1,000 tasks/s grew by
    2 MB a second) and every scan reads the dead rows too. The store's own
    ANALYZE, made when autovacuum is off, keeps the plans right, not the size."""
    settings = subject.settings("autovacuum", "PostgreSQL")
    found = []
    if settings["autovacuum"] == "off":
        found.append(
            Finding(
                "postgres-autovacuum-off",
                "PostgreSQL runs with autovacuum off: the dead rows tenure's updates "
                "and deletes leave are never reclaimed, and its tables grow without end",
                "turn autovacuum on (ALTER SYSTEM SET autovacuum = on; SELECT pg_reload_conf())",
            )
        )
    tables = [f"{t.schema}.{t.name}" for t in subject.table_keys() if not t.autovacuum]
    if tables:
        found.append(
            Finding(
                "postgres-autovacuum-off",
                f"autovacuum is disabled on tenure's table(s) {', '.join(tables)} "
                "(autovacuum_enabled=false): their dead rows are never reclaimed, and "
                "they grow without end",
                "; ".join(f"ALTER TABLE {table} RESET (autovacuum_enabled)" for table in tables),
            )
        )
    return found


def check_connections(subject: Subject) -> list[Finding]:
    """More connections than the server gives, should every live worker's pool fill."""
    settings = subject.settings("max_connections", "PostgreSQL")
    store = subject.opened()
    each = store.connections_at_most
    if each is None:
        raise NotApplicable("the server sees a pooler's connections, not the workers'")
    most = int(settings["max_connections"])
    room = most - int(settings.get("superuser_reserved_connections", "0")) - CONNECTION_MARGIN
    now = store.clock_now()
    alive = timedelta(seconds=WORKER_ALIVE)
    workers = [w for w in store.worker_list() if w.last_seen and now - w.last_seen <= alive]
    need = len(workers) * each
    if need <= room:
        return []
    return [
        Finding(
            "connections",
            f"{len(workers)} live workers may open {need} connections ({each} each: "
            f"a pool and its listeners), past the {room} the server leaves them "
            f"(max_connections {most}, less those reserved and {CONNECTION_MARGIN} "
            "for everyone else)",
            "raise max_connections, or run fewer worker processes with more --concurrency each",
        )
    ]


# -- how tasks run, and how they are declared --------------------------------------------


def check_leases(subject: Subject) -> list[Finding]:
    """Task names whose recent runs outlast the lease they run under: each run
    lives on keepalives, and a store pause longer than the lease abandons it."""
    return [
        Finding(
            "lease-below-p99",
            f"task {times.name}: its p99 run time ({times.p99:.1f} s over {times.runs} "
            f"recent runs) is longer than its lease ({times.lease:g} s): a store pause "
            "longer than the lease abandons its runs in flight, to start over",
            f"give its workers --lease {_round_up(2 * times.p99)} (twice the p99) or more",
        )
        for times in subject.opened().task_run_times()
        if times.lease is not None and times.p99 > times.lease
    ]


def _round_up(seconds: float) -> str:
    """Whole seconds, up, of a time read to the millisecond: a run of 20 s that
    SQLite's epoch floats make 20.000001 s asks for 40, not 41."""
    return f"{math.ceil(round(seconds, 3))}"


def check_unique_ttl(subject: Subject) -> list[Finding]:
    """Unique tasks that may run longer than their lock lives: the lock
    expires while one runs, and a duplicate can start beside it."""
    if subject.registry is None:
        raise NotApplicable("no App given (--app): its declarations are not checked")
    found = []
    for name, function in sorted(subject.registry.items()):
        unique, timeout = function.config.unique, function.config.timeout
        if unique is None or timeout is None or unique.lock == LockPhase.UNTIL_EXECUTING:
            continue  # a lock given up at start does not outlive the run
        ttl = function.app.unique_ttl if unique.ttl is None else unique.ttl
        if timeout > ttl:
            found.append(
                Finding(
                    "timeout-over-unique-ttl",
                    f"task {name}: its timeout ({timeout:g} s) is longer than its unique "
                    f"lock's ttl ({ttl:g} s): the lock can expire while it runs, and a "
                    "duplicate start beside it",
                    f"declare Unique(..., ttl={_round_up(timeout * 2)}) or more, or a "
                    "shorter timeout",
                )
            )
    return found


CHECKS: tuple[Check, ...] = (
    check_schema,
    check_scheduler,
    check_retention,
    check_primary_keys,
    check_public_schema,
    check_sqlite_durability,
    check_postgres_durability,
    check_postgres_autovacuum,
    check_connections,
    check_leases,
    check_unique_ttl,
)
"""Every check, in the order they are reported."""
