"""tenure.contrib.fastapi on PostgreSQL: the lifespan opens the App's store and
a pool and closes both; the Transaction dependency commits what an endpoint
wrote with the tasks it enqueued before the answer is sent, so a commit that
fails is never answered as a success; an endpoint that raises leaves nothing."""

from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest
from fastapi import Depends, FastAPI, HTTPException
from psycopg import AsyncConnection
from starlette.testclient import TestClient

from tenure import App, ConfigError
from tenure.contrib.fastapi import TenureFastAPI
from tenure.store import TaskFilter

TABLE = """
DROP TABLE IF EXISTS public.notes;
CREATE TABLE public.notes (
    body text NOT NULL,
    CONSTRAINT one_of_each UNIQUE (body) DEFERRABLE INITIALLY DEFERRED
);
"""


@pytest.fixture
def queue(store_url: str) -> Iterator[App]:
    built = App(store_url)

    @built.task(name="file", topic="notes")
    def file(body: str) -> None: ...

    with psycopg.connect(store_url.partition("?")[0], autocommit=True) as conn:
        conn.execute(TABLE)
    yield built
    built.close()


def shop(queue: App) -> tuple[FastAPI, TenureFastAPI]:
    glue = TenureFastAPI(queue, pool_size=2)
    api = FastAPI(lifespan=glue.lifespan)
    # (A default rather than Annotated: this module's annotations are strings,
    # which FastAPI resolves in the module's globals, where glue is not.)
    in_transaction = Depends(glue.transaction, scope="function")

    @api.post("/notes/{body}", status_code=201)
    async def note(
        body: str,
        conn: AsyncConnection = in_transaction,
        twice: bool = False,
        refuse: bool = False,
    ) -> str:
        for _ in range(2 if twice else 1):  # twice: refused at commit, not before
            await conn.execute("INSERT INTO public.notes VALUES (%s)", (body,))
        handle = await queue.lookup("file").options(connection=conn).aenqueue(body)
        if refuse:
            raise HTTPException(409, "refused after writing")
        return handle.id

    return api, glue


def notes(queue: App) -> int:
    return queue.store.task_count(TaskFilter(topic="notes"))


@pytest.mark.parametrize("backend", ["postgres"], indirect=True)
def test_what_an_endpoint_writes_and_enqueues_commits_before_it_answers(queue: App) -> None:
    api, glue = shop(queue)
    with pytest.raises(ConfigError, match="lifespan"):
        glue.pool  # noqa: B018 - not open before the lifespan
    with TestClient(api, raise_server_exceptions=False) as client:
        assert client.post("/notes/first").status_code == 201
        assert notes(queue) == 1
        # A commit that fails (a deferred constraint) is answered as a failure,
        # never 201: the transaction ends before the response is sent.
        failed = client.post("/notes/second", params={"twice": "true"})
        assert failed.status_code == 500
        assert client.post("/notes/third", params={"refuse": "true"}).status_code == 409
        assert notes(queue) == 1
    with psycopg.connect(queue.url.partition("?")[0]) as conn:
        assert conn.execute("SELECT count(*) FROM public.notes").fetchone() == (1,)
    with pytest.raises(ConfigError):
        glue.pool  # noqa: B018 - closed with the lifespan


def test_a_sqlite_app_has_no_pool_to_give(tmp_path) -> None:  # type: ignore[no-untyped-def]
    queue = App(f"sqlite:///{tmp_path / 'q.db'}")
    api, glue = shop(queue)
    with TestClient(api, raise_server_exceptions=False), pytest.raises(ConfigError, match="Post"):
        glue.pool  # noqa: B018
