"""Every mistake a user can make on the command line gets one line on stderr, no
traceback, and exit code 2 (a failure, such as a task not found, gets 1)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tenure.cli import main


def one_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


USER_MODULES = ("tasks", "broken")


@pytest.fixture
def user_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An empty folder, made the working directory, as a new user's project is
    (each test imports its own ``tasks`` module from it)."""
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("TENURE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield tmp_path
    for name in USER_MODULES:
        sys.modules.pop(name, None)


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["taks"], "did you mean 'tasks'?"),
        (["worker", "--app", "x:app", "--log-level", "verbose"], "invalid choice: 'verbose'"),
        (["worker", "--app", "x:app", "--pool", "thread"], "did you mean 'threads'?"),
        (["worker", "--app", "x:app", "--concurrency", "many"], "invalid int value: 'many'"),
        (["tasks", "--bogus"], "unrecognized arguments: --bogus"),
        (["worker"], "the following arguments are required: --app"),
        (["completion", "fish"], "invalid choice: 'fish'"),
    ],
)
def test_usage_mistakes_get_one_line_and_exit_2(
    argv: list[str], expected: str, user_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert expected in one_line(capsys)


def test_choices_are_case_insensitive(user_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (user_dir / "tasks.py").write_text("import tenure\napp = tenure.App()\n")
    # No tasks declared: the worker refuses to start, after parsing every option.
    code = main(["worker", "--app", "tasks:app", "--log-level", "DEBUG", "--pool", "Threads"])
    assert code == 2
    assert "declare tasks with @app.task first" in one_line(capsys)


def test_a_wrong_attribute_is_answered_with_the_apps_found(
    user_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (user_dir / "tasks.py").write_text("import tenure\napp = tenure.App()\ndef job(): ...\n")
    assert main(["worker", "--app", "tasks:ap"]) == 2
    assert "tasks has no attribute 'ap'; did you mean tasks:app?" in one_line(capsys)
    assert main(["worker", "--app", "tasks:job"]) == 2
    assert "tasks:job is a function, not a tenure.App; did you mean tasks:app?" in one_line(capsys)


def test_a_missing_module_names_the_folder_searched(
    user_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["worker", "--app", "nosuchmodule:app"]) == 2
    line = one_line(capsys)
    assert "no module 'nosuchmodule'" in line and str(user_dir) in line


def test_an_error_inside_the_users_module_keeps_its_traceback(
    user_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (user_dir / "broken.py").write_text("import tenure\nimport not_installed_anywhere\n")
    assert main(["worker", "--app", "broken:app"]) == 1  # a failure, not a usage mistake
    err = capsys.readouterr().err
    assert "Traceback (most recent call last):" in err
    assert 'broken.py", line 2' in err  # where, in the user's own file
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: importing 'broken' raised ModuleNotFoundError")


def test_a_bad_store_url_is_one_line(user_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--url", "mysql://localhost/x", "tasks"]) == 2
    assert "unknown store URL scheme 'mysql'" in one_line(capsys)


@pytest.mark.parametrize(
    "argv",
    [
        ["--url", "sqlite:///:memory:", "tasks"],
        ["--url", "sqlite:///:memory:", "enqueue", "job"],
        ["worker", "--app", "tasks:app"],
        ["scheduler", "--app", "tasks:app"],
        ["serve", "--app", "tasks:app", "--insecure"],
    ],
)
def test_a_private_memory_store_is_refused_by_commands(
    user_dir: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """Work given to a store only this process can see would vanish with it."""
    (user_dir / "tasks.py").write_text(
        "import tenure\napp = tenure.App('sqlite:///:memory:')\n@app.task\ndef job(): ...\n"
    )
    assert main(argv) == 2
    assert "private to one process" in one_line(capsys)


def test_unknown_task_id_is_a_failure_naming_the_store(
    user_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["migrate"]) == 0
    capsys.readouterr()
    assert main(["show", "nope"]) == 1
    line = one_line(capsys)
    assert "no task's id is or begins with 'nope'" in line and str(user_dir / "tenure.db") in line


def test_completion_prints_a_script(user_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["completion", "bash"]) == 0
    script = capsys.readouterr().out
    assert "complete" in script and "worker" in script and "--concurrency" in script


def test_every_option_has_help_and_shows_its_default(
    user_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["worker", "--help"]) == 0
    text = capsys.readouterr().out
    for option in ("--concurrency", "--pool", "--lease", "--log-format", "--no-scheduler"):
        assert option in text
    assert "(default: 4)" in text and "(default: threads)" in text


def test_version_and_help_exit_0(user_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("tenure ")
    assert main(["--help"]) == 0
