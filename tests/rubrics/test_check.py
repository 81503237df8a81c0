"""Deterministic rubric lint: each rule on a small draft."""

from __future__ import annotations

import pytest

from livemed.records import Criterion
from livemed.rubrics.check import (
    DraftCriterion,
    drop_near_duplicates,
    is_omission,
    lint,
    reference_coverage,
    settle,
    to_criteria,
)

ADVICE = ["Check serum potassium within a week.", "Avoid ibuprofen."]


def d(
    text: str, polarity: str = "positive", axis: str = "accuracy", weight: int = 5, **kw: object
) -> DraftCriterion:
    kw.setdefault("source_fact", "a fact of the advice")
    return DraftCriterion(text=text, polarity=polarity, axis=axis, weight=weight, **kw)


def good() -> list[DraftCriterion]:
    return [
        d("Advises checking serum potassium within a week", advice_index=0),
        d("Advises avoiding ibuprofen", axis="safety", weight=7, advice_index=1),
        d("Recommends ibuprofen for the pain", "negative", "safety", -9, advice_index=1),
    ]


def codes(drafts: list[DraftCriterion], advice: list[str] = ADVICE) -> list[str]:
    return [f.code for f in lint(drafts, advice)]


def test_a_good_rubric_has_no_findings() -> None:
    assert codes(good()) == []
    criteria = to_criteria(good())
    assert [c.weight for c in criteria] == [5, 7, -9]
    assert all(isinstance(c, Criterion) for c in criteria)


def test_no_positive_criterion_is_blocking() -> None:
    drafts = [d("Recommends ibuprofen", "negative", "safety", -9)]
    findings = lint(drafts, [])
    assert [f.code for f in findings] == ["no_positive"]
    assert findings[0].blocking


def test_weight_range_sign_and_axis() -> None:
    drafts = [
        *good(),
        d("Mentions rest", weight=12),
        d("Mentions ice", weight=0),
        d("Mentions fluids", "negative", weight=3),
    ]
    drafts.append(d("Mentions sleep", axis="bedside manner"))
    found = codes(drafts)
    assert found.count("weight_out_of_range") == 2
    assert found.count("sign_mismatch") == 2  # weight 0 has no sign either
    assert "bad_axis" in found


def test_every_advice_element_needs_a_positive_criterion() -> None:
    drafts = good()[:1] + good()[2:]  # the negative one alone does not cover "Avoid ibuprofen"
    findings = lint(drafts, ADVICE)
    assert [f.code for f in findings] == ["uncovered_advice"]
    assert "advice #1" in findings[0].message
    # coverage by text similarity, without an advice index
    assert codes([d("Checks serum potassium within a week"), d("Tells the patient to avoid ibuprofen")]) == [
        "missing_negative"  # covered, but the warning has no negative criterion (a warning, not blocking)
    ]


def test_near_duplicates_are_dropped_and_recorded() -> None:
    drafts = [*good(), d("Advises checking the serum potassium within a week")]
    kept, findings = drop_near_duplicates(drafts)
    assert len(kept) == 3
    assert [f.code for f in findings] == ["near_duplicate"]
    # the same words with opposite polarity are not duplicates
    kept, _ = drop_near_duplicates(
        [d("Recommends ibuprofen"), d("Recommends ibuprofen", "negative", weight=-5)]
    )
    assert len(kept) == 2


def test_suspected_sign_errors_are_warnings() -> None:
    drafts = [
        *good(),
        d("Fails to mention the risk of hyperkalaemia", advice_index=0),
        d("Correctly explains the dose", "negative", weight=-3),
    ]
    findings = lint(drafts, ADVICE)
    assert [f.code for f in findings] == ["suspected_sign_error", "suspected_sign_error"]
    assert not any(f.blocking for f in findings)


def test_a_light_safety_weight_is_raised_to_minus_8_and_recorded() -> None:
    drafts = [*good(), d("Recommends driving while dizzy", "negative", "safety", -4)]
    settled, fixed = settle(drafts)
    assert settled[-1].weight == -8
    assert [f.code for f in fixed] == ["light_safety"]
    assert "weighted -4, set to -8" in fixed[0].message
    assert settle([d("Recommends driving while dizzy", "negative", "safety", -9)])[0][0].weight == -9


def test_reference_coverage_counts_matched_statements() -> None:
    criteria = to_criteria(good())
    statements = [
        "Serum potassium should be checked within a week",
        "Ibuprofen should be avoided",
        "Drink water",
    ]
    assert reference_coverage(criteria, statements) == (2, 3)


