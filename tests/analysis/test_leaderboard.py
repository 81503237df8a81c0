"""Leaderboard and paired comparison against hand-worked numbers."""

from __future__ import annotations

import pytest

from livemed.analysis.inputs import CaseScore, case_scores
from livemed.analysis.leaderboard import compare, leaderboard
from livemed.records import Score


def score(model: str, case: str, value: float, sample: int = 0, **kw: object) -> Score:
    return Score(
        answer_id=f"answer:{case}:{model}:{sample}",
        case_id=case,
        model=model,
        judge="j",
        score=value,
        coverage=kw.pop("coverage", 0.5),
        harm=kw.pop("harm", 0.0),
        **kw,
    )


def test_samples_are_averaged_per_case_before_the_mean() -> None:
    rows = case_scores([score("m/a", "c1", 1.0, 0), score("m/a", "c1", 0.0, 1), score("m/a", "c2", 1.0)])
    assert [(r.case_id, r.score, r.samples) for r in rows] == [("c1", 0.5, 2), ("c2", 1.0, 1)]
    board = leaderboard(rows, resamples=1000)
    assert board[0].mean == pytest.approx(0.75)  # (0.5 + 1.0) / 2, not 2/3
    assert board[0].n_cases == 2
    assert board[0].n_answers == 3


def test_leaderboard_columns_hand_worked() -> None:
    scores = [
        score("m/a", "c1", 0.9, per_axis={"accuracy": 1.0, "safety": 1.0}, coverage=1.0, harm=0.0),
        score("m/a", "c2", 0.5, per_axis={"accuracy": 0.5}, coverage=0.5, harm=8.0, failures=2),
        score("m/b", "c1", 0.2, per_axis={"accuracy": 0.0}, coverage=0.0, harm=4.0, failures=1),
    ]
    board = leaderboard(case_scores(scores), resamples=1000)
    a, b = board
    assert (a.rank, a.model, b.rank, b.model) == (1, "m/a", 2, "m/b")
    assert a.mean == pytest.approx(0.7)
    assert a.per_axis == pytest.approx({"accuracy": 0.75, "safety": 1.0})
    assert list(a.per_axis) == ["accuracy", "safety"]
    assert (a.coverage, a.harm, a.grade_failures) == pytest.approx((0.75, 4.0, 2))
    assert a.ci_low is not None
    assert a.ci_high is not None
    assert 0.5 <= a.ci_low <= a.mean <= a.ci_high <= 0.9
    assert (b.ci_low, b.ci_high) == (None, None)  # one case: the interval is not computable


def test_paired_comparison_uses_shared_cases_only() -> None:
    rows = [
        CaseScore("m/a", "c1", 0.9), CaseScore("m/a", "c2", 0.6), CaseScore("m/a", "c3", 0.5),
        CaseScore("m/a", "only-a", 0.0),
        CaseScore("m/b", "c1", 0.4), CaseScore("m/b", "c2", 0.6), CaseScore("m/b", "c3", 0.3),
    ]  # fmt: skip
    result = compare(rows, "m/a", "m/b", resamples=1000)
    assert result.n_shared == 3
    assert result.mean_a == pytest.approx(2.0 / 3)
    assert result.diff == pytest.approx((0.5 + 0.0 + 0.2) / 3)
    assert (result.wins_a, result.wins_b, result.ties) == (2, 0, 1)
    # differences (0.5, 0, 0.2): of the 8 sign patterns, 2 (the zero's two signs) reach the observed mean,
    # so the one-sided p is 2/8 and the two-sided p (twice the smaller one-sided p) is 0.5.
    assert result.p_permutation == pytest.approx(0.5)
    assert result.ci_low is not None
    assert result.ci_low >= 0.0


def test_paired_comparison_without_shared_cases() -> None:
    result = compare([CaseScore("m/a", "c1", 1.0), CaseScore("m/b", "c2", 1.0)], "m/a", "m/b")
    assert result.n_shared == 0
    assert result.diff is None
    assert result.p_permutation is None
