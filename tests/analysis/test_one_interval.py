"""`scores` and `leaderboard` give one number one interval: the same resamples, seed and bootstrap."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from typer.testing import CliRunner

from livemed.cli import app
from livemed.store import Store
from tests.analysis.builders import CUTOFFS_TOML, study


def test_scores_and_leaderboard_show_the_same_ci(tmp_path: Path) -> None:
    with Store(tmp_path / "s.db") as store:
        store.put(study(n_cases=60))
    (tmp_path / "cutoffs.toml").write_text(CUTOFFS_TOML, encoding="utf-8")
    (tmp_path / "livemed.toml").write_text(  # the default resamples (2,000) and seed
        'store = "s.db"\n[analysis]\ncutoffs = "cutoffs.toml"\nmin_post_cases = 5\nmin_pre_cases = 5\n',
        encoding="utf-8",
    )
    base = ["--config", str(tmp_path / "livemed.toml")]
    runner = CliRunner()
    scored = runner.invoke(
        app, [*base, "scores", "--judge", "fake/judge", "--json", str(tmp_path / "s.json")]
    )
    assert scored.exit_code == 0, scored.output
    ranked = runner.invoke(app, [*base, "leaderboard"])
    assert ranked.exit_code == 0, ranked.output
    from_scores = {r["model"]: r for r in json.loads((tmp_path / "s.json").read_text())["models"]}
    rows = csv.DictReader((tmp_path / "results" / "leaderboard.csv").read_text().splitlines())
    from_leaderboard = {r["model"]: r for r in rows}
    assert set(from_scores) == set(from_leaderboard)
    assert len(from_scores) == 3
    for model, row in from_scores.items():
        other = from_leaderboard[model]
        assert row["score"] == float(other["mean"])
        assert row["ci_low"] < row["ci_high"]
        assert (round(row["ci_low"], 9), round(row["ci_high"], 9)) == (
            round(float(other["ci_low"]), 9),
            round(float(other["ci_high"]), 9),
        )
