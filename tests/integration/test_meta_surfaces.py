"""A task's meta from end to end, on each store: given at enqueue by the
command line, the HTTP API and ``options(meta=...)``, and found again by
``tenure tasks --meta``, ``GET /api/tasks?meta=``, a bulk change's filter and
the dashboard's filter."""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import quote

import pytest
from starlette.testclient import TestClient

from tenure import App
from tenure.cli import main
from tenure.http import create_app
from tests.apps.api import make_app

TOKEN = "meta-token-0123456789abcdef"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def app(store_url: str) -> Iterator[App]:
    built = make_app(store_url)
    yield built
    built.close()


def test_meta_is_given_and_found_on_every_surface(
    app: App, store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    add = app.lookup("add")
    in_code = add.options(meta={"customer": "c-42"}).enqueue(1, 2).id
    app.lookup("add").enqueue(3, 4)  # no meta
    argv = ["enqueue", "add", "--url", store_url, "--args", "[5, 6]", "--json"]
    assert main([*argv, "--meta", "customer=c-42", "--meta", "region=eu"]) == 0
    by_cli = json.loads(capsys.readouterr().out)
    assert by_cli["meta"] == {"customer": "c-42", "region": "eu"}
    with TestClient(create_app(app, token=TOKEN), headers=AUTH) as client:
        body = {"name": "add", "args": [7, 8], "options": {"meta": {"customer": "c-7"}}}
        by_api = client.post("/api/tasks", json=body).json()
        assert by_api["meta"] == {"customer": "c-7"}
        wanted = quote(json.dumps({"customer": "c-42"}))
        listed = client.get(f"/api/tasks?meta={wanted}&order=oldest").json()["tasks"]
        assert [t["id"] for t in listed] == [in_code, by_cli["id"]]
        dry = {"filter": {"meta": {"region": "eu"}}, "dry_run": True}
        assert client.post("/api/tasks/cancel", json=dry).json()["matched"] == [by_cli["id"]]
        bad = client.get("/api/tasks?meta=customer")
        assert bad.status_code == 422 and bad.json()["error"]["field"] == "meta"
        refused = client.post("/api/tasks", json={**body, "options": {"meta": {"n": 1}}})
        assert refused.status_code == 422
        assert refused.json()["error"]["field"] == "options.meta['n']"
        client.post("/login", data={"token": TOKEN})
        page = client.get("/tasks", params={"meta": "customer=c-7"}).text
        assert by_api["id"] in page and in_code not in page
        assert "customer=c-7" in client.get(f"/tasks/{by_api['id']}").text
    assert main(["tasks", "--url", store_url, "--meta", "customer=c-42", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)["tasks"]
    assert sorted(t["id"] for t in found) == sorted([in_code, by_cli["id"]])
    assert main(["show", by_cli["id"], "--url", store_url]) == 0
    assert "customer=c-42, region=eu" in capsys.readouterr().out


def test_a_meta_option_without_a_value_is_one_line(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["tasks", "--url", store_url, "--meta", "customer"]) == 2
    err = capsys.readouterr().err
    assert "NAME=VALUE" in err and "Traceback" not in err
