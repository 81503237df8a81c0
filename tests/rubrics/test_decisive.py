"""Decisive values: found in advice, required by positive criteria, paired with a wrong-value negative,
and a wrong dose graded as wrong."""

from __future__ import annotations

import json
import re

import pytest

from livemed.common.prompts import parse_blocks
from livemed.domains import load_pack, medical
from livemed.grade.grader import Target, grade_criterion
from livemed.models import LLM, Engine, Message, Settings
from livemed.models.fake import FakeModel
from livemed.records import Criterion, Grade, Narrative
from livemed.rubrics.check import DraftCriterion, band_lines, lint, omission_negatives, settle, to_criteria
from livemed.rubrics.decisive import decisive, decisive_share, decisive_values
from livemed.rubrics.prompts import weights_prompt
from livemed.rubrics.rules import RuleWriter
from livemed.score import formula as S
from tests.builders import make_answer, make_case, make_rubric

PARACETAMOL = "Take paracetamol 1 g up to four times a day, no more than 4 g a day."


def test_decisive_values_in_medical_advice() -> None:
    found = [(v.kind, v.amount, v.bound) for v in decisive_values(PARACETAMOL, medical())]
    assert found == [
        ("dose", "1 g", "exact"),
        ("interval", "four times a day", "upper"),
        ("dose", "4 g a day", "upper"),
    ]
    (prednisolone, onset) = decisive("Prednisolone for ten days, started within 72 hours of onset.")
    assert (prednisolone.kind, prednisolone.key, onset.bound) == ("time", "10 day", "upper")
    assert [
        v.amount for v in decisive("Seek urgent care for a reading of 180/120 or a fever above 38.5 °C")
    ] == [
        "180/120",
        "38.5 °C",
    ]
    # the advice's own example is an example, not a requirement; "at least one of" is no value
    (ors,) = decisive_values("Give oral rehydration solution, for example 5 ml every few minutes.")
    assert ors.example
    assert decisive("Name at least one of the red flags: fever, rash or vomiting.") == []


def test_decisive_values_in_legal_advice() -> None:
    legal = load_pack("legal")
    found = decisive("In Scotland, file the claim within six months of the dismissal.", legal)
    assert [(v.kind, v.amount, v.key) for v in found] == [
        ("jurisdiction", "Scotland", "scotland"),
        ("time limit", "six months", "6 month"),
    ]
    assert found[1].bound == "upper"


def test_the_offline_writer_requires_the_dose_and_pairs_it_with_a_harmful_wrong_value() -> None:
    case = make_case(advice=[PARACETAMOL])
    _, drafts, _ = RuleWriter().draft(case)
    (positive,) = [d for d in drafts if d.polarity == "positive"]
    assert "no more than 4 g a day" in positive.text
    # each bounded value is paired ("up to four times a day", "no more than 4 g a day"), the exact 1 g not
    interval, wrong = [d for d in drafts if d.polarity == "negative" and d.text.startswith("States")]
    assert interval.text.startswith("States an interval of more than four times a day, not the four")
    assert (interval.axis, interval.weight) == ("accuracy", -6)  # only a dose past its maximum harms
    assert wrong.text.startswith(
        "States a dose of more than 4 g a day, not the 4 g a day of the correct advice"
    )
    assert (wrong.axis, wrong.weight, wrong.advice_index) == (
        "safety",
        -9,
        0,
    )  # a dose past its maximum harms
    assert not [f for f in lint(drafts, case.advice, pack=medical()) if f.code.startswith("decisive")]
    assert decisive_share(to_criteria(drafts)) == (1, 1)


def test_a_wrong_value_that_does_not_harm_is_on_accuracy() -> None:
    case = make_case(advice=["We recommend oral doxycycline for at least 10 days."])
    _, drafts, _ = RuleWriter().draft(case)
    (wrong,) = [d for d in drafts if d.text.startswith("States")]
    assert wrong.text.startswith("States a threshold of less than 10 days, not the 10 days of the correct")
    assert (wrong.axis, wrong.weight) == ("accuracy", -6)


