"""The sqlite-faults scenario (SQLite only, see :mod:`chaos.scenarios`): the disk
that holds the database fills up, then the database file turns read-only,
while producers enqueue and workers drain.

The database lives on a small tmpfs of its own (:func:`small_disk`), mounted for
the run and unmounted after it, even when the run fails. Disk full: a filler
file takes every free block for a while, then goes. Read-only: the database
file is made immutable (``chattr +i``: even root may not open it for writing),
and a producer started meanwhile, whose connections open the file anew, must
be refused, then acknowledged once the file is writable again. Throughout,
every failed enqueue must raise a tenure error to its caller (a producer stops
at anything else, which the checker reports), workers must survive, nothing
acknowledged may be lost, the queue must drain once the disk is writable
again, and ``PRAGMA integrity_check`` must say ``ok`` after each fault and at
the end (the harness's fault log gets an ``integrity``
record each time; a database that is not ok ends the run with
:class:`~chaos.ChaosError`).

Mounting needs root: where it is refused, :class:`DiskUnavailable` says why in
one line, and the tests skip.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from chaos import CannotRunHere, ChaosError
from chaos.harness import Harness
from chaos.journal import SUFFIX, read_folder
from chaos.scenarios.base import Context, Plan, Scenario, tasks
from chaos.verdict import Figures

__all__ = [
    "SCENARIO",
    "SQLITE_FAULTS",
    "DiskUnavailable",
    "Refusals",
    "figures",
    "fill",
    "integrity",
    "integrity_results",
    "on_small_disk",
    "refusals",
    "small_disk",
    "sqlite_faults",
]

DISK_SIZE = "64m"
"""The tmpfs's size: far more than a quick run's database needs, little to fill."""
FILL_CHUNK = 1 << 20


class DiskUnavailable(CannotRunHere):
    """A small disk could not be mounted here (not root, or mounting forbidden)."""


@contextmanager
def small_disk(folder: Path, size: str = DISK_SIZE) -> Iterator[Path]:
    """A tmpfs of ``size`` mounted on ``folder / 'disk'``; unmounted after,
    whatever happened (lazily if something still holds it)."""
    mount = folder.resolve() / "disk"
    mount.mkdir(parents=True, exist_ok=True)
    made = _command("mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(mount))
    if made.returncode != 0:
        reason = made.stderr.strip().splitlines()[:1] or [f"exit code {made.returncode}"]
        raise DiskUnavailable(f"cannot mount a tmpfs for the database: {reason[0]}")
    try:
        yield mount
    finally:
        for path in mount.glob("*"):
            _command("chattr", "-i", str(path))
        if _command("umount", str(mount)).returncode != 0:
            _command("umount", "-l", str(mount))


@contextmanager
def on_small_disk(_: str, folder: Path, __: str | None) -> Iterator[tuple[str, None]]:
    """The scenario's target: the database on a small disk of its own, to fill."""
    with small_disk(folder) as disk:
        yield f"sqlite:///{disk / 'chaos.db'}", None


def _command(*argv: str) -> subprocess.CompletedProcess[str]:
    try:
        # Fixed programs (mount, umount, chattr) with the scenario's own paths.
        return subprocess.run(argv, capture_output=True, text=True, timeout=30, check=False)  # noqa: S603
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(argv, 1, "", str(exc))


def database(harness: Harness) -> Path:
    """The database file of the scenario's ``sqlite:///`` URL."""
    return Path(harness.setup.url.removeprefix("sqlite:///"))


