"""Checking a clean run's evidence again after tampering with it: how the
chaos tests show that each check reports what it is there to catch; and the
quick SQLite run a scenario's test and its tamper tests share."""

from __future__ import annotations

import copy
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from chaos.checker import Bounds, Verdict, check
from chaos.evidence import Evidence, gather
from chaos.journal import SUFFIX
from chaos.scenarios import Outcome, Plan, Scenario, run

from tenure.store import open_store

Records = list[dict[str, Any]]
"""One journal's lines, parsed."""


def quick_run(name: str, folders: pytest.TempPathFactory) -> Outcome:
    """Scenario ``name``'s quick profile on SQLite, in a folder of its own: run
    once, then checked by its scenario test and again by its tamper tests."""
    return run(name, "sqlite", "quick", folders.mktemp(name))


def recheck(
    clean: Path,
    tmp_path: Path,
    scenario: Scenario,
    tamper: Callable[[dict[str, Records]], None],
    *,
    plan: Plan | None = None,
) -> Verdict:
    """Check the clean SQLite run of ``scenario`` in ``clean`` (run with
    ``plan``, else its quick one) against a copy of its journals, by file name,
    as ``tamper`` left them, as :func:`chaos.scenarios.run` checks a run."""
    journals = tmp_path / "journals"
    shutil.copytree(clean / "journals", journals)
    files = {
        p.name: [json.loads(line) for line in p.read_text().splitlines()]
        for p in journals.glob(f"*{SUFFIX}")
    }
    tamper(files)
    for name, records in files.items():
        (journals / name).write_text("".join(json.dumps(r) + "\n" for r in records))
    with open_store(f"sqlite:///{clean / 'chaos.db'}") as store:
        evidence = gather(journals, store)
    return check(evidence, Bounds(plan or scenario.plans["quick"]), scenario.checks)


def recheck_evidence(
    clean: Evidence, scenario: Scenario, tamper: Callable[[Evidence], None]
) -> Verdict:
    """Check a copy of the evidence ``clean`` of a clean quick run of
    ``scenario`` as ``tamper`` left it, as :func:`chaos.scenarios.run` checks a run."""
    evidence = copy.deepcopy(clean)
    tamper(evidence)
    return check(evidence, Bounds(scenario.plans["quick"]), scenario.checks)