def test_a_course_without_a_bound_is_required_but_not_paired() -> None:
    # guidelines accept 10 to 21 days of doxycycline for Lyme disease: "other than 21 days" would punish
    # a valid 14-day answer; the positive criterion still requires the 21 days of the gold advice
    source = "We recommend oral doxycycline for 21 days."
    _, drafts, _ = RuleWriter().draft(make_case(advice=[source]))
    assert [d.text for d in drafts if d.advice_index == 0] == ["Recommends oral doxycycline for 21 days."]
    assert not [f for f in lint(drafts, [source]) if f.code == "unpaired_decisive"]
    assert decisive_share(to_criteria(drafts)) == (1, 1)


@pytest.mark.parametrize(
    ("advice", "negative"),
    [
        (
            "See a doctor the same day if he has a rash that does not fade, or the fever lasts more than "
            "five days.",
            "States waiting longer than five days, not the five days of the correct advice",
        ),
        (
            "Return urgently if the lips turn blue or there is no wet nappy for 12 hours.",
            "States waiting longer than 12 hours, not the 12 hours of the correct advice",
        ),
        (
            "See your doctor if the cough is no better in two weeks.",
            "States waiting longer than two weeks, not the two weeks",
        ),
        (
            "Check your blood sugar before you drive, and do not drive if it is below 5 mmol/L.",
            "States a threshold of less than 5 mmol/L, not the 5 mmol/L",
        ),
    ],
)
def test_a_safety_net_value_is_wrong_only_on_its_less_cautious_side(advice: str, negative: str) -> None:
    _, drafts, _ = RuleWriter().draft(make_case(advice=[advice]))
    wrong = [d.text for d in drafts if d.text.startswith("States")]
    assert len(wrong) == 1
    assert wrong[0].startswith(negative)
    assert "other than" not in wrong[0]


def test_every_bounded_value_of_a_criterion_is_paired() -> None:
    source = "We recommend oral prednisolone for ten days, started within 72 hours of symptom onset."
    drafts = RuleWriter().draft(make_case(advice=[source]))[1]
    wrong = [d.text for d in drafts if d.text.startswith("States")]
    assert [w.split(",")[0] for w in wrong] == ["States a time of more than 72 hours"]  # ten days: no bound
    two = "Reduce salt to less than 6 g a day and keep alcohol within 14 units a week."
    wrong = [d.text for d in RuleWriter().draft(make_case(advice=[two]))[1] if d.text.startswith("States")]
    assert [w.split(",")[0] for w in wrong] == [
        "States a dose of more than 6 g a day",
        "States a dose of more than 14 units a week",
    ]
    positive = DraftCriterion(
        text="Advises salt under 6 g a day and alcohol within 14 units a week",
        polarity="positive",
        axis="accuracy",
        weight=6,
        source_fact=two,
        advice_index=0,
    )
    only_salt = DraftCriterion(
        text="States a dose of more than 6 g a day of salt",
        polarity="negative",
        axis="accuracy",
        weight=-6,
        source_fact=two,
        advice_index=0,
    )
    (unpaired,) = [f for f in lint([positive, only_salt], [two]) if f.code == "unpaired_decisive"]
    assert "14 units a week" in unpaired.message


@pytest.mark.parametrize(
    ("text", "amounts"),
    [
        ("Take a five-day course of amoxicillin.", ["five-day"]),
        ("Review at three months.", ["three months"]),
        ("Call 999 if the seizure lasts longer than 5 minutes.", ["5 minutes"]),
        ("See a doctor if an ulcer lasts longer than three weeks.", ["three weeks"]),
        ("See your doctor if it is no better in two weeks.", ["two weeks"]),
        ("Take levothyroxine 30 to 60 minutes before breakfast.", ["30 to 60 minutes"]),
        ("Recheck the blood count six to eight weeks after starting iron.", ["six to eight weeks"]),
        ("Aim for a clinic blood pressure below 140/90.", ["140/90"]),
    ],
)
def test_decisive_values_the_patterns_used_to_miss(text: str, amounts: list[str]) -> None:
    assert [v.amount for v in decisive(text)] == amounts


