"""Settings of the long-running commands: flag > TENURE_* environment >
[tool.tenure] in pyproject.toml > default."""

from __future__ import annotations

from pathlib import Path

import pytest

import tenure
from tenure.cli import build_parser, main
from tenure.store.url import resolve_url


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project folder with a pyproject.toml, and a subfolder to run from (the
    nearest pyproject.toml above the working directory counts)."""
    for name in (
        "TENURE_CONCURRENCY",
        "TENURE_POOL",
        "TENURE_APP",
        "TENURE_TOPICS",
        "TENURE_NO_SCHEDULER",
        "TENURE_URL",
        "TENURE_LOG_FORMAT",
    ):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'shop'\n\n[tool.tenure]\n"
        'app = "shop.tasks:app"\nconcurrency = 8\npool = "Processes"\n'
        'topics = ["emails", "sync"]\nno-scheduler = true\nlog_format = "json"\n'
    )
    (tmp_path / "src").mkdir()
    monkeypatch.chdir(tmp_path / "src")
    return tmp_path


def worker_args(*argv: str):  # type: ignore[no-untyped-def]
    return build_parser().parse_args(["worker", *argv])


def test_the_file_fills_what_no_flag_or_variable_gives(project: Path) -> None:
    args = worker_args()
    assert args.app == "shop.tasks:app"
    assert args.concurrency == 8
    assert args.pool == "processes"  # checked and normalised as the flag would be
    assert args.topics == ["emails", "sync"]
    assert args.no_scheduler is True
    assert args.log_format == "json"
    assert args.lease == 30.0  # the built-in default


def test_the_environment_beats_the_file_and_a_flag_beats_both(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TENURE_CONCURRENCY", "16")
    monkeypatch.setenv("TENURE_NO_SCHEDULER", "false")
    monkeypatch.setenv("TENURE_TOPICS", "a, b")
    args = worker_args()
    assert (args.concurrency, args.no_scheduler, args.topics) == (16, False, ["a", "b"])
    args = worker_args("--concurrency", "2", "--topics", "c")
    assert (args.concurrency, args.topics) == (2, ["c"])


def test_the_url_follows_the_same_order_for_the_command_and_an_app(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store resolves flag > TENURE_URL > [tool.tenure] url > default itself, so
    an ``App()`` in a web process started here finds the store the worker uses."""
    with (project / "pyproject.toml").open("a") as file:
        file.write('url = "sqlite:///from-file.db"\n')

    def url_of(*argv: str) -> str:
        return resolve_url(build_parser().parse_args([*argv, "tasks"]).url)

    assert url_of() == "sqlite:///from-file.db" == tenure.App().url
    monkeypatch.setenv("TENURE_URL", "sqlite:///from-env.db")
    assert url_of() == "sqlite:///from-env.db" == tenure.App().url
    assert url_of("--url", "sqlite:///flag.db") == "sqlite:///flag.db"  # before the command
    args = build_parser().parse_args(["worker", "--url", "sqlite:///after.db"])
    assert args.url == "sqlite:///after.db"  # and after it
    assert build_parser().parse_args(["worker"]).url is None  # not given: the App decides


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("TENURE_CONCURRENCY", "lots", "TENURE_CONCURRENCY: invalid value 'lots'"),
        ("TENURE_POOL", "gpu", "TENURE_POOL: 'gpu' is not one of threads, processes, async"),
        ("TENURE_NO_SCHEDULER", "maybe", "TENURE_NO_SCHEDULER: expected true or false"),
    ],
)
def test_a_bad_value_names_where_it_came_from(
    project: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    variable: str,
    value: str,
    expected: str,
) -> None:
    monkeypatch.setenv(variable, value)
    assert main(["workers"]) == 2
    err = capsys.readouterr().err.strip()
    assert expected in err and len(err.splitlines()) == 1


def test_an_unknown_key_in_the_file_is_refused(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with (project / "pyproject.toml").open("a") as file:
        file.write("concurency = 3\n")
    assert main(["workers"]) == 2
    err = capsys.readouterr().err
    assert "unknown setting 'concurency' in [tool.tenure] of" in err
    assert str(project / "pyproject.toml") in err


def test_version_is_not_a_setting(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with (project / "pyproject.toml").open("a") as file:
        file.write('version = "1"\n')
    assert main(["workers"]) == 2
    assert "unknown setting 'version'" in capsys.readouterr().err


def test_help_shows_the_value_that_applies_here(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["worker", "--help"]) == 0
    assert "(default: 8)" in capsys.readouterr().out
