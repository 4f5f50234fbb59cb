"""``python -m benchmarks.schema_cost`` in miniature: two variants of the
PostgreSQL schema measured side by side (pgbench replaying the enqueue, a drain
read from /proc), each variant's SQL applied to its own fresh stores, and every
database it made dropped, also when a variant's SQL fails."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest

from benchmarks import schema_cost
from tests.conftest import POSTGRES_URL

pytestmark = pytest.mark.slow

WITHOUT_EVENTS = "DROP TRIGGER tasks_created ON tasks;"
"""A variant: creations write neither an event nor tallies."""


def cost_databases() -> set[str]:
    with psycopg.connect(POSTGRES_URL, autocommit=True) as admin:
        rows = admin.execute("SELECT datname FROM pg_database WHERE datname LIKE 'tenure_cost_%'")
        return {name for (name,) in rows}


def run(capsys: pytest.CaptureFixture[str], *variants: str) -> tuple[int, str, str]:
    code = schema_cost.main(
        ["--url", POSTGRES_URL, "--rounds", "1", "--seconds", "1", "--tasks", "300"]
        + [arg for spec in variants for arg in ("--variant", spec)]
    )
    out, err = capsys.readouterr()
    return code, out, err


def test_each_variant_is_measured_on_its_own_stores_and_compared_to_the_first(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = cost_databases()
    sql = tmp_path / "lean.sql"
    sql.write_text(WITHOUT_EVENTS)
    applied: list[str] = []
    real = schema_cost.drain_cost

    def drain_cost(url: str, tasks: int) -> tuple[float, float]:
        with psycopg.connect(url) as conn:  # what the variant made of the schema
            found = conn.execute("SELECT count(*) FROM pg_trigger WHERE tgname = 'tasks_created'")
            applied.append("as is" if found.fetchone() == (1,) else "lean")
        return real(url, tasks)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(schema_cost, "drain_cost", drain_cost)
        code, out, err = run(capsys, "base=", f"lean={sql}")
    assert (code, err) == (0, "")
    assert applied == ["as is", "lean"]
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    assert [row.split("|")[1].strip() for row in rows[2:]] == ["base", "lean"]
    base = [cell.strip() for cell in rows[2].split("|")[2:-1]]
    assert base[-2:] == ["1.00", "1.00"]  # the baseline against itself
    assert all(float(cell.replace(",", "")) > 0 for cell in base[:4])
    assert cost_databases() == before


def test_a_variant_whose_sql_fails_stops_the_run_with_one_line_and_leaves_nothing(
    postgres_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = cost_databases()
    sql = tmp_path / "broken.sql"
    sql.write_text("DROP TRIGGER no_such_trigger ON tasks;")
    code, _, err = run(capsys, "base=", f"broken={sql}")
    assert code == 1
    assert err.startswith("schema_cost: the variant's SQL failed: ") and err.count("\n") == 1
    assert cost_databases() == before


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
