"""`livemed contamination --scores FILE` end to end: exit codes, files written, no store created.

The scores are GENERATED (seeded) data, labelled as such: a model with a planted pre-cutoff advantage
and one without; no real items are given invented dates.
"""

from __future__ import annotations

import csv
import json
from datetime import date, timedelta
from pathlib import Path

import numpy as np
import pytest

from livemed.cli import main

CUTOFF = date(2024, 7, 1)
CUTOFFS_CSV = (
    "model,cutoff,source\nplanted,2024-07-01,generated test data\nflat,2024-07-01,generated test data\n"
)
CUTOFFS_TOML = """\
include_defaults = false
[models."planted"]
cutoff = 2024-07-01
source = "generated test data"
"""


def generated_rows(n: int = 200, seed: int = 0) -> list[dict[str, object]]:
    """GENERATED data: items every 2 days from 2024-01-01; `planted` succeeds with p 0.8 up to the
    cutoff and 0.5 after it, `flat` with p 0.5 throughout; two samples per (model, item)."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, object]] = []
    for i in range(n):
        day = date(2024, 1, 1) + timedelta(days=2 * i)
        for model in ("planted", "flat"):
            p = 0.8 if model == "planted" and day <= CUTOFF else 0.5
            for _ in range(2):
                rows.append(
                    {
                        "item_id": f"g{i}",
                        "published": day.isoformat(),
                        "model": model,
                        "score": int(rng.random() < p),
                    }
                )
    return rows


def write_csv(path: Path, rows: list[dict[str, object]], extra: str = "") -> Path:
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
        handle.write(extra)
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run the real entry point (its exit codes: 0, 1 for skipped rows, 2 for user errors)."""
    code = 0
    try:
        main(list(args))
    except SystemExit as exc:
        code = int(exc.code or 0)
    out = capsys.readouterr()
    return code, " ".join(out.out.split()), " ".join(out.err.split())


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)  # no livemed.toml here: the defaults, and ./livemed.db if a store opened
    monkeypatch.setenv("COLUMNS", "200")
    (tmp_path / "cutoffs.csv").write_text(CUTOFFS_CSV, encoding="utf-8")
    return tmp_path


def no_store_created(folder: Path) -> bool:
    return not [p for p in folder.rglob("*") if p.suffix in {".db", ".sqlite"}]


