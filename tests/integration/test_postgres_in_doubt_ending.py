"""An ending whose COMMIT succeeded but whose answer never reached the worker
(the connection died in between) is re-read, never blindly redone, and is
reported as what it is: accepted.

A TCP proxy between the store and a real server lets every byte through until
it sees the completion's statement go by; then it keeps the server's answer to
it (the server has committed by the time it says ReadyForQuery) and closes the
worker's side instead. The worker's completer gets a broken connection, writes
the same ending again, fenced by its lease, and the store refuses it (the task
is done already). The task must end done exactly once, and the worker must tell
it as a success (its ``succeeded`` hook), not as a lost lease.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from tenure import Status
from tenure.hooks import Hooks
from tenure.retry import Backoff
from tenure.store import NewTask, ReserveParams, open_store
from tenure.store.postgres.backend import PostgresStore
from tenure.task import Lease
from tenure.worker.completer import Completer
from tenure.worker.held import Held, Holdings
from tenure.worker.runner import Succeeded
from tenure.worker.telling import Teller
from tests.integration.proxies import Proxy, hang_up, recv, start

MARKER = b"status = 'done'"
"""A piece of the completion's statement, as the worker sends it."""


class CutAfterCommit(Proxy):
    """A proxy to ``upstream`` that, once :meth:`arm`\\ ed, swallows the
    server's whole answer to the next statement containing :data:`MARKER` (up
    to its ReadyForQuery, sent after the COMMIT) and closes the client's
    connection instead."""

    def __init__(self, url: str) -> None:
        self.armed = threading.Event()
        self.cut = threading.Event()
        super().__init__(url)

    def pair(self, client: socket.socket, server: socket.socket) -> None:
        marked = threading.Event()
        start(self._up, client, server, marked)
        start(self._down, server, client, marked)

    def _up(self, client: socket.socket, server: socket.socket, marked: threading.Event) -> None:
        while data := recv(client):
            if self.armed.is_set() and MARKER in data:
                self.armed.clear()
                marked.set()
            server.sendall(data)

    def _down(self, server: socket.socket, client: socket.socket, marked: threading.Event) -> None:
        buffer = b""
        while data := recv(server):
            buffer += data
            while len(buffer) >= 5 and len(buffer) >= 1 + int.from_bytes(buffer[1:5], "big"):
                size = 1 + int.from_bytes(buffer[1:5], "big")
                message, buffer = buffer[:size], buffer[size:]
                if not marked.is_set():
                    client.sendall(message)
                elif message[:1] == b"Z":  # committed: the answer is lost on its way
                    for end in (client, server):
                        hang_up(end)
                    self.cut.set()
                    return


@pytest.fixture
def proxy(blank_postgres_url: str) -> Iterator[CutAfterCommit]:
    made = CutAfterCommit(blank_postgres_url)
    yield made
    made.close()


def test_an_ending_committed_but_unheard_is_told_as_accepted(
    blank_postgres_url: str, proxy: CutAfterCommit
) -> None:
    through = proxy.url(blank_postgres_url, "sslmode=disable&gssencmode=disable")
    with open_store(blank_postgres_url) as direct:
        direct.task_create(NewTask(topic="t", name="n"))
        [task] = direct.task_reserve(ReserveParams(owner="w:1:x", topics=["t"]))
    told: list[str] = []
    hooks = Hooks()
    for kind in ("succeeded", "failed", "retrying", "cancelled"):
        hooks.add(kind, lambda outcome, kind=kind: told.append(kind))
    store = PostgresStore(through)
    teller = Teller(store, hooks)
    holdings = Holdings()
    completer = Completer(store, holdings, lambda _: Backoff(), teller=teller)
    teller.start()
    completer.start()
    try:
        held = Held(task, Lease(task.id, "w:1:x", task.lease_token or 0))
        holdings.add(held)
        holdings.end(held)
        proxy.armed.set()
        completer.put(held, Succeeded("result"))
        completer.close()
        teller.close()
    finally:
        store.close()

    assert proxy.cut.is_set(), "the completion's answer was never cut off"
    with open_store(blank_postgres_url) as direct:
        done = direct.task_get(task.id)
        events = [e for e in direct.event_page(limit=100).events if e.task_id == task.id]
    assert done is not None and done.status is Status.DONE
    assert sum(1 for e in events if e.to_status is Status.DONE) == 1
    assert told == ["succeeded"]
