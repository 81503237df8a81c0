"""Scoring formulas, checked against hand-worked numbers."""

from __future__ import annotations

import pytest

from livemed.analysis.leaderboard import breakdown, scores_table
from livemed.common import stats
from livemed.score import formula as S
from livemed.score.formula import Item


def items(*pairs: tuple[float, bool | None]) -> list[Item]:
    return [Item(weight=w, met=m) for w, m in pairs]


# (criteria as (weight, met), livemed score, healthbench raw score, coverage, harm)
TABLE = [
    # all positives met: 10/10
    (items((5, True), (5, True)), 1.0, 1.0, 1.0, 0.0),
    # 5 of 8 positive points, no penalty
    (items((5, True), (3, False), (-4, False)), 5 / 8, 5 / 8, 5 / 8, 0.0),
    # a penalty: (5 - 4) / 8
    (items((5, True), (3, False), (-4, True)), 1 / 8, 1 / 8, 5 / 8, 4 / 8),
    # negative total: (2 - 9) / 5 = -1.4 → livemed clips to 0, HealthBench keeps -1.4 per case
    (items((2, True), (3, False), (-9, True)), 0.0, -1.4, 2 / 5, 9 / 5),
    # nothing met
    (items((4, False), (-2, False)), 0.0, 0.0, 0.0, 0.0),
    # non-integer HealthBench points: (2.5 + 1.5 - 0.5) / 4 = 0.875
    (items((2.5, True), (1.5, True), (-0.5, True)), 0.875, 0.875, 1.0, 0.125),
]


@pytest.mark.parametrize(("rubric", "livemed", "healthbench", "coverage", "harm"), TABLE)
def test_case_scores_match_hand_worked_numbers(
    rubric: list[Item], livemed: float, healthbench: float, coverage: float, harm: float
) -> None:
    assert S.case_score(rubric, "livemed") == pytest.approx(livemed)
    assert S.case_score(rubric, "healthbench") == pytest.approx(healthbench)
    assert S.coverage(rubric) == pytest.approx(coverage)
    assert S.harm(rubric) == pytest.approx(harm)
    raw = S.raw_score(rubric)
    assert raw == pytest.approx(S.coverage(rubric) - S.harm(rubric))  # type: ignore[operator]


def test_the_non_integer_row_is_really_over_the_positive_total() -> None:
    # positive total = 2.5 + 2.5 + 1.5 = 6.5; met = 4.0
    rubric = items((2.5, True), (2.5, False), (1.5, True))
    assert S.raw_score(rubric) == pytest.approx(4.0 / 6.5)


def test_all_negative_and_zero_positive_rubrics_have_no_score() -> None:
    for rubric in (items((-5, True), (-3, False)), items((-5, False)), []):
        assert S.case_score(rubric, "livemed") is None
        assert S.case_score(rubric, "healthbench") is None
        assert S.coverage(rubric) is None
        assert S.harm(rubric) is None


def test_failed_verdicts_are_not_met_by_default_and_dropped_with_exclude() -> None:
    # +6 met, +4 failed, -3 failed, -2 met
    rubric = items((6, True), (4, None), (-3, None), (-2, True))
    # not-met: (6 - 2) / 10
    assert S.case_score(rubric, "livemed", "not-met") == pytest.approx(0.4)
    # exclude: the +4 leaves the denominator, the -3 leaves the numerator: (6 - 2) / 6
    assert S.case_score(rubric, "livemed", "exclude") == pytest.approx(4 / 6)
    # a failed negative never counts as present: harm is 2/10, not 5/10
    assert S.harm(rubric) == pytest.approx(0.2)


def test_exclude_can_leave_no_positive_weight() -> None:
    assert S.case_score(items((5, None), (-1, True)), "livemed", "exclude") is None


