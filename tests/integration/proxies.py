"""A TCP proxy between tenure and a real PostgreSQL server, for the tests that
break the network in between (an answer lost after a commit, a cut that holds
every byte): each connection is accepted, paired with one to the server, and
handed to :meth:`Proxy.pair`, which a test's proxy defines."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable
from urllib.parse import urlsplit, urlunsplit


class Proxy:
    """Listens on a free loopback port and connects each client to ``url``'s server."""

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        self.upstream = (parts.hostname or "127.0.0.1", parts.port or 5432)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.ends: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def url(self, url: str, query: str | None = None) -> str:
        """``url``, through this proxy."""
        parts = urlsplit(url)
        through = parts._replace(netloc=f"{parts.username}@127.0.0.1:{self.port}")
        return urlunsplit(through if query is None else through._replace(query=query))

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            server = socket.create_connection(self.upstream)
            self.ends += [client, server]
            self.pair(client, server)

    def pair(self, client: socket.socket, server: socket.socket) -> None:
        """Start passing bytes between ``client`` and ``server``."""
        raise NotImplementedError

    def close(self) -> None:
        self.listener.close()
        for end in self.ends:
            hang_up(end)


def start(target: Callable[..., object], *args: object) -> None:
    """Run ``target(*args)`` on a daemon thread (one per direction of a pair)."""
    threading.Thread(target=target, args=args, daemon=True).start()


def hang_up(end: socket.socket) -> None:
    """Close both ways at once (a plain close would wait for the other thread's recv)."""
    with contextlib.suppress(OSError):  # the other side hung up first
        end.shutdown(socket.SHUT_RDWR)
    end.close()


def recv(end: socket.socket) -> bytes:
    try:
        return end.recv(65536)
    except OSError:
        return b""
