"""One spelling per theme: "emergency referral" and "emergency_referrals" are the same theme."""

from __future__ import annotations

import pytest

from livemed.analysis.leaderboard import breakdown
from livemed.records import Criterion, Rubric, Score
from livemed.records.grading import canonical_theme


@pytest.mark.parametrize(
    ("raw", "canonical"),
    [
        ("emergency_referrals", "emergency referral"),
        ("Emergency  Referral", "emergency referral"),
        ("medication safety", "medication safety"),
        ("diagnosis", "diagnosis"),
        ("tests and follow-up", "tests and follow-up"),
        ("red_flags", "red flag"),
    ],
)
def test_canonical_theme(raw: str, canonical: str) -> None:
    assert canonical_theme(raw) == canonical


def test_criteria_and_rubrics_keep_one_spelling() -> None:
    first = Criterion(
        text="Refers to A&E.", polarity="positive", axis="safety", weight=8, theme="emergency_referrals"
    )
    second = first.model_copy(update={"text": "Calls 999."})
    assert first.theme == "emergency referral"
    rubric = Rubric(
        case_id="c1", criteria=[first, second], themes=["emergency referral", "Emergency_Referrals"]
    )
    assert rubric.themes == ["emergency referral"]


def test_per_theme_tables_merge_the_old_spellings() -> None:
    def score(answer: str, themes: dict[str, float]) -> Score:
        return Score(
            answer_id=answer,
            case_id=answer,
            model="m",
            judge="j",
            score=0.5,
            per_theme=themes,
            coverage=1.0,
            harm=0.0,
        )

    rows = breakdown(
        [score("a1", {"emergency_referrals": 1.0}), score("a2", {"emergency referral": 0.0})],
        "theme",
        "livemed",
    )
    assert [(r["theme"], r["n"]) for r in rows] == [("emergency referral", 2)]
