"""The pytest plugin of :mod:`tenure.testing`, loaded by pytest once tenure is
installed: fixtures that give each test a private store for the App under test.

Name your App in pytest's configuration, and ``tenure_app`` is that App pointed
at a fresh store for each test (without it, a new empty App)::

    [tool.pytest.ini_options]
    tenure_app = "myproject.tasks:app"

``tenure_url`` is the store each test gets, a private SQLite database by default;
override the fixture in a ``conftest.py`` to test on PostgreSQL. ``tenure_eager``
is the App in eager mode: each enqueue runs its task before it returns.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tenure.app import App, load_app
from tenure.testing.isolation import MEMORY_URL, eager, isolated


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "tenure_app",
        "module:attribute of the App that the tenure_app fixture isolates for each test",
        default="",
    )


@pytest.fixture
def tenure_url() -> str:
    """The store URL each test's App uses: a private SQLite database, gone after
    the test. Override it to run the tests on another store."""
    return MEMORY_URL


@pytest.fixture
def tenure_app(request: pytest.FixtureRequest, tenure_url: str) -> Iterator[App]:
    """The App named by the ``tenure_app`` ini option (a new App if none is named),
    pointed at ``tenure_url`` for this test and put back afterwards."""
    path = str(request.config.getini("tenure_app"))
    app = load_app(path) if path else App(tenure_url)
    with isolated(app, tenure_url):
        yield app


@pytest.fixture
def tenure_eager(tenure_app: App) -> Iterator[App]:
    """``tenure_app`` in eager mode: every enqueue runs the queued tasks in the
    test's thread before it returns."""
    with eager(tenure_app):
        yield tenure_app