def test_a_clean_file_exits_0_writes_tables_and_report_and_creates_no_store(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scores = write_csv(folder / "scores.csv", generated_rows())
    code, out, err = run(
        capsys, "contamination", "--scores", scores.name, "--cutoffs", "cutoffs.csv", "--seed", "3"
    )
    assert code == 0, err
    assert "800 rows read from scores.csv · 400 (model, item) scores · 0 rows left out" in out
    assert "1/2 tested models with a significant drop" in out
    assert no_store_created(folder)
    results = folder / "results"
    assert sorted(p.name for p in results.iterdir()) == [
        "contamination.csv",
        "contamination.html",
        "contamination.json",
    ]
    data = json.loads((results / "contamination.json").read_text(encoding="utf-8"))
    rows = {r["model"]: r for r in data["rows"]}
    assert rows["planted"]["significant"] is True
    assert rows["flat"]["significant"] is False
    assert (rows["planted"]["n_pre"], rows["planted"]["n_post"]) == (92, 108)
    assert rows["planted"]["cutoff_source"] == "generated test data"
    summary = data["summary"]
    assert summary["scores_file"] == "scores.csv"
    assert summary["rows_read"] == 800
    assert summary["rows_left_out"] == 0
    assert len(summary["scores_sha256"]) == 64
    assert summary["n_tested"] == 2
    table = list(csv.DictReader((results / "contamination.csv").read_text(encoding="utf-8").splitlines()))
    assert [r["model"] for r in table] == ["flat", "planted"]
    html = (results / "contamination.html").read_text(encoding="utf-8")
    assert summary["scores_sha256"] in html
    assert 'id="contamination-table"' in html


def test_bad_rows_are_listed_left_out_and_exit_1_after_the_outputs(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    extra = "late,not a date,planted,1\nnodate,,planted,1\ng3,2024-01-07,flat,perhaps\n"
    scores = write_csv(folder / "scores.csv", generated_rows(), extra)
    report = folder / "out" / "c.html"
    code, _, err = run(
        capsys,
        "contamination",
        "--scores",
        scores.name,
        "--cutoffs",
        "cutoffs.csv",
        "--out",
        "tables",
        "--report",
        str(report),
    )
    assert code == 1
    assert "left out, bad date: 1 row(s): scores.csv:802 (late: not an ISO date: 'not a date')" in err
    assert "left out, missing date: 1 row(s): scores.csv:803 (nodate)" in err
    assert "left out, bad score: 1 row(s): scores.csv:804 (g3: not a number or true/false: 'perhaps')" in err
    assert "error: 3 of 803 rows of scores.csv were left out (listed above); the tables and the report" in err
    assert report.is_file()
    data = json.loads((folder / "tables" / "contamination.json").read_text(encoding="utf-8"))
    assert data["summary"]["rows_left_out"] == 3
    assert data["summary"]["left_out_by_reason"] == {"bad date": 1, "missing date": 1, "bad score": 1}
    assert {r["model"]: r["n_full"] for r in data["rows"]} == {"flat": 200, "planted": 200}
    assert no_store_created(folder)


def test_custom_columns_jsonl_and_a_toml_cutoff_file(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = [
        {"qid": r["item_id"], "date": r["published"], "llm": r["model"], "acc": bool(r["score"])}
        for r in generated_rows()
    ]
    path = folder / "results.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    (folder / "cutoffs.toml").write_text(CUTOFFS_TOML, encoding="utf-8")
    args = ["contamination", "--scores", path.name, "--cutoffs", "cutoffs.toml"]
    cols = [
        "--column",
        "item_id=qid",
        "--column",
        "published=date",
        "--column",
        "model=llm",
        "--column",
        "score=acc",
    ]
    code, _, err = run(capsys, *args, *cols)
    assert code == 0, err
    assert "no cutoff: not tested: flat (no cutoff in cutoffs.toml)" in err
    data = json.loads((folder / "results" / "contamination.json").read_text(encoding="utf-8"))
    assert {r["model"]: r["status"] for r in data["rows"]} == {"flat": "no cutoff", "planted": "tested"}
    assert data["summary"]["columns"] == {
        "item_id": "qid",
        "published": "date",
        "model": "llm",
        "score": "acc",
    }


def test_user_errors_are_one_line_exit_2(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    scores = write_csv(folder / "scores.csv", generated_rows(20))
    code, _, err = run(capsys, "contamination", "--scores", scores.name, "--column", "score=acc")
    assert code == 2
    assert err.startswith(
        "error: scores.csv: no column 'acc' for score (columns: item_id, model, published, score)"
    )
    assert err.endswith("name it with --column score=COLUMN")
    (folder / "none.csv").write_text("model,cutoff\nsomeone-else,2024-01-01\n", encoding="utf-8")
    code, _, err = run(capsys, "contamination", "--scores", scores.name, "--cutoffs", "none.csv")
    assert code == 2
    assert "no model of" in err
    assert "has a training cutoff in none.csv: flat, planted" in err
    code, _, err = run(capsys, "contamination", "--scores", scores.name, "--judge", "x")
    assert code == 2
    assert "do not apply to --scores" in err
    code, _, err = run(capsys, "contamination", "--report", "x.html")
    assert code == 2
    assert "--column and --report go with --scores FILE" in err
    code, _, err = run(capsys, "contamination", "--scores", "absent.csv")
    assert code == 2
    assert err == "error: absent.csv: cannot read the scores file: No such file or directory"
    bad = write_csv(folder / "bad.csv", [{"item_id": "a", "published": "", "model": "m", "score": 1}])
    code, _, err = run(capsys, "contamination", "--scores", bad.name)
    assert code == 2
    assert "no usable rows (all 1 left out, listed above)" in err
    assert no_store_created(folder)
    assert not (folder / "results").exists()


def test_a_csv_cutoff_file_with_a_bad_date_names_the_line(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scores = write_csv(folder / "scores.csv", generated_rows(20))
    (folder / "bad.csv").write_text("model,cutoff\nplanted,July 2024\n", encoding="utf-8")
    code, _, err = run(capsys, "contamination", "--scores", scores.name, "--cutoffs", "bad.csv")
    assert code == 2
    assert err.startswith("error: bad.csv:2: cutoff must be a date like 2023-10-31, got 'July 2024'")


def test_too_few_post_cutoff_items_is_insufficient_data_not_a_verdict(
    folder: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    scores = write_csv(folder / "scores.csv", generated_rows(100))  # 8 items after the cutoff, < 50
    code, _, err = run(capsys, "contamination", "--scores", scores.name, "--cutoffs", "cutoffs.csv")
    assert code == 0, err
    data = json.loads((folder / "results" / "contamination.json").read_text(encoding="utf-8"))
    rows = {r["model"]: r for r in data["rows"]}
    assert {m: r["status"] for m, r in rows.items()} == {
        "flat": "insufficient data",
        "planted": "insufficient data",
    }
    assert all(r["verdict"] is None and r["significant"] is None for r in rows.values())
    assert rows["planted"]["n_post"] == 8  # items every 2 days up to 2024-07-17
    assert data["summary"]["n_tested"] == 0
