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

import traceback
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:  # tenure itself is imported by the fixtures, when a test asks
    from tenure.app import App


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addini(
        "tenure_app",
        "module:attribute of the App that the tenure_app fixture isolates for each test",
        default="",
    )


@pytest.fixture(scope="session")
def _tenure_named_app(pytestconfig: pytest.Config) -> App | None:
    """The App the ``tenure_app`` ini option names, imported once; a mistake
    stops the run with one message rather than failing every test with it."""
    path = str(pytestconfig.getini("tenure_app"))
    if not path:
        return None
    from tenure.app import load_app  # noqa: PLC0415
    from tenure.errors import ConfigError  # noqa: PLC0415
    from tenure.loading import AppImportError  # noqa: PLC0415

    try:
        return load_app(path)
    except AppImportError as exc:
        pytest.exit(f"{exc.traceback}tenure_app = {path!r}: {exc}", returncode=4)
    except ConfigError as exc:
        pytest.exit(f"tenure_app = {path!r}: {exc}", returncode=4)
    except Exception:
        pytest.exit(f"tenure_app = {path!r} failed:\n{traceback.format_exc()}", returncode=4)


@pytest.fixture
def tenure_url() -> str:
    """The store URL each test's App uses: a private SQLite database, gone after
    the test. Override it to run the tests on another store (an empty database
    of your own: tenure does not empty it between tests)."""
    from tenure.testing.isolation import MEMORY_URL  # noqa: PLC0415

    return MEMORY_URL


@pytest.fixture
def tenure_app(_tenure_named_app: App | None, tenure_url: str) -> Iterator[App]:
    """The App named by the ``tenure_app`` ini option (a new App if none is named),
    pointed at ``tenure_url`` for this test and put back afterwards."""
    from tenure.app import App  # noqa: PLC0415
    from tenure.testing.isolation import isolated  # noqa: PLC0415

    app = _tenure_named_app if _tenure_named_app is not None else App(tenure_url)
    with isolated(app, tenure_url):
        yield app


@pytest.fixture
def tenure_eager(tenure_app: App) -> Iterator[App]:
    """``tenure_app`` in eager mode: every enqueue runs the queued tasks in the
    test's thread before it returns."""
    from tenure.testing.isolation import eager  # noqa: PLC0415

    with eager(tenure_app):
        yield tenure_app
