"""`import-healthbench` stores exactly the rows that main stored for the same file (commit f3be043,
`tests/fixtures/healthbench/make_golden.py`): every row's kind, id, parent, publication time and payload
byte for byte, creation times aside, and prints the same report, in this process (`--workers 0`) and with
worker processes, into a fresh store and into one that already holds other cases."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.cli import app

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "healthbench"
CREATED = re.compile(r'"created_at":"[^"]*"')


def stored(store: Path) -> list[dict[str, object]]:
    with sqlite3.connect(store) as conn:
        rows = conn.execute(
            "SELECT kind, id, parent_id, published_at, payload FROM records "
            "WHERE id NOT LIKE '%other-1' ORDER BY kind, id"
        ).fetchall()
    return [
        {"kind": k, "id": i, "parent_id": p, "published_at": t, "payload": CREATED.sub("", payload)}
        for k, i, p, t, payload in rows
    ]


@pytest.mark.parametrize("workers", ["0", "1", "2"])
@pytest.mark.parametrize("holding", [False, True], ids=["fresh store", "store with other cases"])
def test_the_stored_rows_and_report_equal_mains(tmp_path: Path, workers: str, holding: bool) -> None:
    store = tmp_path / "s.db"
    path = tmp_path / "examples.jsonl"
    path.write_bytes((FIXTURES / "examples.jsonl").read_bytes())
    runner = CliRunner()
    if holding:  # a store with a case from another file: the import takes its "maybe stored" path
        other = tmp_path / "other.jsonl"
        other.write_text((FIXTURES / "examples.jsonl").read_text(encoding="utf-8").split("\n")[0] + "\n")
        other.write_text(other.read_text().replace('"v-plain"', '"other-1"'))
        first = runner.invoke(
            app, ["--store", str(store), "import-healthbench", str(other), "--published", "2025-03-01"]
        )
        assert first.exit_code == 0, first.output
    args = ["--store", str(store), "import-healthbench", str(path), "--published", "2025-03-01"]
    result = runner.invoke(app, [*args, "--workers", workers], env={"COLUMNS": "300"})
    expected = [
        json.loads(line) for line in (FIXTURES / "rows.jsonl").read_text(encoding="utf-8").split("\n") if line
    ]
    assert stored(store) == expected
    report = (FIXTURES / "output.txt").read_text(encoding="utf-8")
    printed = f"exit {result.exit_code}\n{result.stdout}{result.stderr}".replace(str(path), "FILE")
    assert printed == report
