"""Evaluate by cutoff: `--min-date/--max-date` and `--after-cutoff` on scores, leaderboard, eval and
report; the leaderboard's all-cases and post-cutoff columns side by side; `--release`."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from livemed.analysis.window import Window
from livemed.records import Answer, Case, Grade
from livemed.store import Store
from tests.live.helpers import cli

JUDGE = "offline/lexical"
MODEL = "offline/reference"


def ok(config: Path, *argv: str) -> Any:
    result = cli(config, *argv)
    assert result.exit_code == 0, result.output
    return result


def case_days(config: Path) -> list[date]:
    with Store(config.parent / "livemed.db") as store:
        return sorted(c.published.astimezone(UTC).date() for c in store.iter(Case))


def with_cutoff(config: Path, cutoff: date) -> None:
    (config.parent / "cutoffs.toml").write_text(
        f'[models."{MODEL}"]\ncutoff = {cutoff.isoformat()}\nsource = "test: a declared cutoff"\n',
        encoding="utf-8",
    )
    with config.open("a", encoding="utf-8") as handle:
        handle.write('[analysis]\ncutoffs = "cutoffs.toml"\n')


def n_of(path: Path, model: str = MODEL) -> int:
    rows = json.loads(path.read_text(encoding="utf-8"))["models"]
    return int(next(r["n"] for r in rows if r["model"] == model))


def test_a_window_keeps_dates_inclusively_and_each_model_after_its_own_cutoff() -> None:
    day = datetime(2025, 3, 10, 23, 30, tzinfo=UTC)
    assert Window(min_date=date(2025, 3, 10), max_date=date(2025, 3, 10)).keeps("m", "c", day)
    assert not Window(min_date=date(2025, 3, 11)).keeps("m", "c", day)
    assert not Window(max_date=date(2025, 3, 9)).keeps("m", "c", day)
    after = Window(cutoffs={"a": date(2025, 3, 9), "b": date(2025, 3, 10), "c": None})
    assert after.keeps("a", "x", day)
    assert not after.keeps("b", "x", day)  # published on the cutoff day: not after it
    assert not after.keeps("c", "x", day)  # no cutoff known: no post-cutoff cases
    assert after.no_cutoff(["a", "c", "d"]) == ["c", "d"]
    assert not Window(min_date=date(2020, 1, 1)).keeps("m", "c", None)  # undated
    assert Window().keeps("m", "c", None)
    assert not Window(case_ids=frozenset({"c1"})).keeps("m", "c2", day)


def test_scores_with_min_and_max_date_rank_only_those_cases(config: Path, tmp_path: Path) -> None:
    days = case_days(config)
    low, high = days[2], days[-3]
    out = tmp_path / "s.json"
    ok(
        config,
        "scores",
        "--judge",
        JUDGE,
        "--min-date",
        str(low),
        "--max-date",
        str(high),
        "--json",
        str(out),
    )
    assert n_of(out) == sum(1 for d in days if low <= d <= high) < len(days)
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["not_ranked"] == []  # completeness counted over the same cases


def test_scores_after_cutoff_and_a_model_without_a_cutoff(config: Path, tmp_path: Path) -> None:
    days = case_days(config)
    cutoff = days[len(days) // 2]
    with_cutoff(config, cutoff)
    out = tmp_path / "s.json"
    shown = ok(config, "scores", "--judge", JUDGE, "--after-cutoff", "--json", str(out))
    assert n_of(out) == sum(1 for d in days if d > cutoff) > 0
    assert "each model after its own training cutoff" in shown.output
    (config.parent / "cutoffs.toml").write_text(
        '[models."someone/else"]\ncutoff = 2024-01-01\nsource = "test"\n', encoding="utf-8"
    )
    none = ok(config, "scores", "--judge", JUDGE, "--after-cutoff", "--json", str(out))
    assert f"no training cutoff in the registry for {MODEL}" in none.output
    assert json.loads(out.read_text(encoding="utf-8"))["models"] == []


def test_the_leaderboard_shows_all_cases_and_post_cutoff_side_by_side(config: Path, tmp_path: Path) -> None:
    days = case_days(config)
    cutoff = days[len(days) // 2]
    with_cutoff(config, cutoff)
    shown = ok(config, "leaderboard", "--by-cutoff", "--out", str(tmp_path))
    assert "all cases vs post-cutoff only" in shown.output
    rows = json.loads((tmp_path / "leaderboard-by-cutoff.json").read_text(encoding="utf-8"))["rows"]
    (row,) = [r for r in rows if r["model"] == MODEL]
    assert row["all_cases"] == len(days)
    assert row["post_cases"] == sum(1 for d in days if d > cutoff)
    assert row["cutoff"] == cutoff.isoformat()
    assert row["all_minus_post"] == pytest.approx(row["all_mean"] - row["post_mean"])
    assert row["simulated"] is False  # the cutoff's source is "test: …", not a simulation's
    board = json.loads((tmp_path / "leaderboard.json").read_text(encoding="utf-8"))["rows"]
    assert board[0]["n_cases"] == len(days)  # without --after-cutoff the ranking is on every case
    ok(config, "leaderboard", "--after-cutoff", "--out", str(tmp_path / "after"))
    after = json.loads((tmp_path / "after" / "leaderboard.json").read_text(encoding="utf-8"))["rows"]
    assert after[0]["n_cases"] == row["post_cases"]


def test_the_leaderboard_of_one_release(config: Path, tmp_path: Path) -> None:
    days = case_days(config)
    ok(config, "release", "create", "early", "--until", str(days[3]))
    ok(config, "leaderboard", "--release", "early", "--out", str(tmp_path))
    board = json.loads((tmp_path / "leaderboard.json").read_text(encoding="utf-8"))["rows"]
    assert board[0]["n_cases"] == sum(1 for d in days if d <= days[3]) < len(days)


def test_eval_and_report_take_the_same_window(config: Path, tmp_path: Path) -> None:
    days = case_days(config)
    low = days[len(days) // 2]
    result = ok(config, "eval", "-m", MODEL, "--judge", JUDGE, "--min-date", str(low))
    expected = sum(1 for d in days if d >= low)
    assert f"published {low} → …" in result.output
    row = next(line for line in result.output.splitlines() if line.startswith("│ " + MODEL))
    assert f" {expected} " in row
    report = tmp_path / "r.html"
    ok(config, "report", "--out", str(report), "--max-date", str(low))
    tables = json.loads((tmp_path / "r-tables" / "leaderboard.json").read_text(encoding="utf-8"))["rows"]
    assert tables[0]["n_cases"] == sum(1 for d in days if d <= low)


def test_eval_answers_and_grades_only_the_cases_of_each_models_window(config: Path) -> None:
    days = case_days(config)
    cutoff = days[len(days) // 2]
    newcomer = "offline/empty"  # no answers stored yet
    (config.parent / "cutoffs.toml").write_text(
        f'[models."{newcomer}"]\ncutoff = {cutoff.isoformat()}\nsource = "test: a declared cutoff"\n',
        encoding="utf-8",
    )
    with config.open("a", encoding="utf-8") as handle:
        handle.write('[analysis]\ncutoffs = "cutoffs.toml"\n')
    ok(config, "eval", "-m", newcomer, "--judge", JUDGE, "--after-cutoff")
    with Store(config.parent / "livemed.db") as store:
        published = {c.id: c.published.astimezone(UTC).date() for c in store.iter(Case)}
        answered = [a.case_id for a in store.iter(Answer) if a.model == newcomer]
        graded = {g.answer_id for g in store.iter(Grade) if g.answer_id.endswith(f":{newcomer}:0")}
    assert sorted(answered) == sorted(c for c, d in published.items() if d > cutoff)
    assert 0 < len(answered) < len(published)  # the pre-cutoff cases were never asked
    assert len(graded) == len(answered)


def test_by_cutoff_without_after_cutoff_says_the_ranked_table_holds_every_case(
    config: Path, tmp_path: Path
) -> None:
    days = case_days(config)
    with_cutoff(config, days[len(days) // 2])
    shown = ok(config, "leaderboard", "--by-cutoff", "--out", str(tmp_path)).output
    assert (
        "cases: all (the ranked table); the side-by-side table adds each model's post-cutoff cases" in shown
    )
    assert "cases: each model after its own training cutoff" not in shown


def test_a_windowed_leaderboard_says_its_window_and_counts_only_its_cases(
    config: Path, tmp_path: Path
) -> None:
    days = case_days(config)
    low = days[len(days) // 2]
    inside = sum(1 for d in days if d >= low)
    shown = ok(config, "leaderboard", "--min-date", str(low), "--out", str(tmp_path)).output
    summary = json.loads((tmp_path / "leaderboard.json").read_text(encoding="utf-8"))["summary"]
    assert summary["window"] == f"cases: published {low} → …"
    assert f"{inside} (model, case) scores" in shown  # the window's, not the store's
    assert f"{inside}/{inside}" in shown
    assert f"{len(days)}/{len(days)}" not in shown
    grading = json.loads((tmp_path / "grading.json").read_text(encoding="utf-8"))
    assert grading["rows"][0]["graded"] == inside
    every = ok(config, "leaderboard", "--out", str(tmp_path / "all"))
    assert (
        "window"
        not in json.loads((tmp_path / "all" / "leaderboard.json").read_text(encoding="utf-8"))["summary"]
    )
    assert f"{len(days)} (model, case) scores" in every.output


def test_a_windowed_report_says_its_window_by_the_leaderboard(config: Path, tmp_path: Path) -> None:
    low = case_days(config)[2]
    ok(config, "report", "--out", str(tmp_path / "r.html"), "--min-date", str(low))
    html = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert f'<p class="hint" id="window">cases: published {low} → …</p>' in html
    summary = json.loads((tmp_path / "r-tables" / "leaderboard.json").read_text(encoding="utf-8"))["summary"]
    assert summary["window"] == f"cases: published {low} → …"
    ok(config, "report", "--out", str(tmp_path / "all.html"))
    assert 'id="window"' not in (tmp_path / "all.html").read_text(encoding="utf-8")


def test_by_cutoff_json_has_a_summary_and_the_contamination_tables_number(
    config: Path, tmp_path: Path
) -> None:
    days = case_days(config)
    with_cutoff(config, days[len(days) // 2])
    ok(config, "leaderboard", "--by-cutoff", "--out", str(tmp_path))
    ok(config, "contamination", "--out", str(tmp_path))
    side = json.loads((tmp_path / "leaderboard-by-cutoff.json").read_text(encoding="utf-8"))
    main = json.loads((tmp_path / "contamination.json").read_text(encoding="utf-8"))
    summary = side["summary"]
    assert summary["judge"] == main["summary"]["judge"] == JUDGE
    assert summary["difference"].startswith("all_minus_post = all-cases mean − post-cutoff mean")
    assert summary["simulated"] == []
    assert summary["no_cutoff"] == sorted(summary["no_cutoff"])
    assert MODEL not in summary["no_cutoff"]
    (row,) = [r for r in side["rows"] if r["model"] == MODEL]
    (same,) = [r for r in main["rows"] if r["model"] == MODEL]
    assert row["all_minus_post"] == pytest.approx(same["full_minus_post"])  # both signs: tests/demo
