"""Poison tasks: tasks that kill or wedge the process running them, for the
poison scenario (``tenure worker --pool processes``, where an execution has a
child process of its own to lose).

Each attempt appends one ``poison`` record (task, attempt, token, kind, pid) as
it begins, then does what its ``kind`` says:

- ``raise``: raises;
- ``exit``: ``os._exit(1)``, the child process ends at once;
- ``segv``: reads address 0 (``ctypes.string_at(0)``), a segmentation fault;
- ``memory``: exceeds a memory limit. The worker has none of its own, so the
  task sets one on its process (``RLIMIT_AS``, 64 MiB above what it maps now)
  and allocates past it: the allocation fails (``MemoryError``) and the attempt
  fails; the limit is lifted again before the attempt ends, for the next task
  of that child;
- ``hang``: ignores SIGTERM (libc's ``signal``, which works from any thread)
  and waits forever: only its timeout ends it, by killing its child process.

Every death must count as an attempt, and each task must stop at its maximum.
"""

from __future__ import annotations

import ctypes
import os
import resource
import signal
import threading

import tenure
from chaos.journal import of_process
from tenure.function import TaskFunction
from tenure.retry import Backoff

NAME = "chaos.poison"
KINDS = ("raise", "exit", "segv", "memory", "hang")
MAX_ATTEMPTS = 3
TIMEOUT = 1.0
"""Seconds a poison attempt may run: the hanging one is killed after it."""
HEADROOM = 64 * 1024 * 1024
"""Bytes the memory-hungry attempt may map beyond what it maps already."""
BACKOFF = Backoff(base=0.05, maximum=0.2)

Poison = TaskFunction[[str], None]


class PoisonError(Exception):
    """What the ``raise`` kind raises."""


def poison(kind: str) -> None:
    """Journal the attempt, then die, fail or hang as ``kind`` says."""
    current = tenure.current()
    of_process("probe").write(
        "poison",
        task=current.task.id,
        attempt=current.attempt,
        token=current.fencing_token,
        kind=kind,
        pid=os.getpid(),
    )
    if kind == "exit":
        os._exit(1)
    elif kind == "segv":
        ctypes.string_at(0)
    elif kind == "memory":
        _exceed_memory()
    elif kind == "hang":
        ctypes.CDLL(None).signal(signal.SIGTERM, ctypes.c_void_p(1))  # SIG_IGN
        threading.Event().wait()
    raise PoisonError(f"poison task of kind {kind!r}, attempt {current.attempt}")


def _exceed_memory() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        mapped = int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    resource.setrlimit(resource.RLIMIT_AS, (mapped + HEADROOM, hard))
    try:
        bytearray(4 * HEADROOM)
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def declare(on: tenure.App) -> Poison:
    """Declare the poison task on the App ``on`` (the probe's)."""
    function: Poison = on.task(
        name=NAME, topic="chaos", retries=MAX_ATTEMPTS - 1, timeout=TIMEOUT, backoff=BACKOFF
    )(poison)
    return function
