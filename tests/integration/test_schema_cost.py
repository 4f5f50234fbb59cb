"""``python -m benchmarks.schema_cost`` in miniature: two variants of the
PostgreSQL schema measured side by side (pgbench replaying the enqueue, a drain
read from /proc), each variant's SQL applied to a store of its own, and every
database it made dropped, also when a variant's SQL fails."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import psycopg
import pytest

from benchmarks import schema_cost
from benchmarks.suite.postgres_target import PostgresTarget
from tests.conftest import POSTGRES_URL

pytestmark = pytest.mark.slow

WITHOUT_EVENTS = "DROP TRIGGER tasks_created ON tasks;"
"""A variant: creations write neither an event nor tallies."""


class Watched(PostgresTarget):
    """The harness's store, as it is: each one's schema, read once measured
    and before it is dropped, and each one's database name (the run's own,
    since the suite's other process may be making databases of its own)."""

    made: ClassVar[list[tuple[str, str]]] = []

    def close(self) -> None:
        with psycopg.connect(self.url) as conn:
            found = conn.execute(
                "SELECT count(*) FROM pg_trigger WHERE tgname = 'tasks_created'"
                " AND tgrelid = 'tenure.tasks'::regclass"
            )
            schema = "as is" if found.fetchone() == (1,) else "lean"
        self.made.append((self.database, schema))
        super().close()


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, str]]]:
    """(database, schema) of every store the harness made, once it dropped it;
    and no database of them is left."""
    monkeypatch.setattr(schema_cost, "PostgresTarget", Watched)
    Watched.made = []
    yield Watched.made
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        names = [name for name, _ in Watched.made]
        left = admin.execute("SELECT datname FROM pg_database WHERE datname = ANY(%s)", [names])
        assert left.fetchall() == []


def run(capsys: pytest.CaptureFixture[str], *variants: str) -> tuple[int, str, str]:
    code = schema_cost.main(
        ["--url", POSTGRES_URL, "--rounds", "1", "--seconds", "1", "--tasks", "1000"]
        + [arg for spec in variants for arg in ("--variant", spec)]
    )
    out, err = capsys.readouterr()
    return code, out, err


def test_each_variant_is_measured_on_its_own_store_and_compared_to_the_first(
    postgres_url: str,
    tmp_path: Path,
    made: list[tuple[str, str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    sql = tmp_path / "lean.sql"
    sql.write_text(WITHOUT_EVENTS)
    code, out, err = run(capsys, "base=", f"lean={sql}")
    assert (code, err) == (0, "")
    assert [schema for _, schema in made] == ["as is", "lean"]
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert [row.split("|")[1].strip() for row in rows[2:]] == ["base", "lean"]
    base = [cell.strip() for cell in rows[2].split("|")[2:-1]]
    assert base[-2:] == ["1.00", "1.00"]  # the baseline against itself
    assert all(float(cell.replace(",", "")) > 0 for cell in base[:4])


def test_a_variant_whose_sql_fails_stops_the_run_with_one_line_and_leaves_nothing(
    postgres_url: str,
    tmp_path: Path,
    made: list[tuple[str, str]],
    capsys: pytest.CaptureFixture[str],
) -> None:
    sql = tmp_path / "broken.sql"
    sql.write_text("DROP TRIGGER no_such_trigger ON tasks;")
    code, _, err = run(capsys, "base=", f"broken={sql}")
    assert code == 1
    assert err.startswith("schema_cost: the variant's SQL failed: ") and err.count("\n") == 1
    assert len(made) == 2  # the baseline's store and the broken variant's, both dropped


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("nameless", "a variant is name=file.sql or name=, not 'nameless'"),
        ("x=/no/such/file.sql", "cannot read /no/such/file.sql"),
    ],
)
def test_a_bad_variant_is_refused_before_anything_runs(
    spec: str, message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        schema_cost.main(["--variant", spec])
    assert exited.value.code == 2
    assert message in capsys.readouterr().err