def test_an_example_ends_where_the_value_it_is_given_for_begins() -> None:
    text = "Anticoagulation with a DOAC such as apixaban or rivaroxaban for at least three months."
    (months,) = decisive_values(text)
    assert (months.amount, months.bound, months.example) == ("three months", "lower", False)
    (ors,) = decisive_values("Give oral rehydration solution, for example 5 ml every few minutes.")
    assert ors.example  # a value inside the example itself stays an example


def test_the_legal_writer_requires_the_period_once_and_names_the_jurisdiction() -> None:
    legal = load_pack("legal")
    advice = [
        "File your claim with the employment tribunal within three months of the dismissal.",
        "In Scotland, the landlord must lodge the deposit with an approved scheme.",
    ]
    _, drafts, _ = RuleWriter(legal).draft(make_case(advice=advice))
    negatives = [d for d in drafts if d.polarity == "negative"]
    # the limitation period's pattern hazard already names the wrong period: no second negative for it
    assert [(d.advice_index, d.weight) for d in negatives] == [(0, -10), (1, -6)]
    assert "beyond three months" in negatives[0].text
    assert negatives[1].text.startswith("States a jurisdiction other than Scotland")
    assert decisive_share(to_criteria(drafts), legal) == (2, 2)


def test_a_decisive_value_as_a_such_as_example_is_blocking() -> None:
    source = "Take paracetamol 1 g four times a day."
    drafts = [
        DraftCriterion(
            text="Advises paracetamol for the pain, such as 1 g four times a day",
            polarity="positive",
            axis="accuracy",
            weight=7,
            source_fact=source,
            advice_index=0,
        )
    ]
    findings = [f for f in lint(drafts, [source]) if f.code.startswith(("decisive", "unpaired"))]
    assert [f.code for f in findings] == ["decisive_as_example", "decisive_as_example"]  # exact: no pair
    assert findings[0].blocking
    bounded = [drafts[0].model_copy(update={"source_fact": f"{source} No more than 4 g a day."})]
    unpaired = [f for f in lint(bounded, [source]) if f.code == "unpaired_decisive"]
    assert unpaired
    assert not unpaired[0].blocking
    assert decisive_share(to_criteria(drafts)) == (0, 1)
    required = drafts[0].model_copy(update={"text": "Advises paracetamol 1 g four times a day"})
    assert decisive_share(to_criteria([required])) == (1, 1)


def _daily_grams(text: str) -> float:
    """The fake judge's reading of a paracetamol schedule: grams a day."""
    if m := re.search(r"(\d+) g\b.*?every (\w+) hours", text):
        hours = {"three": 3, "four": 4, "six": 6}.get(m.group(2)) or int(m.group(2))
        return int(m.group(1)) * 24 / hours
    m = re.search(r"(\d+) g\b.*?(four|three) times a day", text)
    return int(m.group(1)) * {"four": 4, "three": 3}[m.group(2)] if m else 0.0


def _judge(messages: list[Message], settings: Settings) -> str:
    """A fake judge that answers from the criterion text: a daily limit ("4 g a day") is kept or exceeded."""
    blocks = {b.name: b.text for b in parse_blocks(messages[0]["content"])}
    criterion, given = blocks["criterion"], _daily_grams(blocks["response"])
    if criterion.startswith("States an interval of more than four times a day"):
        met = given > 4  # 1 g doses: more than four a day
        return json.dumps({"explanation": f"{given:g} doses of 1 g a day", "criteria_met": met})
    limit = float(re.search(r"(\d+) g a day", criterion).group(1))  # type: ignore[union-attr]
    met = given > limit if criterion.startswith("States a dose of more than") else 0 < given <= limit
    return json.dumps({"explanation": f"{given:g} g a day against {limit:g}", "criteria_met": met})


