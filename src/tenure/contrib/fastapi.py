"""tenure in a FastAPI application: a lifespan that opens the App's store before
the first request and closes it after the last, a dependency that gives an
endpoint a database connection in an open transaction (so what it writes and
the tasks it enqueues commit together, or not at all), and the dashboard and
HTTP API mounted under a prefix of the application::

    from tenure.contrib.fastapi import TenureFastAPI

    queue = tenure.App()                     # the PostgreSQL database of your tables
    tenure_web = TenureFastAPI(queue)
    app = FastAPI(lifespan=tenure_web.lifespan)
    tenure_web.mount(app, "/queue", token=os.environ["TENURE_API_TOKEN"])
    Transaction = Annotated[AsyncConnection, Depends(tenure_web.transaction, scope="function")]

    @app.post("/orders")
    async def place_order(order: OrderIn, conn: Transaction):
        await conn.execute("INSERT INTO orders …")
        await send_receipt.options(connection=conn).aenqueue(order_id)

The transaction commits when the endpoint returns and **before** its response
is sent (the dependency's scope is the endpoint's call, ``scope="function"``):
a client that is told "201" can count on the order and its task being there,
and an endpoint that raises rolls both back.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import FastAPI
from psycopg import AsyncConnection
from psycopg_pool import AsyncConnectionPool
from starlette.applications import Starlette

from tenure.app import App
from tenure.errors import ConfigError
from tenure.store.postgres.params import store_params
from tenure.store.url import parse_url, resolve_url

Connection = AsyncConnection[tuple[Any, ...]]


class TenureFastAPI:
    """The glue between one tenure :class:`~tenure.App` and a FastAPI app.

    ``pool_size``: the most connections of the pool the transactions are
    taken from (PostgreSQL only; a SQLite App enqueues with ``aenqueue`` on
    its own, without one)."""

    def __init__(self, app: App, *, pool_size: int = 10) -> None:
        self.app = app
        self.pool_size = pool_size
        self._pool: AsyncConnectionPool[Connection] | None = None

    @asynccontextmanager
    async def lifespan(self, api: Starlette) -> AsyncIterator[dict[str, Any]]:
        """Open the App's store (connecting, and applying tenure's migrations)
        in a thread, so a wrong URL or a server that is down stops the
        application before its first request; on PostgreSQL, open the pool of
        async connections that :meth:`transaction` takes from. Close both at
        shutdown. Use it as ``FastAPI(lifespan=...)``, or inside a lifespan of
        your own with ``async with tenure_web.lifespan(api):``."""
        await asyncio.to_thread(lambda: self.app.store)
        try:
            if parse_url(resolve_url(self.app.url))[0] == "postgresql":
                self._pool = AsyncConnectionPool(
                    store_params(resolve_url(self.app.url)).url,
                    min_size=1,
                    max_size=self.pool_size,
                    kwargs={"autocommit": True},  # transactions are explicit blocks
                    check=AsyncConnectionPool.check_connection,
                    open=False,
                )
                await self._pool.open(wait=True)
            yield {}
        finally:
            if self._pool is not None:
                await self._pool.close()
                self._pool = None
            await asyncio.to_thread(self.app.close)

    @property
    def pool(self) -> AsyncConnectionPool[Connection]:
        """The pool of async connections the lifespan opened, for the
        application's own reads and writes outside :meth:`transaction`."""
        if self._pool is None:
            raise ConfigError(
                "TenureFastAPI's pool is opened by its lifespan "
                "(FastAPI(lifespan=tenure_web.lifespan)), for a PostgreSQL App"
            )
        return self._pool

    async def transaction(self) -> AsyncIterator[Connection]:
        """A FastAPI dependency: a connection of the pool inside an open
        transaction, committed when the endpoint returns (rolled back if it
        raises). Declare it with ``scope="function"``, so that the commit comes
        before the response is sent (FastAPI's default scope runs it after)."""
        async with self.pool.connection() as conn, conn.transaction():
            yield conn

    def mount(
        self,
        api: FastAPI,
        path: str = "/queue",
        *,
        token: str | None,
        read_token: str | None = None,
        dashboard: bool = True,
        insecure: bool = False,
    ) -> None:
        """Serve tenure's dashboard, HTTP API and metrics under ``path`` of
        ``api``, asking for ``token`` (and accepting the read-only
        ``read_token``) as ``tenure serve`` does at its root."""
        from tenure.http import create_app  # noqa: PLC0415 - needs the web extra

        served = create_app(
            self.app, token=token, read_token=read_token, dashboard=dashboard, insecure=insecure
        )
        api.mount(path, served)
