"""The README's quick start, run as written: its files copied into an empty folder,
the worker started with the installed ``tenure`` console script (no ``python -m``,
no PYTHONPATH), the enqueue script run from the same folder."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.workers import ROOT, wait_for

pytestmark = pytest.mark.slow

SECTION = re.compile(r"^## Quick start\n(.*?)^## ", re.S | re.M)
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```", re.S | re.M)


def quick_start() -> tuple[dict[str, str], list[str]]:
    """The quick start's files (python blocks that begin ``# name.py``) and its
    shell commands, in order."""
    found = SECTION.search((ROOT / "README.md").read_text())
    assert found is not None, "the README has no Quick start section"
    files, commands = {}, []
    for language, body in BLOCK.findall(found.group(1)):
        if language == "python":
            name = body.splitlines()[0].removeprefix("# ").strip()
            files[name] = body
        elif language == "sh":
            commands += [line.split("#")[0].strip() for line in body.splitlines() if line]
    return files, commands


def test_the_quick_start_works_as_written(tmp_path: Path) -> None:
    files, commands = quick_start()
    assert commands == ["tenure worker --app tasks:app", "python enqueue.py"]
    for name, body in files.items():
        (tmp_path / name).write_text(body)
    bin_dir = Path(sys.executable).parent  # where the installed console script lives
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "TENURE_URL")}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    log = (tmp_path / "worker.log").open("w")
    worker = subprocess.Popen(
        commands[0].split(), cwd=tmp_path, env=env, stderr=log, stdin=subprocess.DEVNULL
    )
    try:
        logged = tmp_path / "worker.log"
        wait_for(lambda: "started: store=" in logged.read_text(), "the worker's start line")
        start_line = next(ln for ln in logged.read_text().splitlines() if "started: store=" in ln)
        assert f"store=sqlite:///{tmp_path / 'tenure.db'}" in start_line
        assert "tasks=tasks.sync_products" in start_line and "pool=threads" in start_line
        script = commands[1].replace("python", str(bin_dir / "python"), 1)
        ran = subprocess.run(
            script.split(),
            check=False,
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert ran.returncode == 0, ran.stderr
        assert ran.stdout.strip() == "{'operation': 'sync', 'synced': 10}"
    finally:
        worker.send_signal(signal.SIGTERM)
        assert worker.wait(30) == 0
        log.close()
    text = (tmp_path / "worker.log").read_text()
    assert "Traceback" not in text
    assert "succeeded in" in text
