from __future__ import annotations

import csv
import json
import math
from pathlib import Path

from livemed.analysis.leaderboard import LeaderboardRow
from livemed.analysis.table_files import write_table


def test_tables_flatten_dicts_for_csv_and_write_nan_as_null(tmp_path: Path) -> None:
    row = LeaderboardRow(rank=1, model="m/a", n_cases=1, n_answers=1, mean=0.5, ci_low=math.nan, ci_high=0.5,
                         per_axis={"accuracy": 0.25}, coverage=1.0, harm=0.0, grade_failures=0)  # fmt: skip
    csv_path, json_path = write_table(tmp_path / "out", "board", [row])
    [record] = list(csv.DictReader(csv_path.read_text(encoding="utf-8").splitlines()))
    assert record["per_axis.accuracy"] == "0.25"
    assert record["model"] == "m/a"
    data = json.loads(json_path.read_text(encoding="utf-8"))
    assert data["rows"][0]["ci_low"] is None
    assert data["rows"][0]["per_axis"] == {"accuracy": 0.25}
