"""PostgreSQL's own limit: pgbench with the benchmark's script, else a psycopg loop.

pgbench is PostgreSQL's own client (C, no Python in the way), so it shows what
the server gives one connection; the psycopg loop is the fallback where pgbench
is not installed, and is labelled as such. Both run the statement prepared
(pgbench ``-M prepared``; psycopg prepares a statement after its fifth run),
as tenure's statements run.
"""

from __future__ import annotations

import glob
import math
import random
import re
import shutil
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path

import psycopg

from benchmarks.suite import BenchError
from benchmarks.suite.limit import ROWS, Rate
from benchmarks.suite.postgres_target import PostgresTarget
from benchmarks.suite.target import Target

SCRIPT = "pgbench_update.sql"
_TPS = re.compile(r"^tps = ([0-9.]+) \(without initial connection time\)", re.MULTILINE)


@contextmanager
def postgres_rates(target: Target) -> Iterator[tuple[str, Rate]]:
    """The table set up in the target's database, and a way to measure it."""
    assert isinstance(target, PostgresTarget)
    target.execute("limit_drop")
    target.execute("limit_setup")
    target.execute("limit_seed", {"rows": ROWS})
    try:
        found = pgbench()
        if found is not None:
            yield "pgbench", lambda size, seconds: _pgbench(found, target.url, size, seconds)
        else:
            yield "psycopg loop", lambda size, seconds: _loop(target, size, seconds)
    finally:
        target.execute("limit_drop")


def pgbench() -> Path | None:
    """pgbench on the PATH, else the newest in Debian's PostgreSQL directories."""
    on_path = shutil.which("pgbench")
    if on_path:
        return Path(on_path)
    installed = sorted(glob.glob("/usr/lib/postgresql/*/bin/pgbench"), key=_version)
    return Path(installed[-1]) if installed else None


def _version(path: str) -> int:
    part = Path(path).parts[-3]
    return int(part) if part.isdigit() else 0


def _pgbench(executable: Path, url: str, size: int, seconds: float) -> float:
    """Transactions per second of one pgbench client for ``seconds`` (at least 1)."""
    options = [*duration(seconds), "-D", f"rows={ROWS}", "-D", f"size={size}"]
    match = _TPS.search(run_pgbench(executable, SCRIPT, url, options))
    if match is None:
        raise BenchError("pgbench printed no tps line")
    return float(match[1])


def duration(seconds: float) -> list[str]:
    """pgbench's options to run for ``seconds``, rounded up to whole ones (at least 1)."""
    return ["-T", str(max(1, math.ceil(seconds)))]


def run_pgbench(executable: Path, script: str, url: str, options: Sequence[str]) -> str:
    """What one pgbench client printed, replaying this package's ``script`` on
    ``url`` with its statements prepared, and ``options``."""
    with resources.as_file(resources.files("benchmarks.suite").joinpath(script)) as path:
        return run_pgbench_file(executable, path, url, options)


def run_pgbench_file(
    executable: Path, script: Path, url: str, options: Sequence[str], clients: int = 1
) -> str:
    """:func:`run_pgbench` with a script file of the caller's, and ``clients``
    clients at once (a thread each)."""
    threads = ["-c", str(clients), "-j", str(clients)]
    argv = [str(executable), "-n", "-M", "prepared", *threads, *options]
    # The argv is pgbench, fixed options, a script of ours and the benchmark's database.
    done = subprocess.run(  # noqa: S603
        [*argv, "-f", str(script), url],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if done.returncode != 0:
        raise BenchError(f"pgbench failed ({done.returncode}): {done.stderr.strip()[-1000:]}")
    return done.stdout


def _loop(target: PostgresTarget, size: int, seconds: float) -> float:
    """Transactions per second of one psycopg connection for ``seconds``."""
    update = target.Q["limit_update"]
    picks = random.Random(size)
    done = 0
    with psycopg.connect(target.url, autocommit=True) as conn:
        started = time.perf_counter()
        while time.perf_counter() - started < seconds:
            first = picks.randint(1, ROWS - size + 1)
            conn.execute(update, {"first": first, "last": first + size - 1}).fetchall()
            done += 1
        return done / (time.perf_counter() - started)
