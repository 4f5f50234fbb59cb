"""Worker hosts on a network of their own, for the partition scenario: each a
Linux network namespace, so one of them can be cut off from the store while
its worker process goes on running.

:class:`Network` makes a bridge in this namespace, with one address of a
private /24 (the store's), and per host a namespace (``ip netns add``) joined
to the bridge by a veth pair, with an address of the same /24. Cutting a host
off sets its end of the pair down inside its namespace: its packets go nowhere,
and the store sees nothing of it; healing sets it up again. Everything is
removed on leaving the ``with`` block, also when the block fails.

A process runs in a host with ``ip netns exec NAME``, which enters the
namespace and execs the command: the process the harness started is the
worker itself, its pid the worker's, and the harness's signals reach it
(:func:`inside` checks it).

:class:`NetworkCluster` is a private PostgreSQL cluster
(:class:`~chaos.cluster.PrivateCluster`) that also listens on the bridge's
address and trusts the hosts' /24, so every host reaches it.

Making namespaces needs root and the ``ip`` command (Debian: iproute2);
:class:`NetnsUnavailable` says in one line which is missing.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from types import TracebackType

from chaos import CannotRunHere
from chaos.cluster import USER, PrivateCluster
from chaos.harness import Placement

TIMEOUT = 20


class NetnsUnavailable(CannotRunHere):
    """Network namespaces cannot be made here; the message says why in one line."""


def _ip(*args: str) -> None:
    # The argv is the ip command with names and addresses this module made.
    done = subprocess.run(  # noqa: S603
        ["ip", *args],  # noqa: S607 - ip from PATH, as an administrator runs it
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip() or "no output"
        raise NetnsUnavailable(f"ip {' '.join(args)} failed: {said}")


class Network:
    """``with Network(hosts) as net:`` ``hosts`` namespaces on one bridge."""

    def __init__(self, hosts: int) -> None:
        if os.geteuid() != 0:
            raise NetnsUnavailable("network namespaces need root (ip netns add)")
        if shutil.which("ip") is None:
            raise NetnsUnavailable("no ip command for network namespaces: apt-get install iproute2")
        tag = os.getpid() % 100_000
        self.prefix = f"10.{100 + tag % 100}.{tag // 100 % 250}"
        self.bridge = f"tnb{tag}"
        self.hosts = [f"tenure-chaos-{tag}-{k}" for k in range(hosts)]
        self._ends = [(f"tnh{tag}x{k}", f"tnn{tag}x{k}") for k in range(hosts)]
        self._made: list[tuple[str, ...]] = []

    @property
    def address(self) -> str:
        """The store's address on the bridge, which every host reaches."""
        return f"{self.prefix}.1"

    def __enter__(self) -> Network:
        try:
            self._make()
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

    def _make(self) -> None:
        _ip("link", "add", self.bridge, "type", "bridge")
        self._made.append(("link", "del", self.bridge))
        _ip("addr", "add", f"{self.address}/24", "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for number, (name, (outer, inner)) in enumerate(zip(self.hosts, self._ends, strict=True)):
            _ip("netns", "add", name)
            self._made.append(("netns", "del", name))  # takes its end of the pair along
            _ip("link", "add", outer, "type", "veth", "peer", "name", inner, "netns", name)
            self._made.append(("link", "del", outer))
            _ip("link", "set", outer, "master", self.bridge)
            _ip("link", "set", outer, "up")
            _ip("-n", name, "addr", "add", f"{self.prefix}.{10 + number}/24", "dev", inner)
            _ip("-n", name, "link", "set", "lo", "up")
            _ip("-n", name, "link", "set", inner, "up")

    def remove(self) -> None:
        """Delete every namespace, pair and the bridge this network made."""
        while self._made:
            undo = self._made.pop()
            try:
                _ip(*undo)
            except NetnsUnavailable:
                continue  # already gone (a namespace took its pair along)

    def place(self, host: int) -> Placement:
        """Where a process of host ``host`` runs: in its namespace."""
        return Placement(prefix=("ip", "netns", "exec", self.hosts[host]))

    def cut(self, host: int) -> None:
        """Cut host ``host`` off: its end of the pair down, inside its namespace."""
        _ip("-n", self.hosts[host], "link", "set", self._ends[host][1], "down")

    def heal(self, host: int) -> None:
        _ip("-n", self.hosts[host], "link", "set", self._ends[host][1], "up")

    def inside(self, pid: int, host: int) -> bool:
        """Whether process ``pid`` itself runs in host ``host``'s namespace."""
        try:
            mine = os.stat(f"/proc/{pid}/ns/net").st_ino
        except OSError:
            return False
        return mine == os.stat(Path("/run/netns") / self.hosts[host]).st_ino


class NetworkCluster(PrivateCluster):
    """A private cluster that listens on ``network``'s bridge address too."""

    def __init__(self, network: Network) -> None:
        super().__init__()
        self.network = network

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{USER}@{self.network.address}:{self.port}/{dbname}"

    def start(self) -> None:
        conf = self.data / "chaos.conf"
        listen = f"listen_addresses = '127.0.0.1,{self.network.address}'\n"
        if listen not in conf.read_text():
            with conf.open("a") as more:
                more.write(listen)
        hba = self.data / "pg_hba.conf"
        trusted = f"host all all {self.network.prefix}.0/24 trust\n"
        if trusted not in hba.read_text():
            with hba.open("a") as more:
                more.write(trusted)
        super().start()