def fill(disk: Path) -> Path:
    """A filler file on ``disk`` that takes every free block; returns its path."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT, 0o600)
    chunk = b"\0" * FILL_CHUNK
    try:
        while True:
            try:
                os.write(fd, chunk)
            except OSError as exc:
                if exc.errno != errno.ENOSPC:
                    raise
                if len(chunk) == 1:
                    break
                chunk = chunk[: len(chunk) // 2]  # the last free blocks, too
    finally:
        os.close(fd)
    return filler


def integrity(path: Path) -> str:
    """``PRAGMA integrity_check`` of the database, on a connection of its own."""
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True, timeout=30) as conn:
            rows = conn.execute("PRAGMA integrity_check").fetchall()
    except sqlite3.Error as exc:
        return f"unreadable: {exc}"
    return "; ".join(str(row[0]) for row in rows)


def _checked(harness: Harness, when: str) -> None:
    found = integrity(database(harness))
    harness.faults.write("integrity", when=when, result=found)
    if found != "ok":
        raise ChaosError(f"PRAGMA integrity_check {when}: {found}")


def sqlite_faults(harness: Harness, context: Context) -> None:
    plan = context.plan
    stop = harness.setup.folder / "stop-producers"
    harness.produce(replace(w, until=str(stop)) for w in plan.workloads)
    try:
        for _ in range(plan.faults):
            context.interval()
            _disk_full(harness, context)
            context.interval()
            _read_only(harness, context)
    finally:
        stop.touch()
    harness.wait_for(
        lambda: harness.producers_done() and harness.unfinished() == 0,
        "the queue drained after the faults",
        plan.drain,
        fail=False,
    )
    _checked(harness, "after the drain")


def _disk_full(harness: Harness, context: Context) -> None:
    disk = database(harness).parent
    harness.faults.write("disk-full")
    filler = fill(disk)
    context.wait(HOLD)
    filler.unlink()
    harness.faults.write("disk-free")
    _checked(harness, "after the disk was full")


def _read_only(harness: Harness, context: Context) -> None:
    """The database file immutable while a new producer starts: its enqueues
    must be refused with a tenure error until the file is writable again, and
    then acknowledged (its store must not stay read-only)."""
    path = database(harness)
    late = harness.setup.folder / f"stop-late-{context.rng.randrange(1 << 30)}"
    made = _command("chattr", "+i", str(path))
    if made.returncode != 0:  # no chattr here, or a filesystem without the flag
        raise DiskUnavailable(f"cannot make the database read-only: {made.stderr.strip()}")
    harness.faults.write("read-only")
    try:
        [child] = harness.produce([tasks(LATE, 99, durations=(0.0, 0.01), until=str(late))])
        harness.wait_for(
            lambda: refusals(harness.setup.journals).read_only > 0,
            "a producer refused by the read-only database",
            timeout=20,
        )
    finally:
        _command("chattr", "-i", str(path))
        harness.faults.write("writable")
    try:
        harness.wait_for(
            lambda: _acknowledged(harness.setup.journals, child.process.pid) > 0,
            "the refused producer's enqueues acknowledged once the file was writable",
            timeout=20,
        )
    finally:
        late.touch()
    _checked(harness, "after the file was read-only")


def _acknowledged(journals: Path, pid: int) -> int:
    """The enqueue calls that returned to the producer of ``pid``."""
    calls = 0
    for path in journals.glob(f"producer-{pid}-*{SUFFIX}"):
        calls += sum(1 for line in path.read_text().splitlines() if '"k":"enq"' in line)
    return calls


@dataclass(frozen=True, slots=True)
class Refusals:
    """The enqueues producers saw refused, by cause."""

    disk_full: int = 0
    read_only: int = 0
    other: int = 0
    kinds: frozenset[str] = frozenset()
    """The exception types the producers caught."""


def refusals(journals: Path) -> Refusals:
    """What the producers' ``enq-error`` records say."""
    full = read_only = other = 0
    kinds: set[str] = set()
    for record in read_folder(journals).of_kind("enq-error"):
        error = str(record.get("error", ""))
        kinds.add(error.split(":", 1)[0])
        if "disk is full" in error:
            full += 1
        elif "readonly" in error or "read-only" in error:
            read_only += 1
        else:
            other += 1
    return Refusals(full, read_only, other, frozenset(kinds))


def integrity_results(journals: Path) -> list[tuple[str, str]]:
    """(when, result) of every integrity check the scenario made."""
    found = read_folder(journals).of_kind("integrity")
    return [(str(r.get("when")), str(r.get("result"))) for r in found]


HOLD = 3.0
"""Seconds the disk stays full."""
LATE = 20
"""Tasks of the producer started while the database file is read-only."""
RATE = {"rate": 30.0, "batch": 5, "durations": (0.05, 0.3)}
"""A backlog builds up: workers are in the middle of tasks when the disk fills."""

SQLITE_FAULTS = {
    "full": Plan(
        workers=4,
        concurrency=4,
        workloads=(tasks(100_000, 41, **RATE), tasks(100_000, 42, **RATE)),
        faults=3,
        every=(3.0, 5.0),
    ),
    "quick": Plan(
        workers=3,
        concurrency=4,
        workloads=(tasks(2000, 41, **RATE), tasks(2000, 42, **RATE)),
        faults=1,
        every=(1.5, 2.0),
        drain=120,
    ),
}


def figures(journals: Path, _: Figures) -> str:
    """The scenario's own figures, for its line: the refused enqueues by cause
    and the exception types their callers caught, and the integrity checks."""
    seen = refusals(journals)
    checks = integrity_results(journals)
    ok = sum(1 for _, result in checks if result == "ok")
    return (
        f" refused disk-full {seen.disk_full} read-only {seen.read_only} other {seen.other}"
        f" as {','.join(sorted(seen.kinds)) or '-'} integrity ok {ok}/{len(checks)}"
    )


SCENARIO = Scenario(
    "sqlite-faults",
    SQLITE_FAULTS,
    sqlite_faults,
    stores=("sqlite",),
    target=on_small_disk,
    figures=figures,
)
