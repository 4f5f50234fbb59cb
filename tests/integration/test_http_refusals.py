"""One table from tenure's errors to HTTP answers (tenure.http.refusals), used
by the API and the dashboard alike: the same request refused for the same
reason gets the same status from both, the API naming the field in JSON, the
dashboard saying it in a sentence on its page."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from starlette.testclient import TestClient

from tenure import App
from tenure.errors import StoreUnavailable, TenureError
from tenure.http import create_app
from tenure.http.refusals import RETRY_AFTER, TABLE, refusal
from tenure.store.types import NewTask
from tests.apps.api import make_app

TOKEN = "refusals-token-0123456789abcdef"


def test_no_kind_of_the_table_is_hidden_by_one_before_it() -> None:
    kinds = [kind for kind, _, _ in TABLE]
    for later, kind in enumerate(kinds):
        for earlier in kinds[:later]:
            assert not issubclass(kind, earlier), f"{kind.__name__} after {earlier.__name__}"


def test_a_failure_is_no_refusal_and_an_unreachable_store_says_nothing_of_why() -> None:
    assert refusal(TenureError("a bug")) is None
    answer = refusal(StoreUnavailable("connection to 10.0.0.5 refused: password for admin"))
    assert answer is not None and answer.status == 503
    assert "10.0.0.5" not in answer.message and answer.headers == {"Retry-After": RETRY_AFTER}


@pytest.fixture
def client(store_url: str) -> Iterator[TestClient]:
    app: App = make_app(store_url)
    for task_id in ("dup-1", "dup-2"):
        app.store.task_create(NewTask(topic="t", name="add", id=task_id))
    with TestClient(create_app(app, token=TOKEN), base_url="http://127.0.0.1:8765") as opened:
        opened.post("/login", data={"token": TOKEN, "next": "/"})
        yield opened
    app.close()


@pytest.mark.parametrize(
    ("api", "page", "status", "field", "says"),
    [
        ("/api/tasks/dup-", "/tasks/dup-", 409, "id", "'dup-' begins more than one task's id"),
        ("/api/tasks/nothing", "/tasks/nothing", 404, "id", "no task's id is or begins with"),
        (
            "/api/tasks?status=sleeping",
            "/tasks?status=sleeping",
            422,
            "status",
            "unknown status 'sleeping'",
        ),
    ],
)
def test_the_api_and_the_dashboard_refuse_alike(
    client: TestClient, api: str, page: str, status: int, field: str, says: str
) -> None:
    answer = client.get(api, headers={"Authorization": f"Bearer {TOKEN}"})
    assert (answer.status_code, answer.json()["error"]["field"]) == (status, field)
    assert says in answer.json()["error"]["message"]
    shown = client.get(page)
    assert shown.status_code == status and shown.headers["content-type"].startswith("text/html")
    sentence = re.search(r'<p class="error">([^<]+)</p>', shown.text)
    assert sentence, shown.text
    assert says.replace("'", "&#39;").lower() in sentence[1].lower() and sentence[1].endswith(".")
