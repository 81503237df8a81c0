"""The same input gives the same taxonomy labels, scores, tables and report bytes (timestamps aside):
`livemed demo` run twice in fresh processes with different PYTHONHASHSEED (set and dict order, string
hashes), in the same folder so that paths written into the report are equal too."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from livemed.records import ErrorLabel, Grade, Score
from livemed.store import Store

TIMESTAMP = re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(\+00:00|Z| UTC)?")
RUN = [sys.executable, "-c", "import sys; from livemed.cli import main; sys.argv[0] = 'livemed'; main()"]


def demo(folder: Path, hash_seed: str) -> None:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "COLUMNS": "120"}
    done = subprocess.run([*RUN, "demo", "--out", str(folder)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]


def outcome(folder: Path) -> dict[str, Any]:
    """Everything a user reads of a demo run, with the time of day taken out of the report."""
    with Store(folder / "livemed.db") as store:
        labels = {x.id: (x.category, x.rationale, x.score) for x in store.iter(ErrorLabel)}
        scores = {x.id: (x.score, x.coverage, x.harm, x.per_axis, x.failures) for x in store.iter(Score)}
        grades = {x.id: (x.met, x.explanation) for x in store.iter(Grade)}
    results = folder / "results"
    tables = {
        str(p.relative_to(results)): [
            _timeless(row) for row in json.loads(p.read_text(encoding="utf-8"))["rows"]
        ]
        for p in sorted(results.rglob("*.json"))
    }
    report = TIMESTAMP.sub("<time>", (results / "report.html").read_text(encoding="utf-8"))
    return {"labels": labels, "scores": scores, "grades": grades, "tables": tables, "report": report}


def _timeless(row: dict[str, Any]) -> dict[str, Any]:
    """A table row without what tells one run from another: a Run's random id and its start time."""
    return {k: v for k, v in row.items() if k not in {"run_id", "started_at"}}


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    root = tmp_path_factory.mktemp("determinism")
    folder = root / "livemed-demo"
    demo(folder, "1")
    first = outcome(folder)
    shutil.rmtree(folder)
    demo(folder, "2")
    return first, outcome(folder)


def test_the_demo_labels_and_scores_the_same_in_two_processes(
    two_runs: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    first, second = two_runs
    assert all(first[part] for part in ("labels", "scores", "grades"))
    assert first["labels"] == second["labels"]
    assert first["scores"] == second["scores"]
    assert first["grades"] == second["grades"]
    assert first["tables"].keys() == second["tables"].keys()
    for name, rows in first["tables"].items():
        assert rows == second["tables"][name], name


def test_the_demo_report_is_the_same_bytes_but_for_its_timestamps(
    two_runs: tuple[dict[str, Any], dict[str, Any]],
) -> None:
    first, second = two_runs
    assert "<time>" in first["report"]  # the timestamps were found and taken out
    assert first["report"] == second["report"]
