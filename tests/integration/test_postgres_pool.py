"""The store's pool lends the connection returned last, and its connections
keep the cursor of a one-task insert.

A process that enqueues one task at a time then keeps writing on one warm
connection instead of on each of its connections in turn, and the connections
it no longer needs stay idle, so that the pool's ``max_idle`` can close them.
"""

from __future__ import annotations

import contextlib
import itertools
import socket
import threading
import time
from collections.abc import Iterator

import pytest
from psycopg.rows import dict_row, tuple_row

from tenure import DuplicateTask
from tenure.store import NewTask, Store
from tenure.store.postgres.driver import configure, connection_kwargs
from tenure.store.postgres.pooling import RECONNECT_ROUND, RETRY_MAX, Pool, PooledConnection
from tests.integration.proxies import Proxy, hang_up, recv, start


@pytest.fixture
def pool(postgres_url: str) -> Iterator[Pool]:
    made = Pool(
        postgres_url,
        kwargs=connection_kwargs(postgres_url, "test"),
        configure=configure,
        min_size=3,
        max_size=3,
        open=False,
    )
    made.open(wait=True, timeout=30)
    try:
        yield made
    finally:
        made.close()


def test_lends_the_connection_returned_last(pool: Pool) -> None:
    first, second, third = (pool.getconn() for _ in range(3))
    for conn in (first, second, third):
        pool.putconn(conn)
    for _ in range(5):  # one caller at a time: always the same connection
        conn = pool.getconn()
        assert conn is third
        pool.putconn(conn)


def test_callers_at_once_take_the_warm_ones_first(pool: Pool) -> None:
    first, second, third = (pool.getconn() for _ in range(3))
    for conn in (first, second, third):
        pool.putconn(conn)
    taken = [pool.getconn(), pool.getconn(), pool.getconn()]
    assert taken == [third, second, first]
    for conn in taken:
        pool.putconn(conn)
    again = pool.getconn()
    assert again is first  # returned last
    pool.putconn(again)


def test_a_connection_past_its_lifetime_is_lent_first_and_replaced(pool: Pool) -> None:
    first, second, third = (pool.getconn() for _ in range(3))
    for conn in (first, second, third):
        pool.putconn(conn)
    first._expire_at = 0.0  # type: ignore[attr-defined]  # psycopg_pool's own mark
    lent = pool.getconn()
    assert lent is first  # idle longest, and expired: lent so that it is replaced
    pool.putconn(lent)
    assert lent.closed
    after = pool.getconn()
    assert after is third  # the others as before: the one returned last
    pool.putconn(after)


def test_a_connection_lent_works(pool: Pool) -> None:
    for _ in range(3):
        with pool.connection() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)


def test_the_connections_lent_keep_a_cursor(pool: Pool) -> None:
    with pool.connection() as conn:
        assert isinstance(conn, PooledConnection)
        kept = conn.kept_cursor(dict_row)
        assert conn.kept_cursor(dict_row) is kept
        assert conn.kept_cursor(tuple_row) is not kept  # one per row factory
        kept.close()
        again = conn.kept_cursor(dict_row)  # a closed one is replaced
        assert again is not kept
        assert again.execute("SELECT 1 AS one").fetchall() == [{"one": 1}]


def test_one_task_inserts_run_on_the_kept_cursor(postgres_store: Store) -> None:
    postgres_store.task_create(NewTask(topic="t", name="n", data=1))
    with postgres_store._connection() as conn:  # type: ignore[attr-defined]
        kept = conn.kept_cursor(dict_row)
        assert kept.statusmessage == "INSERT 0 1"  # the insert just made
    postgres_store.task_create(NewTask(id="same", topic="t", name="n", data=2))
    with pytest.raises(DuplicateTask):  # refused on the kept cursor: it stays usable
        postgres_store.task_create(NewTask(id="same", topic="t", name="n", data=3))
    third = postgres_store.task_create(NewTask(topic="t", name="n", data=[4]))
    assert postgres_store.task_get(third.id).data == [4]
    with postgres_store._connection() as conn:  # type: ignore[attr-defined]
        assert conn.kept_cursor(dict_row) is kept
    assert sorted(str(t.data) for t in postgres_store.task_list(limit=10).tasks) == [
        "1",
        "2",
        "[4]",
    ]


class Outage(Proxy):
    """A proxy to the server that, while :attr:`down` is set, hangs up on each
    connection as it comes (noting when), as a server restarting would."""

    def __init__(self, url: str) -> None:
        self.down = threading.Event()
        self.down.set()
        self.attempts: list[float] = []
        super().__init__(url)

    def pair(self, client: socket.socket, server: socket.socket) -> None:
        if self.down.is_set():
            self.attempts.append(time.monotonic())
            hang_up(client)
            hang_up(server)
            return
        start(self._pass, client, server)
        start(self._pass, server, client)

    def _pass(self, source: socket.socket, sink: socket.socket) -> None:
        while data := recv(source):
            with contextlib.suppress(OSError):
                sink.sendall(data)
        hang_up(sink)


def test_while_the_server_is_away_attempts_never_stop_coming_often(postgres_url: str) -> None:
    """psycopg_pool alone waits twice as long after each refused attempt (1, 2,
    4, 8 s …); the store's pool keeps trying every RETRY_MAX seconds at most, so
    it finds the server back within seconds however long it was away."""
    outage = Outage(postgres_url)
    through = outage.url(postgres_url)
    made = Pool(through, kwargs=connection_kwargs(through, "test"), min_size=1, open=False)
    try:
        made.open(wait=False)
        deadline = time.monotonic() + 60
        while len(outage.attempts) < 9 and time.monotonic() < deadline:
            time.sleep(0.1)  # psycopg_pool alone: 15 s before the 5th
        gaps = [later - earlier for earlier, later in itertools.pairwise(outage.attempts)]
        assert max(gaps) <= RETRY_MAX + 0.5, gaps
        outage.down.clear()
        with made.connection(timeout=RETRY_MAX + RECONNECT_ROUND + 1) as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
    finally:
        made.close()
        outage.close()
