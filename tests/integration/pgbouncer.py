"""A private PgBouncer (Debian's ``pgbouncer``) in transaction pooling mode, on
a free loopback port in front of the test server, for the tests that run tenure
through one.

It serves every database of the server as the URL's user, without a password
(``auth_type = trust``), and lends each server session to a client for one
transaction (``pool_mode = transaction``) from a pool of a few sessions per
database, so that clients take turns on them. PgBouncer refuses to run as root:
as root it is started as the server's ``postgres`` user (``-u``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

POOL_SIZE = 3
"""Server sessions per database and user: fewer than the clients of a test, so
that a client's transactions run on one session, then another."""
START_TIMEOUT = 15.0

CONFIG = """\
[databases]
* = host={host} port={port}

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = {listen}
unix_socket_dir =
auth_type = trust
auth_file = {directory}/users.txt
pool_mode = transaction
default_pool_size = {pool_size}
max_client_conn = 500
logfile =
pidfile =
"""


class MissingPgBouncer(Exception):
    """No pgbouncer program on this machine."""


def program() -> str:
    """The pgbouncer program (Debian puts it in /usr/sbin)."""
    found = shutil.which("pgbouncer") or shutil.which("pgbouncer", path="/usr/sbin:/usr/bin")
    if found is None:
        raise MissingPgBouncer("pgbouncer is not installed (apt-get install -y pgbouncer)")
    return found


class PgBouncer:
    """A pgbouncer process in front of ``server_url``'s server."""

    def __init__(self, server_url: str, pool_size: int = POOL_SIZE) -> None:
        parts = urlsplit(server_url)
        self.user = parts.username or "postgres"
        self.directory = Path(tempfile.mkdtemp(prefix="tenure-pgbouncer-"))
        self.directory.chmod(0o755)  # readable by the postgres user it runs as
        (self.directory / "users.txt").write_text(f'"{self.user}" ""\n')
        self.port = _free_port()
        config = CONFIG.format(
            host=parts.hostname or "127.0.0.1",
            port=parts.port or 5432,
            listen=self.port,
            directory=self.directory,
            pool_size=pool_size,
        )
        ini = self.directory / "pgbouncer.ini"
        ini.write_text(config)
        for path in self.directory.iterdir():
            path.chmod(0o644)
        argv = [program(), str(ini)]
        if os.geteuid() == 0:
            argv[1:1] = ["-u", "postgres"]
        self.log = open(self.directory / "stderr.log", "w+")  # noqa: SIM115 - closed in close()
        self.process = subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT
        )
        self._wait_listening()

    def url(self, server_url: str) -> str:
        """``server_url`` (any database of the server), through this pgbouncer."""
        parts = urlsplit(server_url)
        return urlunsplit(parts._replace(netloc=f"{self.user}@127.0.0.1:{self.port}"))

    def _wait_listening(self) -> None:
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"pgbouncer exited at start:\n{self.output()}")
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                time.sleep(0.05)  # its port opens within milliseconds of starting
        self.close()
        raise RuntimeError(f"pgbouncer did not listen within {START_TIMEOUT} s:\n{self.output()}")

    def output(self) -> str:
        self.log.flush()
        return (self.directory / "stderr.log").read_text()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.log.close()
        shutil.rmtree(self.directory, ignore_errors=True)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
