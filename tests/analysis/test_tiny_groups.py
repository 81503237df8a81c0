"""Tiny groups end to end: two models sharing one case, one pre-cutoff case; nothing crashes and
nothing that cannot be computed is shown as a number."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from livemed.analysis.contamination import AnalysisSettings, analyse
from livemed.analysis.cutoffs import parse_cutoffs
from livemed.analysis.leaderboard import compare, leaderboard
from livemed.cli import app
from livemed.records import Record, Rubric
from livemed.store import Store
from tests.analysis.builders import CUTOFFS_TOML, _answer, criteria, day, make_case, rows

PRE_DAY, POST_DAYS = 10, (250, 260, 270)  # fake/strong's cutoff is day 240, fake/weak's day 300


def test_compare_on_one_shared_case_has_no_interval_and_no_p_value() -> None:
    data = [*rows("a", [0.9, 0.4]), rows("b", [0.3])[0]]
    c = compare(data, "a", "b", resamples=1000, permutations=1000)
    assert (c.n_shared, c.mean_a, c.mean_b, c.wins_a) == (1, 0.9, 0.3, 1)
    assert c.diff == pytest.approx(0.6)
    assert (c.ci_low, c.ci_high, c.p_permutation) == (None, None, None)
    hb = compare(data, "a", "b", resamples=1000, permutations=1000, convention="healthbench")
    assert (hb.ci_low, hb.ci_high, hb.p_permutation) == (None, None, None)
    board = {r.model: r for r in leaderboard(data, resamples=1000)}
    assert (board["b"].mean, board["b"].ci_low, board["b"].ci_high) == (0.3, None, None)
    assert board["a"].ci_low == pytest.approx(0.4)


def test_contamination_with_one_pre_cutoff_case() -> None:
    strong = rows("fake/strong", [0.9, 0.5, 0.4, 0.6], [PRE_DAY, *POST_DAYS])
    weak = rows("fake/weak", [0.5, 0.5, 0.6, 0.4], [PRE_DAY, *POST_DAYS])
    registry = parse_cutoffs(CUTOFFS_TOML, "test").models
    settings = AnalysisSettings(min_pre=1, min_post=2, resamples=1000, permutations=1000)
    result = analyse(strong + weak, registry, settings)
    row = next(r for r in result.rows if r.model == "fake/strong")
    assert (row.status, row.n_pre, row.n_post) == ("tested", 1, 3)
    assert row.mean_pre == pytest.approx(0.9)
    assert row.pre_minus_post == pytest.approx(0.9 - 0.5)
    # one pre-cutoff value: no interval of pre − post and no permutation p-value (scipy needs two)
    assert (row.pre_minus_post_low, row.pre_minus_post_high, row.p_permutation) == (None, None, None)
    assert row.p_mannwhitney == pytest.approx(0.25)  # exact: the one pre value is the largest of 4
    assert row.cliffs_delta == 1.0
    assert row.verdict is not None


def _tiny_store() -> list[Record]:
    """fake/strong answers four cases (one before its cutoff), fake/weak only the first: one shared."""
    out: list[Record] = []
    rng = np.random.default_rng(0)
    for i, d in enumerate((PRE_DAY, *POST_DAYS)):
        case = make_case(i).model_copy(update={"published": day(d)})
        rubric = Rubric(case_id=case.id, criteria=criteria(), published=case.published)
        out += [case, rubric, *_answer(case, rubric, "fake/strong", 0, rng, script=False)]
        if i == 0:
            out += _answer(case, rubric, "fake/weak", 1, rng, script=False)
    return out


@pytest.fixture
def tiny_project(tmp_path: Path, any_store: Store) -> Path:
    """A project file whose store (SQLite, and PostgreSQL when configured) holds the tiny groups."""
    any_store.put(_tiny_store())
    (tmp_path / "cutoffs.toml").write_text(CUTOFFS_TOML, encoding="utf-8")
    (tmp_path / "livemed.toml").write_text(
        f'store = "{any_store.url}"\n[analysis]\ncutoffs = "cutoffs.toml"\nresamples = 1000\n'
        "permutations = 1000\nmin_post_cases = 2\nmin_pre_cases = 1\n",
        encoding="utf-8",
    )
    return tmp_path


def _invoke(project: Path, *args: str) -> str:
    result = CliRunner().invoke(
        app, ["--config", str(project / "livemed.toml"), *args], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result.output


def test_leaderboard_compare_through_the_cli_on_one_shared_case(tiny_project: Path) -> None:
    out = _invoke(tiny_project, "leaderboard", "--compare", "fake/strong", "--compare", "fake/weak")
    assert "fake/strong − fake/weak" in out
    comparison = json.loads((tiny_project / "results" / "comparison.json").read_text())["rows"][0]
    assert comparison["n_shared"] == 1
    assert (comparison["ci_low"], comparison["ci_high"], comparison["p_permutation"]) == (None, None, None)
    board = {
        r["model"]: r for r in json.loads((tiny_project / "results" / "leaderboard.json").read_text())["rows"]
    }
    assert (board["fake/weak"]["ci_low"], board["fake/weak"]["ci_high"]) == (None, None)
    assert board["fake/strong"]["ci_low"] is not None


def test_report_on_a_store_of_tiny_groups(tiny_project: Path) -> None:
    report = tiny_project / "site" / "report.html"
    _invoke(tiny_project, "report", "--out", str(report), "--max-cases", "2")
    html = report.read_text(encoding="utf-8")
    assert not any(word in html.lower() for word in (">nan<", " nan ", "nan%", "[nan"))
    tables = tiny_project / "site" / "report-tables"
    contamination = {r["model"]: r for r in json.loads((tables / "contamination.json").read_text())["rows"]}
    assert contamination["fake/strong"]["status"] == "tested"
    assert contamination["fake/strong"]["p_permutation"] is None
    comparison = json.loads((tables / "comparisons.json").read_text())["rows"][0]
    assert comparison["n_shared"] == 1
    # the comparison row shows dashes for the interval and the p-value, not a number
    start = html.index("Paired comparison with the leader")
    row = html[start : html.index("</tr>", html.index("<tbody>", start))]
    assert '<td class="n">— – —</td>' in row
    assert '<td class="n">—</td><td class="n">1 / 0 / 0</td>' in row  # the p-value