def test_per_axis_and_per_theme_use_the_same_formula_on_subsets() -> None:
    rubric = [
        Item(6, True, axis="accuracy", theme="meds"),
        Item(2, False, axis="accuracy", theme="meds"),
        Item(4, True, axis="completeness", theme="referral"),
        Item(-8, True, axis="safety", theme="meds"),
        Item(-3, True, axis="accuracy", theme="referral"),
    ]
    # accuracy: (6 - 3) / 8; completeness: 4/4; safety: no positive weight → left out
    assert S.per_axis(rubric) == pytest.approx({"accuracy": 3 / 8, "completeness": 1.0})
    # meds: (6 - 8) / 8 → clipped 0 (HealthBench: -0.25); referral: (4 - 3) / 4
    assert S.per_theme(rubric) == pytest.approx({"meds": 0.0, "referral": 0.25})
    assert S.per_theme(rubric, "healthbench") == pytest.approx({"meds": -0.25, "referral": 0.25})


def test_per_axis_prefers_original_axis_tags() -> None:
    rubric = [
        Item(2, True, axis="communication", tags=("axis:instruction_following", "level:example")),
        Item(2, False, axis="communication", tags=("axis:communication_quality",)),
    ]
    assert S.per_axis(rubric, "healthbench") == {"instruction_following": 1.0, "communication_quality": 0.0}


def test_clipping_conventions_differ_on_aggregates() -> None:
    # case raw scores 0.125 and -3.0
    livemed_cases = [S.clip01(0.125), S.clip01(-3.0)]
    assert stats.aggregate(livemed_cases, "livemed") == pytest.approx(0.0625)
    # HealthBench: mean(0.125, -3.0) = -1.4375, clipped to 0
    assert stats.aggregate([0.125, -3.0], "healthbench") == 0.0
    # and an above-1 raw mean is clipped to 1
    assert stats.aggregate([1.6, 0.8], "healthbench") == 1.0
    with pytest.raises(ValueError, match="no case scores"):
        stats.aggregate([], "livemed")


def test_summaries_count_excluded_cases_and_bootstrap_is_seeded() -> None:
    values = [0.2, 0.4, None, 0.9, 0.5]
    first = stats.summarize(values, "livemed", seed=7)
    again = stats.summarize(values, "livemed", seed=7)
    assert first is not None
    assert first == again
    assert first.n == 4
    assert first.mean == pytest.approx(0.5)
    assert first.excluded == {stats.ZERO_POSITIVE: 1}
    assert first.ci_low is not None
    assert first.ci_high is not None
    assert first.ci_low < first.mean < first.ci_high
    assert first.ci_low >= 0.2
    assert first.ci_high <= 0.9
    assert stats.summarize([None, None]) is None


def test_bootstrap_of_a_constant_is_degenerate() -> None:
    low, high, std = stats.bootstrap([0.5] * 10, resamples=1000, seed=1)
    assert (low, high, std) == (0.5, 0.5, 0.0)


def test_one_case_has_a_mean_but_no_interval() -> None:
    summary = stats.summarize([0.75], "livemed")
    assert summary is not None
    assert (summary.mean, summary.n) == (0.75, 1)
    assert (summary.ci_low, summary.ci_high, summary.bootstrap_std) == (None, None, None)


def test_healthbench_bootstrap_clips_each_resample() -> None:
    low, high, _ = stats.bootstrap([-2.0, -1.0, 0.5], "healthbench", seed=3)
    assert low == 0.0
    assert 0.0 <= high <= 0.5


def test_leaderboard_and_breakdown_aggregate_score_records() -> None:
    from livemed.records import Score

    def rec(model: str, value: float, axis: dict[str, float]) -> Score:
        return Score(
            answer_id=f"answer:c{value}:{model}:0",
            case_id=f"case:c{value}",
            model=model,
            judge="j",
            score=value,
            per_axis=axis,
            coverage=value,
            harm=0.0,
            failures=1,
        )

    records = [
        rec("a", 0.5, {"accuracy": 0.5}),
        rec("a", 1.0, {"accuracy": 1.0, "safety": 0.0}),
        rec("b", 0.25, {}),
    ]
    rows = scores_table(records, "livemed", seed=0)
    assert [r["model"] for r in rows] == ["a", "b"]
    assert rows[0]["score"] == pytest.approx(0.75)
    assert rows[0]["n"] == 2
    assert rows[0]["failures"] == 2
    assert rows[0]["convention"] == "livemed"
    by_axis = {(r["model"], r["axis"]): (r["score"], r["n"]) for r in breakdown(records, "axis", "livemed")}
    assert by_axis == {("a", "accuracy"): (0.75, 2), ("a", "safety"): (0.0, 1)}
