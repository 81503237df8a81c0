"""The score-distribution check on planted distributions: mass at 0 and 1 is flagged, the rest is not,
and the warning reaches `livemed scores` and the report."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from livemed.analysis.bimodality import MIN_N, check, score_distribution, warnings
from livemed.common.closed_form import bimodality_coefficient
from livemed.records import Answer, Criterion, Grade, Provenance, Record, Rubric, Score
from livemed.store import Store
from tests.analysis.builders import make_case
from tests.analysis.test_external_cli import run


def test_mass_at_0_and_1_is_flagged_with_a_warning_naming_the_model() -> None:
    row = check([0.0] * 30 + [1.0] * 30 + [0.5] * 5, "fake/extreme")
    assert row.judged
    assert row.bimodal
    assert row.share_low == pytest.approx(30 / 65)
    assert row.share_high == pytest.approx(30 / 65)
    assert row.share_middle == pytest.approx(5 / 65)
    warning = row.warning()
    assert warning is not None
    assert warning.startswith("fake/extreme: scores pile up at 0 and 1 (46% of 65 answers")
    assert "criterion weights may be too extreme" in warning
    assert row.coefficient is not None
    assert row.coefficient > 5 / 9


@pytest.mark.parametrize(
    "values",
    [
        list(np.linspace(0, 1, 60)),  # spread evenly: 5% at each end
        list(np.clip(np.random.default_rng(0).normal(0.55, 0.15, 80), 0, 1)),  # one mode
        [0.0] * 50 + [0.4] * 10,  # a floor, not two modes
        [1.0] * 55 + [0.6] * 5,  # a ceiling
        [0.0] * 5 + [1.0] * 40 + [0.7] * 15,  # one end too thin (8%)
        [0.0] * 15 + [1.0] * 15 + [0.5] * 30,  # both ends 25%, but half the answers between
    ],
)
def test_other_distributions_are_not_flagged(values: list[float]) -> None:
    row = check(values, "m")
    assert row.judged
    assert not row.bimodal
    assert row.warning() is None


def test_too_few_answers_are_not_judged() -> None:
    row = check([0.0, 1.0] * ((MIN_N - 1) // 2), "m")
    assert not row.judged
    assert not row.bimodal
    assert row.warning() is None


def test_the_coefficient_separates_two_modes_from_one_and_is_none_when_not_computable() -> None:
    rng = np.random.default_rng(1)
    assert bimodality_coefficient(list(rng.normal(0.5, 0.1, 200))) < 5 / 9
    assert bimodality_coefficient([0.0] * 50 + [1.0] * 50) > 0.9
    assert np.isnan(bimodality_coefficient([0.3] * 30))
    assert np.isnan(bimodality_coefficient([0.0, 1.0, 1.0]))
    assert check([0.3] * 30).coefficient is None


CRITERIA = [
    Criterion(text=f"Names step {k} of the plan", polarity="positive", axis="completeness", weight=2)
    for k in range(4)
]


def planted_store(path: Path, n_cases: int = 40) -> Store:
    """GENERATED grades: `fake/extreme` meets all four criteria or none (scores 0 or 1); `fake/graded`
    meets one to three of them (scores 0.25 to 0.75)."""
    rng = np.random.default_rng(3)
    records: list[Record] = []
    for i in range(n_cases):
        case = make_case(i)
        rubric = Rubric(case_id=case.id, criteria=CRITERIA, published=case.published)
        records += [case, rubric]
        for model in ("fake/extreme", "fake/graded"):
            answer = Answer(
                case_id=case.id, model=model, text=f"answer {i}", provenance=Provenance(model_id=model)
            )
            hits = (4 if rng.random() < 0.5 else 0) if model == "fake/extreme" else int(rng.integers(1, 4))
            records.append(answer)
            records += [
                Grade(
                    answer_id=answer.id, case_id=case.id, criterion_id=c.id, judge="fake/judge", met=k < hits
                )
                for k, c in enumerate(CRITERIA)
            ]
    store = Store(path)
    store.put(records)
    return store


def test_scores_warns_about_the_bimodal_model_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    planted_store(tmp_path / "s.db").close()
    code, _, err = run(capsys, "--store", "s.db", "scores", "--judge", "fake/judge", "--json", "out.json")
    assert code == 0, err
    assert "warning: fake/extreme: scores pile up at 0 and 1" in err
    assert "fake/graded" not in err
    data = json.loads((tmp_path / "out.json").read_text(encoding="utf-8"))
    flags = {row["model"]: row["bimodal"] for row in data["score_distribution"]}
    assert flags == {"fake/extreme": True, "fake/graded": False}


def test_the_report_shows_the_warning_and_the_distribution(tmp_path: Path) -> None:
    from livemed.reports.build import build_report
    from livemed.reports.html import render_html
    from livemed.score.stage import score_all

    store = planted_store(tmp_path / "s.db")
    try:
        score_all(store, "fake/judge")
        data = build_report(store, {}, max_cases=5)
        rows = {row.model: row for row in data.score_distribution}
        assert rows["fake/extreme"].bimodal
        assert not rows["fake/graded"].bimodal
        assert warnings(score_distribution(store.iter(Score))) == [rows["fake/extreme"].warning()]
        html = render_html(data)
    finally:
        store.close()
    assert 'class="warn bimodal"' in html
    assert "Score distribution: fake/extreme: scores pile up at 0 and 1" in html
    assert 'id="score-distribution"' in html
    assert "bimodal: weights may be too extreme" in html
