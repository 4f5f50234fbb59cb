"""What the numbers were measured on: they mean little without the machine."""

from __future__ import annotations

import os
import platform
import sqlite3
import statistics
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from tenure import __version__


def describe() -> dict[str, Any]:
    """CPU, cores, memory, system and the versions of what takes part."""
    return {
        "cpu": cpu_model(),
        "cores": os.cpu_count(),
        "ram_gib": round(ram_bytes() / 2**30, 1),
        "system": platform.platform(),
        "python": f"{platform.python_implementation()} {platform.python_version()}",
        "sqlite": sqlite3.sqlite_version,
        "psycopg": _installed("psycopg"),
        "tenure": __version__,
        "load_average": list(os.getloadavg()),
        "fsync_ms": fsync_ms(),
    }


def summary(machine: dict[str, Any], postgres: str | None) -> str:
    """One line for the report's caption."""
    parts = [
        f"{machine['cpu']}, {machine['cores']} cores, {machine['ram_gib']:g} GiB RAM",
        machine["python"],
        f"SQLite {machine['sqlite']}",
    ]
    if postgres:
        parts.append(f"PostgreSQL {postgres}")
    load = ", ".join(f"{value:.2f}" for value in machine["load_average"])
    parts.append(f"at start: load average {load}, fsync {machine['fsync_ms']:.2f} ms")
    return "; ".join(parts)


def fsync_ms(samples: int = 50) -> float:
    """Median milliseconds of one 4 KiB write and fsync in the temporary directory.

    Every commit of both stores waits for one, so it bounds the one-by-one
    numbers; it moves a lot on a shared machine (0.2 ms idle, 4 ms while
    another test suite writes), so it is measured with every run.
    """
    taken = []
    with tempfile.TemporaryFile() as probe:
        for _ in range(samples):
            probe.write(b"x" * 4096)
            probe.flush()
            started = time.perf_counter()
            os.fsync(probe.fileno())
            taken.append(time.perf_counter() - started)
    return statistics.median(taken) * 1000


def cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or platform.machine() or "unknown CPU"


def ram_bytes() -> int:
    return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def _installed(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None
