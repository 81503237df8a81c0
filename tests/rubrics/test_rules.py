"""The offline/rules writer's negatives: allergens only, and "avoid X" cut before a good clause."""

from __future__ import annotations

import pytest

from livemed.records import Narrative
from livemed.rubrics.rules import RuleWriter, allergens
from tests.grading.builders import make_case


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("penicillin", ["penicillin"]),
        ("She is allergic to penicillin and sulfa drugs.", ["penicillin", "sulfa drugs"]),
        ("Known penicillin allergy.", ["penicillin"]),
        ("Allergies: amoxicillin", ["amoxicillin"]),
        ("I have no allergies.", []),
        ("No known drug allergies", []),
        ("NKDA", []),
        ("Management: We recommend oral clarithromycin for 7 days.", []),
        ("History:", []),
    ],
)
def test_allergens_are_extracted_not_whole_sentences(entry: str, expected: list[str]) -> None:
    assert allergens(entry) == expected


def test_rule_writer_negatives() -> None:
    case = make_case(
        narrative=Narrative(
            allergies=[
                "I have no allergies.",
                "Management: We recommend oral clarithromycin.",
                "allergic to sulfa",
            ]
        ),
        advice=["Avoid bed rest; staying active helps recovery.", "Do not take aspirin, it thins the blood."],
    )
    _, drafts, _ = RuleWriter().draft(case)
    negatives = sorted(d.text for d in drafts if d.polarity == "negative")
    assert negatives == [
        "The response recommends aspirin.",
        "The response recommends bed rest.",
        "The response recommends sulfa.",
    ]
