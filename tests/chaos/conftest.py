"""Fixtures of the chaos suite's tests: the private PostgreSQL cluster, and the
quick runs that a scenario test and tamper tests share (sigkill-storm with the
followers' tests, poison with its checks' tests).

Without Debian's postgresql-15 binaries (or psycopg) the tests that need a
private cluster are skipped with one line of reason naming the package, unless
``TENURE_REQUIRE_POSTGRES=1``, which turns the skip into a failure (as for
every PostgreSQL test, see ``tests/conftest.py``).
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path

import pytest
from chaos.cluster import ClusterUnavailable, PrivateCluster, binaries
from chaos.scenarios import Outcome

from tests.chaos import tampering
from tests.conftest import _require_postgres


def _unavailable(reason: str) -> None:
    if _require_postgres():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def cluster_binaries() -> Path:
    """Where ``initdb`` and ``pg_ctl`` are, for scenarios that make their own cluster."""
    if importlib.util.find_spec("psycopg") is None:
        _unavailable("psycopg is not installed: pip install 'tenure[postgres]'")
    try:
        return binaries()
    except ClusterUnavailable as exc:
        _unavailable(str(exc))
        raise  # unreachable: skip and fail raise


@pytest.fixture
def cluster(cluster_binaries: Path) -> Iterator[PrivateCluster]:
    """A private cluster of this test, removed after it."""
    with PrivateCluster(cluster_binaries) as made:
        yield made


@pytest.fixture(scope="session")
def storm(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """The quick sigkill-storm run on SQLite, with its followers: the scenario
    test checks it, and the followers' tamper tests check it again."""
    return tampering.quick_run("sigkill-storm", tmp_path_factory)


@pytest.fixture(scope="session")
def poison(tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """The quick poison run on SQLite: the scenario test checks it, and the
    poison checks' tamper tests check it again."""
    return tampering.quick_run("poison", tmp_path_factory)