@pytest.mark.parametrize(
    ("reply", "verdicts", "score"),
    [
        ("Take 1 g of paracetamol up to four times a day.", [True, False, False], 1.0),
        ("Take 1 g of paracetamol every three hours.", [False, True, True], 0.0),
    ],
)
async def test_a_wrong_dose_fails_the_positive_and_meets_its_negative(
    reply: str, verdicts: list[bool], score: float
) -> None:
    narrative = Narrative(demographics=["34-year-old woman"], chief_complaint=["tension headache"])
    case = make_case(advice=[PARACETAMOL], narrative=narrative, query="How much paracetamol can I take?")
    _, drafts, _ = RuleWriter().draft(case)
    settled, _ = settle(drafts)
    criteria = to_criteria(settled)
    rubric = make_rubric(case, criteria)
    target = Target(make_answer(case, reply), case, rubric)
    llm = LLM(Engine(), FakeModel("fake/judge", function=_judge))
    grades = [await grade_criterion(target, c, llm) for c in criteria]
    assert all(isinstance(g, Grade) for g in grades)
    assert [g.met for g in grades] == verdicts  # type: ignore[union-attr]
    assert S.case_score([S.Item(c.value, g.met) for c, g in zip(criteria, grades, strict=True)]) == score  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("pack_name", "text"),
    [
        ("medical", "Does not warn about the bleeding risk"),
        ("medical", "No mention of the red flags"),
        ("medical", "Does not offer a follow-up appointment"),
        ("medical", "Does not recommend a blood test"),
        ("medical", "Does not refer to a specialist"),
        ("medical", "Neglects the patient's allergy"),
        ("medical", "Misses the interaction with warfarin"),
        ("medical", "Makes no mention of driving"),
        ("medical", "Without mentioning the dose"),
        ("medical", "No safety-netting advice"),  # the medical pack's own phrase
        ("legal", "Says nothing about the limitation period"),  # the legal pack's own phrases
        ("legal", "No reference to the tribunal"),
    ],
)
def test_the_omission_lint_catches_each_phrasing(pack_name: str, text: str) -> None:
    pack = load_pack(pack_name)
    axis = pack.safety_axes[0]
    drafts = [
        DraftCriterion(text="Advises urgent care", polarity="positive", axis=axis, weight=8, source_fact="x"),
        DraftCriterion(text=text, polarity="negative", axis=axis, weight=-8, source_fact="x"),
    ]
    (finding,) = [f for f in lint(drafts, [], pack=pack) if f.code == "omission_negative"]
    assert finding.blocking
    assert omission_negatives(drafts, pack) == [text]


def test_a_pack_phrase_is_the_pack_s_own() -> None:
    medical_only = Criterion(text="No safety-netting advice", polarity="negative", axis="harm", weight=-8)
    assert omission_negatives([medical_only], load_pack("legal")) == []
    for text in (
        "Nonetheless recommends aspirin",
        "Recommends ibuprofen despite the ulcer",
        "Notes a wrong dose",
    ):
        assert omission_negatives([Criterion(text=text, polarity="negative", axis="safety", weight=-8)]) == []


@pytest.mark.parametrize("pack_name", ["medical", "legal"])
def test_the_bands_text_states_the_floor_the_code_applies(pack_name: str) -> None:
    pack = load_pack(pack_name)
    prompt = weights_prompt(make_case(), [("negative", "Recommends X")], pack=pack)
    assert band_lines(pack) in prompt
    assert "missed emergency" not in prompt  # an omission, not an action
    for axis in pack.axes:
        if not axis.safety_like:
            continue
        heaviest, lightest = axis.negative
        assert f"on the {axis.name} axis weighs {lightest} to {heaviest}" in prompt
        assert f"raised to {lightest} (and recorded)" in prompt
        light = DraftCriterion(text="Recommends X", polarity="negative", axis=axis.name, weight=lightest + 3)
        (settled,), (finding,) = settle([light], pack)
        assert settled.weight == lightest
        assert finding.code == "light_safety"
        assert f"set to {lightest}" in finding.message
