"""The analyses follow the scoring convention: under healthbench the mean (and each bootstrap
resample's mean) is clipped to [0, 1], as `livemed scores --convention healthbench` and simple-evals do."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from livemed.analysis.contamination import AnalysisSettings, analyse
from livemed.analysis.cutoffs import CutoffEntry
from livemed.analysis.inputs import CaseScore, case_scores
from livemed.analysis.leaderboard import compare, leaderboard
from livemed.analysis.trends import monthly
from livemed.cli import app
from livemed.common import stats
from livemed.records import Score
from livemed.store import Store

runner = CliRunner()
MARCH = datetime(2025, 3, 1, tzinfo=UTC)


def hb(model: str, case: str, value: float, **kw: object) -> Score:
    return Score(
        answer_id=f"answer:{case}:{model}:0", case_id=case, model=model, judge="j", convention="healthbench",
        score=value, coverage=max(value, 0.0), harm=0.0, published=MARCH, **kw,
    )  # fmt: skip


TWO = [
    hb("m/a", "c1", -5.0, per_axis={"accuracy": -5.0}),
    hb("m/a", "c2", 0.625, per_axis={"accuracy": 0.625}),
]


def test_leaderboard_clips_the_mean_interval_and_axes_under_healthbench() -> None:
    row = leaderboard(case_scores(TWO), resamples=1000, convention="healthbench")[0]
    reference = stats.summarize([-5.0, 0.625], "healthbench")
    assert reference is not None
    assert (row.mean, reference.mean) == (0.0, 0.0)  # clip(-2.1875), not -2.1875
    assert (row.ci_low, row.ci_high) == pytest.approx((0.0, 0.625))
    assert row.per_axis == {"accuracy": 0.0}
    unclipped = leaderboard(case_scores(TWO), resamples=1000)[0]
    assert unclipped.mean == pytest.approx(-2.1875)  # the livemed convention leaves the mean alone


def test_compare_trends_and_contamination_clip_means_under_healthbench() -> None:
    rows = case_scores([*TWO, hb("m/b", "c1", 0.5), hb("m/b", "c2", 0.5)])
    result = compare(rows, "m/a", "m/b", resamples=1000, permutations=100, convention="healthbench")
    assert (result.mean_a, result.mean_b, result.diff) == pytest.approx((0.0, 0.5, -0.5))
    assert result.ci_low is not None
    assert result.ci_low >= -0.5
    trend = monthly(rows, resamples=1000, convention="healthbench")
    # two cases a month: fewer than trends.MIN_N_INTERVAL, so no interval
    assert [(t.model, t.mean, t.ci_low) for t in trend] == [("m/a", 0.0, None), ("m/b", 0.5, None)]
    dated = [CaseScore("m/a", f"c{i}", -1.0 if i % 2 else 0.8, published=MARCH) for i in range(6)]
    [march] = monthly(dated, resamples=1000, convention="healthbench")
    assert march.mean == 0.0  # clip(-0.1)
    assert march.ci_low == 0.0  # every resampled mean is clipped too
    registry = {"m/a": CutoffEntry(cutoff=datetime(2024, 1, 1).date(), source="test")}
    row = analyse(dated, registry, AnalysisSettings(convention="healthbench", resamples=1000)).rows[0]
    assert (row.mean_full, row.mean_post, row.full_low) == (0.0, 0.0, 0.0)
    assert row.post_high is not None
    assert row.post_high <= 1.0


def test_leaderboard_command_agrees_with_scores_command(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.put(TWO)
    (tmp_path / "livemed.toml").write_text('store = "s.db"\n[analysis]\nresamples = 1000\n', encoding="utf-8")
    args = ["--config", str(tmp_path / "livemed.toml"), "leaderboard", "--convention", "healthbench"]
    result = runner.invoke(app, [*args, "--out", str(tmp_path / "out")], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "0.000" in result.output
    assert "2.188" not in result.output
