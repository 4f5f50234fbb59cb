"""The store's pool lends the connection returned last.

A process that enqueues one task at a time then keeps writing on one warm
connection instead of on each of its connections in turn, and the connections
it no longer needs stay idle, so that the pool's ``max_idle`` can close them.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tenure.store.postgres.driver import configure, connection_kwargs
from tenure.store.postgres.pooling import Pool


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
    assert pool.getconn() is first  # returned last


def test_a_connection_lent_works(pool: Pool) -> None:
    for _ in range(3):
        with pool.connection() as conn:
            assert conn.execute("SELECT 1").fetchone() == (1,)