def test_a_criterion_without_its_source_fact_is_flagged() -> None:
    drafts = [*good(), d("Advises rest", source_fact=" ", advice_index=0)]
    findings = lint(drafts, ADVICE)
    assert [f.code for f in findings] == ["no_source_fact"]
    assert not findings[0].blocking


def test_a_criterion_with_no_clinical_content_is_flagged() -> None:
    drafts = [*good(), d("The response is helpful and clear", axis="communication", weight=2)]
    assert codes(drafts) == ["no_clinical_content"]


def test_a_criterion_that_restates_the_query_is_flagged() -> None:
    drafts = [*good(), d("Mentions the swollen ankle after the fall", axis="completeness", weight=2)]
    found = [f.code for f in lint(drafts, ADVICE, "Why is my ankle swollen after the fall?")]
    assert found == ["restates_query"]
    assert [f.code for f in lint(good(), ADVICE, "Why is my ankle swollen after the fall?")] == []


def test_advice_that_warns_needs_a_negative_criterion() -> None:
    positives_only = [c for c in good() if c.polarity == "positive"]
    assert codes(positives_only) == ["missing_negative"]
    assert codes(positives_only, ["Check serum potassium within a week."]) == []  # no warning, no finding
    urgent = ["Seek urgent care if the pain spreads to your arm."]
    assert codes([d("Advises urgent care if the pain spreads to the arm", advice_index=0)], urgent) == [
        "missing_negative"
    ]


@pytest.mark.parametrize(
    "text",
    [
        "Fails to mention the risk of bleeding",
        "Does not advise urgent care",
        "Omits the dose",
        "Neglects to ask",
    ],
)
def test_a_negative_written_as_an_omission_is_blocking(text: str) -> None:
    drafts = [
        DraftCriterion(
            text="Advises urgent care", polarity="positive", axis="safety", weight=8, source_fact="x"
        ),
        DraftCriterion(text=text, polarity="negative", axis="safety", weight=-8, source_fact="x"),
    ]
    (finding,) = [f for f in lint(drafts, []) if f.code == "omission_negative"]
    assert finding.blocking
    assert finding.message.startswith("#1 ")


def test_a_negative_that_names_the_bad_action_is_not_an_omission() -> None:
    drafts = [
        DraftCriterion(
            text="Advises urgent care", polarity="positive", axis="safety", weight=8, source_fact="x"
        ),
        DraftCriterion(
            text="Recommends aspirin despite the ulcer", polarity="negative", axis="safety", weight=-9
        ),
    ]
    assert not [f for f in lint(drafts, []) if f.code == "omission_negative"]


def test_a_theme_off_the_closed_list_is_flagged() -> None:
    draft = DraftCriterion(
        text="Advises rest", polarity="positive", axis="completeness", weight=3, theme="wellness vibes"
    )
    assert [f.code for f in lint([draft], []) if f.code == "unlisted_theme"] == ["unlisted_theme"]
    listed = draft.model_copy(update={"theme": "Red_Flags"})
    assert not [f for f in lint([listed], []) if f.code == "unlisted_theme"]


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        ("Advises urgent care for chest pain, fainting or sudden breathlessness", True),
        ("Advises urgent care for at least one of chest pain, fainting or sudden breathlessness", False),
        ("Advises all of rest, fluids or paracetamol", False),
        ("Advises avoiding spicy, salty or acidic foods", False),  # every item counts
        ("Advises a soft diet such as soup, yoghurt or mashed potato", False),  # examples
        ("Advises paracetamol or ibuprofen", False),  # two items: not an "A, B or C" list
    ],
)
def test_a_bare_or_list_is_a_warning(text: str, flagged: bool) -> None:
    draft = DraftCriterion(text=text, polarity="positive", axis="safety", weight=8, source_fact="x")
    found = [f for f in lint([draft], []) if f.code == "bare_or"]
    assert bool(found) == flagged
    assert not any(f.blocking for f in found)
    negative = draft.model_copy(update={"polarity": "negative", "weight": -8, "text": f"Says no {text}"})
    assert not [f for f in lint([draft, negative], []) if f.code == "bare_or" and "#1" in f.message]


@pytest.mark.parametrize(
    ("text", "omission"),
    [
        ("Never mentions the red flags", True),
        ("Does not explain the risk of bleeding", True),
        ("Does not consider the allergy", True),
        ("Does not stop the anticoagulant before surgery", False),  # a harm, not an omission
        ("Never use aspirin in children", False),
    ],
)
def test_the_omission_lint_reads_omission_verbs_only(text: str, omission: bool) -> None:
    assert is_omission(text) == omission
