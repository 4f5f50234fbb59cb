"""A private PostgreSQL 15 cluster, made for one run and removed after it.

Scenarios that crash the server (``pg_ctl restart -m immediate``) must never
touch the machine's shared server, where other work goes on. So the cluster is
created with Debian's postgresql-15 binaries (``initdb``, ``pg_ctl`` under
``/usr/lib/postgresql/15/bin``) in a temporary folder, listens on a free port of
127.0.0.1 only (its socket in that folder), keeps ``fsync`` and
``synchronous_commit`` on (durability is what is under test), and is stopped
and deleted on leaving the ``with`` block, also when the block fails.

The server refuses to run as root: when this process is root, every binary
runs as the ``postgres`` user (``runuser``), who owns the folder.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Literal

from chaos import CannotRunHere, ChaosError

BIN = Path("/usr/lib/postgresql/15/bin")
INSTALL = "apt-get install postgresql-15"
USER = "postgres"
TIMEOUT = 60
"""Seconds ``pg_ctl`` may wait for the server to start or stop."""
Mode = Literal["smart", "fast", "immediate"]

SETTINGS = """\
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{sockets}'
fsync = on
synchronous_commit = on
full_page_writes = on
max_connections = 100
shared_buffers = 32MB
"""


class ClusterUnavailable(CannotRunHere):
    """No private cluster can be made here; the message is one line saying why."""


def binaries(folder: Path = BIN) -> Path:
    """``folder`` if it holds ``initdb`` and ``pg_ctl``; else ClusterUnavailable."""
    missing = [name for name in ("initdb", "pg_ctl") if not os.access(folder / name, os.X_OK)]
    if missing:
        raise ClusterUnavailable(
            f"PostgreSQL 15 binaries not found ({', '.join(missing)} in {folder}): {INSTALL}"
        )
    return folder


def free_port() -> int:
    """A TCP port of 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class PrivateCluster:
    """``with PrivateCluster() as cluster:`` a running server at ``cluster.url()``."""

    def __init__(self, folder: Path = BIN) -> None:
        self.bin = binaries(folder)
        self.root: Path | None = None
        self.port = 0
        self.running = False

    def __enter__(self) -> PrivateCluster:
        try:
            self._create()
            self._start_on_a_free_port()
        except BaseException:
            self.remove()
            raise
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.remove()

    @property
    def data(self) -> Path:
        if self.root is None:
            raise ChaosError("the cluster was not created")
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.data.parent / "server.log"

    def url(self, dbname: str = "postgres") -> str:
        """The URL of database ``dbname`` (trust authentication, loopback only)."""
        return f"postgresql://{USER}@127.0.0.1:{self.port}/{dbname}"

    # -- life --------------------------------------------------------------------

    def _create(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="tenure-chaos-pg-"))
        if os.geteuid() == 0:
            account = _account()
            os.chown(self.root, account.pw_uid, account.pw_gid)
        self._run(
            "initdb", "-D", str(self.data), "-U", USER, "-A", "trust", "-E", "UTF8", "--locale=C"
        )
        with (self.data / "postgresql.conf").open("a") as conf:
            conf.write("\ninclude 'chaos.conf'\n")

    def _start_on_a_free_port(self, tries: int = 3) -> None:
        for attempt in range(tries):
            self.port = free_port()
            (self.data / "chaos.conf").write_text(
                SETTINGS.format(port=self.port, sockets=self.data.parent)
            )
            try:
                self.start()
                return
            except ChaosError:
                if attempt == tries - 1:  # another process took the port meanwhile
                    raise

    def start(self) -> None:
        """Start the server; return once it accepts connections."""
        self._pg_ctl("start")
        self.running = True
        self.wait_ready()

    def stop(self, mode: Mode = "fast") -> None:
        """Stop the server (``immediate``: a crash, recovered at the next start)."""
        self._pg_ctl("stop", "-m", mode)
        self.running = False

    def restart(self, mode: Mode) -> None:
        """``pg_ctl restart -m mode``; return once the server accepts connections."""
        self._pg_ctl("restart", "-m", mode)
        self.wait_ready()

    def wait_ready(self, timeout: float = TIMEOUT) -> None:
        """Block until a connection succeeds (``pg_ctl -w`` waited already; this
        checks it from the client's side)."""
        import psycopg  # noqa: PLC0415 - needed only with a cluster

        deadline = time.monotonic() + timeout
        while True:
            try:
                with psycopg.connect(self.url(), connect_timeout=2) as conn:
                    conn.execute("SELECT 1")
                return
            except psycopg.OperationalError as exc:
                if time.monotonic() > deadline:
                    raise ChaosError(f"the private cluster never came up: {exc}") from None
                time.sleep(0.05)

    def create_database(self, dbname: str) -> str:
        """Create database ``dbname`` (tables never go in ``postgres``); its URL."""
        import psycopg  # noqa: PLC0415
        from psycopg import sql  # noqa: PLC0415

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
        return self.url(dbname)

    def remove(self) -> None:
        """Stop the server if it runs (at once: nothing in it is kept) and delete
        the folder."""
        if self.root is None:
            return
        if self.running or (self.data / "postmaster.pid").exists():
            with contextlib.suppress(ChaosError):
                self.stop("immediate")
        shutil.rmtree(self.root, ignore_errors=True)
        self.root = None

    # -- running the binaries ------------------------------------------------------

    def _pg_ctl(self, action: str, *options: str) -> None:
        self._run(
            "pg_ctl",
            action,
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-w",
            "-t",
            str(TIMEOUT),
            *options,
        )

    def _run(self, binary: str, *args: str) -> None:
        argv = [str(self.bin / binary), *args]
        if os.geteuid() == 0:
            argv = ["runuser", "-u", USER, "--", *argv]
        # The argv is a PostgreSQL binary of ``self.bin`` with paths we made.
        done = subprocess.run(  # noqa: S603
            argv,
            cwd=self.data.parent,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=TIMEOUT + 30,
            check=False,
        )
        if done.returncode != 0:
            said = (done.stderr or done.stdout).strip().splitlines()
            tail = self.log.read_text(errors="replace")[-1500:] if self.log.exists() else ""
            raise ChaosError(
                f"{binary} {args[0]} failed ({done.returncode}): "
                f"{said[-1] if said else 'no output'}\n{tail}"
            )


def _account() -> pwd.struct_passwd:
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        raise ClusterUnavailable(
            f"running as root, and there is no {USER} user to run the server as: {INSTALL}"
        ) from None
