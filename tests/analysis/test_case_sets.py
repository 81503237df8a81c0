"""Comparing models answered on different case sets says so: cases per model and cases shared."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from livemed.analysis.inputs import CaseScore
from livemed.analysis.leaderboard import compare
from livemed.cli import app
from livemed.records import Score
from livemed.store import Store
from tests.analysis.builders import CUTOFFS_TOML, study


def rows(model: str, cases: range) -> list[CaseScore]:
    return [CaseScore(model=model, case_id=f"c{i}", score=(i % 3) / 2) for i in cases]


def test_a_comparison_counts_each_models_cases() -> None:
    same = compare(rows("a", range(10)) + rows("b", range(10)), "a", "b")
    assert (same.n_a, same.n_b, same.n_shared) == (10, 10, 10)
    assert same.case_set_warning() is None
    differ = compare(rows("a", range(10)) + rows("b", range(4, 16)), "a", "b")
    assert (differ.n_a, differ.n_b, differ.n_shared) == (10, 12, 6)
    assert differ.case_set_warning() == "a was scored on 10 case(s), b on 12; only the 6 shared are compared"


def test_leaderboard_compare_and_the_report_warn_about_different_case_sets(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.put(study(n_cases=40))
        weak = sorted(s.id for s in store.iter(Score) if s.model == "fake/weak")
        store.delete(Score.kind, weak[:15])
    (tmp_path / "cutoffs.toml").write_text(CUTOFFS_TOML, encoding="utf-8")
    (tmp_path / "livemed.toml").write_text(
        'store = "s.db"\n[analysis]\ncutoffs = "cutoffs.toml"\nmin_post_cases = 5\nmin_pre_cases = 5\n',
        encoding="utf-8",
    )
    base = ["--config", str(tmp_path / "livemed.toml")]
    env = {"COLUMNS": "300"}
    result = CliRunner().invoke(
        app,
        [*base, "leaderboard", "--compare", "fake/strong", "--compare", "fake/weak", "--allow-incomplete"],
        env=env,
    )
    assert (
        "warning: fake/strong was scored on 40 case(s), fake/weak on 25; only the 25 shared" in result.output
    )
    report = tmp_path / "r.html"
    result = CliRunner().invoke(app, [*base, "report", "--out", str(report), "--allow-incomplete"], env=env)
    assert result.exit_code == 0, result.output
    assert "Different case sets: fake/strong was scored on 40 case(s), fake/weak on 25" in report.read_text()
